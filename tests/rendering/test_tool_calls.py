"""Tool calls in the renderer: Qwen3 <tool_call> blocks out of replies, tools into the prompt."""

from __future__ import annotations

import pytest

from mint_envkit import get_renderer, tool
from mint_envkit.rendering import TINY_MODEL_NAME, get_tokenizer
from mint_envkit.rendering.tool_calls import parse_hermes_tool_calls


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@pytest.fixture(scope="module")
def renderer():
    return get_renderer("qwen3", get_tokenizer(TINY_MODEL_NAME))


def test_several_calls_and_text():
    text, calls, bad = parse_hermes_tool_calls(
        'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>'
    )
    assert text == "Adding."
    assert bad == []
    assert [c["function"] for c in calls] == [
        {"name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"name": "add", "arguments": '{"a": 3, "b": 4}'},
    ]
    assert [c["id"] for c in calls] == ["call_0", "call_1"]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("<tool_call>{name: add}</tool_call>", "not JSON"),
        ('<tool_call>["add"]</tool_call>', "JSON object"),
        ('<tool_call>{"name": "add", "arguments": {"a": 1}', "never closed"),
    ],
)
def test_unreadable_calls_are_kept_with_their_error(reply, error):
    text, calls, bad = parse_hermes_tool_calls(reply)
    assert calls == [] and text == ""
    assert len(bad) == 1 and error in bad[0]["error"]


def test_string_arguments_are_kept_as_text():
    _, calls, _ = parse_hermes_tool_calls(
        '<tool_call>{"name": "add", "arguments": "{x"}</tool_call>'
    )
    assert calls[0]["function"]["arguments"] == "{x"


def test_parse_response_moves_calls_out_of_the_content(renderer):
    tok = renderer.tokenizer
    reply = '<think>use add</think>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    message, ok = renderer.parse_response(
        [*tok.encode(reply, add_special_tokens=False), *renderer.get_stop_sequences()]
    )
    assert ok
    assert message["content"] == "" and message["thinking"] == "use add"
    assert message["tool_calls"][0]["function"]["name"] == "add"
    assert "unparsed_tool_calls" not in message
    plain, _ = renderer.parse_response(tok.encode("5", add_special_tokens=False))
    assert "tool_calls" not in plain


def test_tools_are_listed_in_the_system_prompt_the_qwen3_way(renderer):
    messages = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "1+2?"}]
    text = renderer.tokenizer.decode(renderer.render_tokens(messages, [add.schema]))
    assert text.startswith("<|im_start|>system\nBe exact.\n\n# Tools\n")
    assert '<tools>\n{"type": "function", "function": {"name": "add"' in text
    assert text.count("<|im_start|>system") == 1
    assert renderer.render_tokens(messages) != renderer.render_tokens(messages, [add.schema])
