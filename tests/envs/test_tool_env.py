"""ToolEnv: every tool failure is fed back and counted; a reply without a call is scored."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from mint_envkit import ConfigError, ToolDefinitionError, ToolEnv, first_number, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


async def nap(seconds: float) -> str:
    """Sleep asynchronously."""
    await asyncio.sleep(seconds)
    return "awake"


def block(seconds: float) -> str:
    """Sleep in a thread."""
    time.sleep(seconds)
    return "awake"


def no_hint(x) -> int:
    """No type hint on x."""
    return x


class MathEnv(ToolEnv):
    system_prompt = "Use the tools, then reply with the number."
    tools = [add, divide, nap, block]  # noqa: RUF012
    parser = first_number
    max_tool_calls = 3
    tool_timeout_s = 0.2


def call(name, arguments):
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function", "id": "c", "function": {"name": name, "arguments": args}}


async def started():
    env = MathEnv(question="What is 2 + 3?", answer="5")
    await env.initial_observation()
    return env


async def tool_turn(env, *calls, unparsed=()):
    message = {"role": "assistant", "content": "", "tool_calls": list(calls)}
    if unparsed:
        message["unparsed_tool_calls"] = list(unparsed)
    return await env.step(message)


async def test_a_right_call_then_the_answer_scores_max():
    env = await started()
    result = await tool_turn(env, call("add", {"a": 2, "b": 3}))
    assert not result.episode_done
    assert result.next_messages[-1] == {
        "role": "tool",
        "name": "add",
        "content": "5",
        "tool_call_id": "c",
    }
    final = await env.step({"role": "assistant", "content": "5"})
    assert final.episode_done and final.reward == 1.0
    assert final.metrics == {
        "correct": 1.0,
        "parsed": 1.0,
        "tool_calls": 1.0,
        "invalid_tool_calls": 0.0,
        "tool_errors": 0.0,
        "turns": 2.0,
        "max_turns_reached": 0.0,
    }


@pytest.mark.parametrize(
    ("bad", "kind", "text"),
    [
        (call("mul", {"a": 1}), "invalid_tool_calls", "unknown tool 'mul'"),
        (call("add", "{a: 1}"), "invalid_tool_calls", "not JSON"),
        (call("add", {"a": 1}), "invalid_tool_calls", "missing required argument(s) 'b'"),
        (call("add", {"a": "1", "b": 2}), "invalid_tool_calls", "must be of type integer"),
        (call("divide", {"a": 1, "b": 0}), "tool_errors", "ZeroDivisionError"),
        (call("nap", {"seconds": 5}), "tool_errors", "timed out after 0.2 s"),
        (call("block", {"seconds": 0.6}), "tool_errors", "timed out after 0.2 s"),
    ],
)
async def test_failures_are_fed_back_and_counted(bad, kind, text):
    env = await started()
    result = await tool_turn(env, bad)
    assert not result.episode_done
    assert text in result.next_messages[-1]["content"]
    assert result.next_messages[-1]["role"] == "tool"
    assert result.metrics["tool_calls"] == 1.0 and result.metrics[kind] == 1.0
    assert result.metrics["correct"] == 0.0


async def test_unreadable_calls_and_the_call_limit():
    env = await started()
    calls = [call("add", {"a": 1, "b": 1})] * 4
    result = await tool_turn(env, *calls, unparsed=[{"raw_text": "{x", "error": "not JSON"}])
    contents = [m["content"] for m in result.next_messages[-5:]]
    assert contents[:3] == ["2", "2", "2"]
    assert "allows 3 tool calls" in contents[3]
    assert "could not be read: not JSON" in contents[4]
    assert result.metrics["tool_calls"] == 5.0
    assert result.metrics["invalid_tool_calls"] == 2.0


def test_tool_specs_and_class_definition_errors():
    env = MathEnv(question="q", answer="1")
    assert [s["function"]["name"] for s in env.tool_specs()] == ["add", "divide", "nap", "block"]
    with pytest.raises(ToolDefinitionError, match="'x' has no type hint"):

        class Bad(ToolEnv):
            tools = [no_hint]  # noqa: RUF012

    with pytest.raises(ToolDefinitionError, match="two tools named 'add'"):

        class Twice(ToolEnv):
            tools = [add, add]  # noqa: RUF012

    with pytest.raises(ConfigError, match="tool_timeout_s"):

        class Slow(ToolEnv):
            tool_timeout_s = 0
