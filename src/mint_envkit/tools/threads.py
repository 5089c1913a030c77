"""Where tool calls run: :class:`ToolThreads`, a bounded set of daemon threads.

asyncio's shared default executor (what ``asyncio.to_thread`` uses) has a few
threads, keeps a thread busy as long as its call runs, and is joined when
``asyncio.run`` ends; a hung tool there starves every later call and holds up the
exit. Here every call gets a daemon thread of its own, an async tool an event loop
of its own in it, and the caller waits at most its timeout. ``docs/tools.md``
tells the trade-offs.

Example::

    # not run: `calculate` comes from your own code
    from mint_envkit.tools.threads import ToolThreads

    threads = ToolThreads(limit=16)
    await calculate.run({"expression": "2 + 3"}, timeout_s=1.0, threads=threads)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mint_envkit.checks import check_integer
from mint_envkit.errors import EnvError

if TYPE_CHECKING:
    from mint_envkit.tools.schema import Tool

DEFAULT_TOOL_THREADS = 256
"""How many tool calls may run (or hang) at once in one :class:`ToolThreads`."""


class _Call:
    """One call's state, shared by the caller and its thread."""

    def __init__(self) -> None:
        self.abandoned = False
        self.cancel: Callable[[], None] | None = None
        self.lock = threading.Lock()


def _deliver(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if not future.done():
        future.set_result(value) if ok else future.set_exception(value)


def _run_async(fn: Callable[..., Any], arguments: dict[str, Any], state: _Call) -> Any:
    """Run an async tool to its end on a new event loop in this thread."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        task = loop.create_task(fn(**arguments))
        with state.lock:
            if state.abandoned:
                task.cancel()
            state.cancel = lambda: loop.call_soon_threadsafe(task.cancel)
        return loop.run_until_complete(task)
    finally:
        with state.lock:
            state.cancel = None
        try:
            pending = asyncio.all_tasks(loop)
            for left in pending:
                left.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


class ToolThreads:
    """A bounded set of daemon threads that run tool calls, so a timeout really ends the wait.

    Each call gets a thread of its own (an async tool runs on an event loop of its
    own in that thread). At its timeout the caller stops waiting: an async tool is
    cancelled, a sync one is abandoned (a thread cannot be stopped) and keeps its
    place until its function returns. The threads are daemons, so a hung one never
    holds up the interpreter's exit. When ``limit`` calls are running or hung, a new
    call fails at once with :class:`~mint_envkit.errors.EnvError` instead of queueing.
    Each :class:`~mint_envkit.ToolEnv` class has its own (``max_tool_threads``).

    Example::

        # not run: `add` comes from your own code
        threads = ToolThreads(limit=8)
        await add.run({"a": 2, "b": 3}, timeout_s=1.0, threads=threads)  # 5
        threads.busy  # 0: the call's thread has ended
    """

    def __init__(self, limit: int = DEFAULT_TOOL_THREADS) -> None:
        check_integer(limit, "ToolThreads limit", why="how many tool calls may run or hang at once")
        self.limit = limit
        self._busy = 0
        self._lock = threading.Lock()

    @property
    def busy(self) -> int:
        """How many calls hold a thread now: running, or abandoned at their timeout and hung."""
        return self._busy

    async def call(self, tool_: Tool, arguments: dict[str, Any], *, timeout_s: float | None) -> Any:
        """Run ``tool_`` with ``arguments`` in a thread of its own; see :meth:`Tool.run`."""
        with self._lock:
            if self._busy >= self.limit:
                raise EnvError(
                    f"tool {tool_.name[:100]!r} was not run: all {self.limit} tool threads "
                    "are busy (a call over its timeout keeps its thread until it returns); "
                    "make the tool return within its timeout, or raise the limit "
                    "(ToolEnv.max_tool_threads, or ToolThreads(limit=...))"
                )
            self._busy += 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        state = _Call()
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run,
            args=(self._work, loop, future, tool_, arguments, state),
            name=f"mint-envkit-tool-{tool_.name[:40]}",
            daemon=True,
        )
        try:
            thread.start()
        except BaseException:
            self._release()
            raise
        try:
            return await asyncio.wait_for(future, timeout_s)
        except BaseException:
            with state.lock:
                state.abandoned = True
                cancel = state.cancel
            if cancel is not None:
                # RuntimeError: its loop closed meanwhile, the tool has ended
                with contextlib.suppress(RuntimeError):
                    cancel()
            raise

    def _release(self) -> None:
        with self._lock:
            self._busy -= 1

    def _work(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        tool_: Tool,
        arguments: dict[str, Any],
        state: _Call,
    ) -> None:
        ok, value = False, None
        try:
            if state.abandoned:  # the caller gave up before this thread ran
                value = TimeoutError(f"tool {tool_.name!r} was not started in time")
            elif tool_.is_async:
                ok, value = True, _run_async(tool_.fn, arguments, state)
            else:
                ok, value = True, tool_.fn(**arguments)
        except Exception as err:
            value = err
        except BaseException as err:  # SystemExit, a cancellation: never re-raised on the loop
            value = RuntimeError(f"tool {tool_.name!r} ended with {type(err).__name__}: {err}")
        finally:
            self._release()
        # RuntimeError: the caller's loop is closed, nobody waits for this result
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_deliver, future, ok, value)


_DEFAULT: list[ToolThreads] = []
_DEFAULT_LOCK = threading.Lock()


def default_threads() -> ToolThreads:
    """The process-wide :class:`ToolThreads` that :meth:`Tool.run` uses when given none.

    Example::

        default_threads().limit  # 256 (DEFAULT_TOOL_THREADS)
    """
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            _DEFAULT.append(ToolThreads())
        return _DEFAULT[0]
