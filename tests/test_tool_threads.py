"""Tool.run: every call in a bounded set of daemon threads, so a timeout really ends the wait."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mint_envkit import ConfigError, EnvError, tool
from mint_envkit.tools import ToolThreads


def wait_until(condition, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def gate():
    """An event hung tools wait on; set at the end so their threads end too."""
    event = threading.Event()
    yield event
    event.set()


async def test_hung_sync_tools_do_not_starve_a_quick_one(gate):
    @tool
    def hang() -> str:
        """Wait until the test ends."""
        gate.wait(60)
        return "late"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "ok"

    threads = ToolThreads(limit=32)
    hung = [hang.run({}, timeout_s=0.3, threads=threads) for _ in range(12)]
    for outcome in await asyncio.gather(*hung, return_exceptions=True):
        assert isinstance(outcome, TimeoutError)
    assert threads.busy == 12  # abandoned, still holding their places
    assert await quick.run({}, timeout_s=0.3, threads=threads) == "ok"  # within its limit
    # the shared default thread pool (the tools' pool before) is untouched as well
    assert await quick.run({}, timeout_s=0.3) == "ok"
    gate.set()
    wait_until(lambda: threads.busy == 0, "the hung threads to end once released")


async def test_a_full_pool_fails_fast_with_a_clear_error(gate):
    @tool
    def hang() -> str:
        """Wait until the test ends."""
        gate.wait(60)
        return "late"

    threads = ToolThreads(limit=2)
    for _ in range(2):
        with pytest.raises(TimeoutError):
            await hang.run({}, timeout_s=0.05, threads=threads)
    start = time.monotonic()
    with pytest.raises(EnvError, match=r"all 2 tool threads are busy.*max_tool_threads"):
        await hang.run({}, timeout_s=5.0, threads=threads)
    assert time.monotonic() - start < 1.0
    gate.set()
    wait_until(lambda: threads.busy == 0, "the hung threads to end once released")
    assert await hang.run({}, timeout_s=5.0, threads=threads) == "late"


async def test_an_async_tool_that_blocks_its_loop_still_times_out(gate):
    @tool
    async def stall() -> str:
        """Block the event loop it runs on (a blocking call inside async def)."""
        gate.wait(5)
        return "late"

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        await stall.run({}, timeout_s=0.3)
    assert time.monotonic() - start < 2.0


async def test_a_cooperative_async_tool_is_cancelled_and_frees_its_thread():
    cancelled = threading.Event()

    @tool
    async def nap() -> str:
        """Sleep on the loop."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    threads = ToolThreads(limit=4)
    with pytest.raises(TimeoutError):
        await nap.run({}, timeout_s=0.1, threads=threads)
    wait_until(lambda: threads.busy == 0, "the cancelled async tool's thread to end")
    assert cancelled.is_set()


async def test_results_errors_and_context_come_back():
    @tool
    def boom(x: int) -> int:
        """Raise."""
        raise ValueError(f"bad x {x}")

    @tool
    async def where() -> str:
        """Name the thread it runs in."""
        await asyncio.sleep(0)
        return threading.current_thread().name

    with pytest.raises(ValueError, match="bad x 3"):
        await boom.run({"x": 3}, timeout_s=1.0)
    assert (await where.run({}, timeout_s=None)).startswith("mint-envkit-tool")


def test_the_limit_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ConfigError, match="ToolThreads limit"):
            ToolThreads(limit=bad)
