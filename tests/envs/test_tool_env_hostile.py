"""ToolEnv under hostile input: hung tools, deep nesting, huge values, odd shapes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from mint_envkit import ConfigError, ToolEnv, first_number, tool
from mint_envkit.rendering.tool_calls import parse_hermes_tool_calls

GATE = threading.Event()
DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture(autouse=True)
def release_hung_tools():
    GATE.clear()
    yield
    GATE.set()


@tool
def hang() -> str:
    """Wait until the test ends."""
    GATE.wait(60)
    return "late"


@tool
def quick(x: int = 0) -> str:
    """Answer at once."""
    return f"ok {x}"


@tool
async def stall() -> str:
    """Block the event loop it runs on (a blocking call inside async def)."""
    GATE.wait(5)
    return "late"


@tool
def big() -> str:
    """A 20 MB result."""
    return "x" * 20_000_000


@tool
def anything(value: Any = None) -> str:
    """Take any JSON value."""
    return "took it"


FIVE_MILLION = list(range(5_000_000))


@tool
def many() -> list[int]:
    """A result of five million numbers (made once, so the call itself costs nothing)."""
    return FIVE_MILLION


class HostileEnv(ToolEnv):
    tools = [hang, quick, stall, big, anything, many]  # noqa: RUF012
    parser = first_number
    max_tool_calls = 50
    tool_timeout_s = 0.5


def call(name, arguments):
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function", "id": "c", "function": {"name": name, "arguments": args}}


async def turn(env_class, *calls, unparsed=()):
    env = env_class(question="What is 2 + 3?", answer="5")
    await env.initial_observation()
    message = {"role": "assistant", "content": "", "tool_calls": list(calls)}
    if unparsed:
        message["unparsed_tool_calls"] = list(unparsed)
    return await env.step(message)


async def test_hung_sync_tools_then_a_quick_one_still_succeeds():
    hung = await asyncio.gather(*[turn(HostileEnv, call("hang", {})) for _ in range(12)])
    assert all(r.metrics["tool_errors"] == 1.0 for r in hung)
    assert all("timed out after 0.5 s" in r.next_messages[-1]["content"] for r in hung)
    result = await turn(HostileEnv, call("quick", {"x": 1}))  # within its 0.5 s limit
    assert result.next_messages[-1]["content"] == "ok 1"
    assert result.metrics["tool_errors"] == 0.0


async def test_an_async_tool_that_blocks_its_loop_times_out_at_its_limit():
    start = time.monotonic()
    result = await turn(HostileEnv, call("stall", {}))
    assert time.monotonic() - start < 2.0
    assert "timed out after 0.5 s" in result.next_messages[-1]["content"]
    assert result.metrics["tool_errors"] == 1.0


async def test_a_full_tool_pool_is_a_tool_error_not_a_wait():
    class Narrow(HostileEnv):
        max_tool_threads = 1

    first = await turn(Narrow, call("hang", {}))
    assert first.metrics["tool_errors"] == 1.0
    start = time.monotonic()
    second = await turn(Narrow, call("quick", {}))
    assert time.monotonic() - start < 0.5  # failed at once, did not wait for a thread
    assert second.metrics["tool_errors"] == 1.0
    assert "all 1 tool threads are busy" in second.next_messages[-1]["content"]


HUNG_RUN = """
import asyncio, time
from mint_envkit import ToolEnv, first_number, tool

@tool
def hang() -> str:
    \"\"\"Hang for a minute.\"\"\"
    time.sleep(60)
    return "late"

class E(ToolEnv):
    tools = [hang]
    parser = first_number
    tool_timeout_s = 0.5

async def main():
    env = E(question="q", answer="1")
    await env.initial_observation()
    call = {"type": "function", "id": "c", "function": {"name": "hang", "arguments": "{}"}}
    result = await env.step({"role": "assistant", "content": "", "tool_calls": [call]})
    print(result.next_messages[-1]["content"], flush=True)

asyncio.run(main())
"""


def test_a_run_with_a_hung_tool_exits_soon_after_the_limit():
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", HUNG_RUN], capture_output=True, text=True, timeout=40
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    assert "timed out after 0.5 s" in done.stdout
    assert elapsed < 20, f"exited after {elapsed:.1f} s; the hang was 60 s, the limit 0.5 s"


@pytest.mark.parametrize(
    ("bad", "text"),
    [
        (call("quick", DEEP), "nested deeper than"),
        (call("anything", '{"value": ' + DEEP + "}"), "nested deeper than"),
        (call("anything", '{"value": "' + "y" * 2_000_000 + '"}'), "chars long"),
        (call("quick", "[1, 2]"), "must be a JSON object"),
        (call("quick", "7"), "must be a JSON object"),
        ({"type": "function", "id": "c", "function": {"name": "quick", "arguments": 7}}, "JSON"),
        ({"function": {"name": "quick", "arguments": {1, 2}}}, "JSON object"),
        ({"function": "quick"}, "unknown tool"),
        ("quick", "could not be read"),
        (None, "could not be read"),
        (call("q" * 1_000_000, {}), "unknown tool"),
        (call(["quick"], {}), "unknown tool"),
    ],
)
async def test_malformed_calls_of_any_shape_are_invalid_calls(bad, text):
    result = await turn(HostileEnv, bad)
    content = result.next_messages[-1]["content"]
    assert text in content
    assert len(content) < 2_000
    assert result.metrics["tool_calls"] == 1.0 and result.metrics["invalid_tool_calls"] == 1.0
    assert result.metrics["tool_errors"] == 0.0 and not result.episode_done


async def test_deep_python_arguments_are_an_invalid_call():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    message = {"function": {"name": "anything", "arguments": {"value": deep}}}
    result = await turn(HostileEnv, message)
    assert "nested deeper than" in result.next_messages[-1]["content"]
    assert result.metrics["invalid_tool_calls"] == 1.0


async def test_tool_calls_that_are_not_a_list_are_one_invalid_call():
    env = HostileEnv(question="q", answer="5")
    await env.initial_observation()
    result = await env.step({"role": "assistant", "content": "", "tool_calls": "quick"})
    assert result.metrics["invalid_tool_calls"] == 1.0 and not result.episode_done


def test_deep_nesting_in_a_reply_is_an_unread_call():
    for body in (DEEP, '{"name": "quick", "arguments": ' + DEEP + "}"):
        _, calls, bad = parse_hermes_tool_calls(f"<tool_call>{body}</tool_call>")
        assert calls == [] and len(bad) == 1
        assert "nested deeper than" in bad[0]["error"]
    _, calls, bad = parse_hermes_tool_calls(
        '<tool_call>{"name": "quick", "arguments": "' + DEEP + '"}</tool_call>'
    )
    assert bad == [] and calls[0]["function"]["arguments"] == DEEP  # read later, by the env


async def test_a_20_mb_result_is_cut_with_a_marker_quickly():
    start = time.monotonic()
    result = await turn(HostileEnv, call("big", {}))
    elapsed = time.monotonic() - start
    content = result.next_messages[-1]["content"]
    assert elapsed < 5.0, f"the step took {elapsed:.1f} s"
    assert content.startswith("x" * 65_536)
    assert "[19934464 of 20000000 chars cut" in content
    assert len(content) < 65_536 + 300
    assert result.metrics["tool_errors"] == 0.0


async def longest_gap(work):
    """Await ``work()`` while a 10 ms timer ticks on this loop; its value and the longest gap."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def tick():
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    gaps.clear()
    value = await work()
    stop.set()
    await ticker
    return value, max(gaps)


async def test_a_five_million_element_result_does_not_block_the_loop():
    async def convert_on_the_loop():  # the blocking baseline: the whole result as JSON
        return json.dumps(FIVE_MILLION)

    _, blocked = await longest_gap(convert_on_the_loop)
    result, gap = await longest_gap(lambda: turn(HostileEnv, call("many", {})))
    # the timer waited `blocked` s while the whole result was converted on the loop; the
    # step converts only what the cap keeps (a ratio, so a loaded machine slows both)
    assert gap < blocked / 4, f"the loop stalled {gap:.3f} s; whole conversion: {blocked:.3f} s"
    marker = "\n[the rest cut: a tool result is capped at 65536 chars]"
    content = result.next_messages[-1]["content"]
    assert content.startswith("[0, 1, 2, 3") and content.endswith(marker)
    assert len(content) == 65_536 + len(marker)


async def test_the_result_cap_is_configurable_and_none_keeps_everything():
    class Small(HostileEnv):
        max_tool_result_chars = 10

    class Whole(HostileEnv):
        max_tool_result_chars = None

    small = (await turn(Small, call("quick", {"x": 123456789}))).next_messages[-1]["content"]
    assert small.startswith("ok 123456") and "[2 of 12 chars cut" in small
    whole = (await turn(Whole, call("big", {}))).next_messages[-1]["content"]
    assert len(whole) == 20_000_000


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tool_result_chars", 0),
        ("max_tool_result_chars", 1.5),
        ("max_tool_threads", 0),
        ("max_tool_threads", True),
    ],
)
def test_bad_settings_fail_when_the_class_is_defined(field, value):
    with pytest.raises(ConfigError, match=field):
        type("Bad", (HostileEnv,), {field: value})
