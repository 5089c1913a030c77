"""A chat template with no tools slot (SmolLM2's ChatML): the renderer writes the tools in."""

import asyncio
import json
from typing import ClassVar

import pytest

from mint_envkit import RendererError, ToolEnv, first_number, get_renderer, tool
from mint_envkit.cli import main


@tool
def convert(value: float, unit: str) -> float:
    """Convert a length to metres.

    Args:
        value: the length.
        unit: its unit, "km" or "cm".
    """
    return value * {"km": 1000.0, "cm": 0.01}[unit]


class ConvertEnv(ToolEnv):
    system_prompt = "Use the convert tool, then reply with only the number."
    tools: ClassVar[list] = [convert]
    parser = first_number


class FewShotConvertEnv(ConvertEnv):
    few_shot: ClassVar[list] = [
        {"role": "user", "content": "How many metres is 2 km?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_0",
                    "function": {"name": "convert", "arguments": '{"value": 2, "unit": "km"}'},
                }
            ],
        },
        {"role": "tool", "name": "convert", "tool_call_id": "call_0", "content": "2000.0"},
        {"role": "assistant", "content": "2000"},
    ]


def _prompt(renderer, env, messages=None):
    messages = messages or asyncio.run(env.initial_observation())
    return renderer.tokenizer.decode(renderer.render_tokens(messages, env.tool_specs()))


def test_chatml_prompt_lists_each_tool_and_its_schema(chatml_tokenizer):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    assert renderer.tools_in_template is False
    env = ConvertEnv(question="How many metres is 3 km?", answer="3000")
    text = _prompt(renderer, env)
    assert "# Tools" in text and "<tools>" in text
    assert json.dumps(convert.schema, ensure_ascii=False) in text
    assert text.index("Use the convert tool") < text.index("# Tools")
    assert "<tool_call>" in text


def test_reply_in_the_documented_format_is_read_back(chatml_tokenizer):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    reply = (
        '<tool_call>\n{"name": "convert", "arguments": {"value": 3, "unit": "km"}}\n</tool_call>'
    )
    tokens = chatml_tokenizer.encode(reply, add_special_tokens=False)
    message, ok = renderer.parse_response([*tokens, *renderer.get_stop_sequences()[:1]])
    assert ok
    assert message["tool_calls"][0]["function"]["name"] == "convert"
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {
        "value": 3,
        "unit": "km",
    }


def test_tool_env_few_shot_examples_are_rendered(chatml_tokenizer):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    env = FewShotConvertEnv(question="How many metres is 3 km?", answer="3000")
    messages = asyncio.run(env.initial_observation())
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    text = _prompt(renderer, env, messages)
    assert "How many metres is 2 km?" in text
    assert '{"name": "convert", "arguments": {"value": 2, "unit": "km"}}' in text
    assert "2000.0" in text and "How many metres is 3 km?" in text


def test_qwen3_template_keeps_its_own_tools_slot():
    renderer = get_renderer("qwen3", "mint-envkit/tiny-qwen3")
    assert renderer.tools_in_template is True
    env = FewShotConvertEnv(question="How many metres is 3 km?", answer="3000")
    text = _prompt(renderer, env)
    assert text.count("# Tools") == 1 and '"name": "convert"' in text


NO_SYSTEM_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def test_check_fails_when_the_tools_cannot_be_shown(chatml_tokenizer, tmp_path, capsys):
    import copy

    tok = copy.deepcopy(chatml_tokenizer)
    tok.chat_template = NO_SYSTEM_TEMPLATE
    tok.save_pretrained(tmp_path / "tok")
    env_file = tmp_path / "convert_env.py"
    env_file.write_text("from tests.rendering.test_tools_without_slot import ConvertEnv\n")
    code = main(
        [
            "check",
            f"{env_file}:ConvertEnv",
            "--problem",
            '{"question": "How many metres is 3 km?", "answer": "3000"}',
            "--renderer",
            "chat_template",
            "--model",
            str(tmp_path / "tok"),
        ]
    )
    captured = capsys.readouterr()
    out = captured.out
    assert code == 1
    # the prompt as rendered is shown, then why it fails, naming the env and the renderer
    assert "rendered prompt:\n  <|im_start|>user\n  How many metres is 3 km?" in out
    assert (
        "FAILED: the tools ['convert'] of env ConvertEnv are not visible in the prompt "
        "rendered by renderer 'chat_template'"
    ) in out


class NamedConvertEnv(ConvertEnv):
    system_prompt = None  # the question names the tool; the schema is what must show


def test_a_tool_named_in_the_question_but_dropped_is_still_hidden(chatml_tokenizer):
    import copy

    tok = copy.deepcopy(chatml_tokenizer)
    tok.chat_template = NO_SYSTEM_TEMPLATE
    renderer = get_renderer("chat_template", tok)
    env = NamedConvertEnv(question="Use convert: how many metres is 3 km?", answer="3000")
    messages = asyncio.run(env.initial_observation())
    assert "convert" in renderer.prompt_text(messages, env.tool_specs())  # the question's word
    assert renderer.hidden_tools(messages, env.tool_specs()) == ["convert"]
    with pytest.raises(RendererError, match=r"the tools \['convert'\] are not in the rendered"):
        renderer.render_tokens(messages, env.tool_specs())


def test_hidden_tools_is_empty_when_the_renderer_writes_them_in(chatml_tokenizer):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    env = ConvertEnv(question="How many metres is 3 km?", answer="3000")
    messages = asyncio.run(env.initial_observation())
    assert renderer.hidden_tools(messages, env.tool_specs()) == []
    text = renderer.prompt_text(messages, env.tool_specs())
    assert text == renderer.tokenizer.decode(renderer.render_tokens(messages, env.tool_specs()))


def test_the_written_format_round_trips_through_the_parser(chatml_tokenizer):
    """What the renderer writes (the block's instruction, an example's calls) parses back."""
    from mint_envkit.rendering.tool_calls import (
        format_tool_calls,
        parse_hermes_tool_calls,
        tools_system_block,
    )

    calls = [
        {"type": "function", "id": "call_0", "function": {"name": "convert", "arguments": a}}
        for a in ('{"value": 2, "unit": "km"}', '{"value": 0.5, "unit": "cm"}', "{}")
    ]
    text, parsed, bad = parse_hermes_tool_calls("Let me convert.\n" + format_tool_calls(calls))
    assert (text, bad) == ("Let me convert.", [])
    assert [json.loads(c["function"]["arguments"]) for c in parsed] == [
        json.loads(c["function"]["arguments"]) for c in calls
    ]
    assert [c["function"]["name"] for c in parsed] == ["convert"] * 3
    # the block's own template line, filled in, is a call the parser reads
    block = tools_system_block([convert.schema])
    shape = block[block.rindex("<tool_call>") :]
    filled = shape.replace("<function-name>", '"convert"').replace(
        "<args-json-object>", '{"value": 3, "unit": "km"}'
    )
    assert parse_hermes_tool_calls(filled)[1][0]["function"]["name"] == "convert"
    # a few-shot call rendered into a ChatML prompt is read back from the prompt text
    renderer = get_renderer("chat_template", chatml_tokenizer)
    env = FewShotConvertEnv(question="How many metres is 3 km?", answer="3000")
    prompt = _prompt(renderer, env)
    example = prompt[prompt.index("<|im_start|>assistant") :].split("<|im_end|>")[0]
    _, read, _ = renderer.parse_tool_calls(example.removeprefix("<|im_start|>assistant\n"))
    assert read[0]["function"] == {"name": "convert", "arguments": '{"value": 2, "unit": "km"}'}


def test_multi_turn_env_few_shot_examples_come_before_the_question():
    from mint_envkit import Feedback, MultiTurnEnv

    class EchoEnv(MultiTurnEnv):
        system_prompt = "Count down."
        few_shot: ClassVar[list] = [
            {"role": "user", "content": "Count down from 1."},
            {"role": "assistant", "content": "1, 0"},
        ]

        async def respond(self, message):
            return Feedback(reward=1.0, done=True)

    messages = asyncio.run(EchoEnv(question="Count down from 2.").initial_observation())
    assert [m["content"] for m in messages] == [
        "Count down.",
        "Count down from 1.",
        "1, 0",
        "Count down from 2.",
    ]


def test_llama3_template_gets_tool_calls_of_examples_written_as_text(llama3_tokenizer):
    renderer = get_renderer("chat_template", llama3_tokenizer)
    env = FewShotConvertEnv(question="How many metres is 3 km?", answer="3000")
    text = _prompt(renderer, env)
    assert "# Tools" in text and '"name": "convert"' in text
    assert '{"name": "convert", "arguments": {"value": 2, "unit": "km"}}' in text
