"""The health watchdog alone: a dead URL is lost within the bound; a live one lets work finish."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from mint_envkit.errors import BackendError
from mint_envkit.rl.health import Watchdog

T = TypeVar("T")


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def _within(seconds: float, what: str, work: Awaitable[T]) -> T:
    """``await work``, failing the test (not hanging it) when it takes over ``seconds``."""
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        pytest.fail(f"{what} did not happen within {seconds} s")


async def _until(predicate: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    """Poll ``predicate()`` on the event loop; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


async def test_work_on_a_dead_backend_is_cancelled_with_url_and_where():
    url = _dead_url()
    cancelled = asyncio.Event()

    async def hangs() -> None:
        try:
            await asyncio.sleep(60)  # until the watchdog cancels it (_within bounds the test)
        finally:
            cancelled.set()

    watchdog = Watchdog(url, api_key=None, lost_after_s=1.0)
    start = time.monotonic()
    with pytest.raises(BackendError, match="during step 4 of 9") as info:
        await _within(
            10,
            "the watchdog's loss of a dead backend",
            watchdog.run(hangs(), describe=lambda: "step 4 of 9", advice=lambda: "Re-run it."),
        )
    assert time.monotonic() - start < 5
    assert url in str(info.value) and str(info.value).endswith("Re-run it.")
    assert watchdog.lost and cancelled.is_set()


async def test_an_sdk_error_on_a_dead_backend_becomes_a_backend_error():
    async def gives_up() -> None:
        raise ConnectionError("Connection error.")

    watchdog = Watchdog(_dead_url(), api_key=None, lost_after_s=30.0)
    with pytest.raises(BackendError, match="lost the backend") as info:
        await watchdog.run(gives_up(), describe=lambda: "step 1 of 2")
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_the_servers_shutting_down_error_is_a_loss_while_it_still_answers():
    """The embedded server fails a request it drops while closing with its own message, and
    may answer health checks for a few seconds more while it drains (seen in CI: the raw
    SDK error escaped instead of the BackendError naming URL, step and resume point)."""
    import sys
    from pathlib import Path

    from mint_envkit.local.messages import SERVER_SHUTTING_DOWN

    sys.path.insert(0, str(Path(__file__).parents[1] / "local"))
    from server_helpers import fake_server

    async def dropped() -> None:
        raise RuntimeError(f"Request failed: {SERVER_SHUTTING_DOWN}")

    async def other() -> None:
        raise RuntimeError("a request failed for its own reasons")

    with fake_server() as (server, _engine):
        watchdog = Watchdog(server.base_url, api_key=None, lost_after_s=30.0)
        with pytest.raises(BackendError, match=SERVER_SHUTTING_DOWN) as info:
            await _within(10, "the loss", watchdog.run(dropped(), describe=lambda: "step 2 of 4"))
        assert "during step 2 of 4" in str(info.value) and watchdog.lost
        # any other error of work on a live backend passes through unchanged
        live = Watchdog(server.base_url, api_key=None, lost_after_s=30.0)
        with pytest.raises(RuntimeError, match="its own reasons"):
            await _within(10, "the error", live.run(other(), describe=lambda: "step 1"))


async def test_work_that_finishes_first_returns_its_value():
    async def quick() -> int:
        return 7

    watchdog = Watchdog(_dead_url(), api_key=None, lost_after_s=30.0)
    assert await watchdog.run(quick(), describe=lambda: "step 1 of 1") == 7
    assert not watchdog.lost


async def test_a_restarted_backend_is_noticed_at_the_next_probe():
    """The embedded backend names its instance in healthz; a new instance at the same URL
    means the run's training client is gone, so the watchdog fails at once."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "local"))
    from server_helpers import fake_server

    with fake_server() as (server, _engine):
        watchdog = Watchdog(server.base_url, api_key=None, lost_after_s=2.0)
        first_instance = server.backend.instance_id

        async def swap_then_hang() -> None:
            await _until(
                lambda: watchdog.instance is not None,
                "the watchdog's first probe to record the server's instance",
                timeout=5,
            )
            server.backend.instance_id = "a-new-instance"
            await asyncio.sleep(60)  # until the watchdog cancels it (_within bounds the test)

        start = time.monotonic()
        with pytest.raises(BackendError, match="it restarted") as info:
            await _within(
                10,
                "the watchdog's notice of the restart",
                watchdog.run(swap_then_hang(), describe=lambda: "step 2 of 5"),
            )
    assert watchdog.instance == first_instance and watchdog.restarted
    assert time.monotonic() - start < 5 and server.base_url in str(info.value)
