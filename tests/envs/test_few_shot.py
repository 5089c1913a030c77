"""``few_shot`` on every env class, tool-call turns and tool results included."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from mint_envkit import Feedback, MultiTurnEnv, SingleTurnEnv, ToolEnv, get_renderer, tool


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return key.upper()


EXAMPLES: list[dict] = [
    {"role": "user", "content": "Look up abc."},
    {  # OpenAI style: content None beside the calls
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "type": "function",
                "id": "call_0",
                "function": {"name": "lookup", "arguments": '{"key": "abc"}'},
            }
        ],
    },
    {"role": "tool", "name": "lookup", "tool_call_id": "call_0", "content": "ABC"},
    {"role": "assistant", "content": "ABC"},
]


class Single(SingleTurnEnv):
    system_prompt = "Answer."
    few_shot: ClassVar[list] = EXAMPLES


class Multi(MultiTurnEnv):
    system_prompt = "Answer."
    few_shot: ClassVar[list] = EXAMPLES
    optional_fields: ClassVar[dict] = {"answer": None}

    async def respond(self, message):
        return Feedback(reward=1.0, done=True)


class Tools(ToolEnv):
    system_prompt = "Answer."
    few_shot: ClassVar[list] = EXAMPLES
    tools: ClassVar[list] = [lookup]


@pytest.mark.parametrize("env_class", [Single, Multi, Tools])
def test_few_shot_tool_turns_come_between_the_system_prompt_and_the_question(
    env_class, chatml_tokenizer
):
    env = env_class(question="Look up xyz.", answer="XYZ")
    messages = asyncio.run(env.initial_observation())
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "lookup"
    specs = env.tool_specs() if isinstance(env, ToolEnv) else None
    for renderer in (
        get_renderer("chat_template", chatml_tokenizer),
        get_renderer("qwen3", "mint-envkit/tiny-qwen3"),
    ):
        text = renderer.tokenizer.decode(renderer.render_tokens(messages, specs))
        assert '"name": "lookup"' in text and '"key": "abc"' in text  # the example's call
        assert "ABC" in text and text.index("Look up abc.") < text.index("Look up xyz.")


def test_few_shot_examples_are_copied_for_every_env():
    first = Tools(question="q", answer="a")
    asyncio.run(first.initial_observation())
    first.conversation[1]["content"] = "changed"
    assert Tools.few_shot[0]["content"] == "Look up abc."
