"""The processes of MCP servers: started through a keeper, ended with their tree; stdio read within a bound.

:func:`start_process` starts a server command through a
:mod:`~mint_envkit.tools.keeper` (so whatever the server starts, ``setsid`` children
included, ends with it) in a session of its own; :func:`end_process` ends it (end
of stdin first when asked, then SIGTERM to its group, then SIGKILL).
:func:`stdio_transport` is the kit's MCP transport over a server's stdin and stdout:
the SDK's own reads a line whole (and re-splits it at every chunk, so a 50 MB
result took minutes); this one reads each line within
:data:`~mint_envkit.tools.mcp_cut.MAX_MCP_MESSAGE_BYTES` and stands a cut one in
with :func:`~mint_envkit.tools.mcp_cut.stand_in`. It runs on the MCP loop.

Example::

    # not run: starts a server
    from mint_envkit.tools.mcp_stdio import stdio_transport

    transport = stdio_transport([sys.executable, "server.py"], env=None, cwd=None, errlog=sys.stderr)
    client = await stack.enter_async_context(mcp.Client(transport, cache=None))
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

from mint_envkit.tools import keeper
from mint_envkit.tools.mcp_cut import (
    MAX_MCP_MESSAGE_BYTES,
    Bounded,
    many_items,
    stand_in,
    undecodable,
)
from mint_envkit.tools.mcp_log import LogSink, relay

KILL_WAIT_S = 3.0
"""Seconds a server's process (its keeper) has after SIGTERM before SIGKILL."""
EXIT_WAIT_S = 2.0
"""Seconds a stdio server has to exit once its stdin is closed, before SIGTERM."""
_CHUNK = 1 << 20
logger = logging.getLogger("mint_envkit.tools")


_RELAYS: set[asyncio.Task[None]] = set()


async def start_process(
    command: Sequence[str],
    *,
    stdin: Any,
    stdout: Any,
    stderr: IO[str],
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
) -> asyncio.subprocess.Process:
    """Start ``command`` through a keeper, in a session (and process group) of its own.

    Its stderr goes through a pipe into ``stderr``, capped at
    :data:`~mint_envkit.tools.mcp_log.MAX_LOG_BYTES` (:mod:`~mint_envkit.tools.mcp_log`);
    ``stdout`` is a pipe for the kit (``subprocess.PIPE``), or ``None`` to go into the
    same capped log (an HTTP server's).

    Example::

        # not run: starts a server
        process = await start_process(command, stdin=subprocess.DEVNULL, stdout=None,
                                      stderr=log, env=None, cwd=None)
    """
    process = await asyncio.create_subprocess_exec(
        *keeper.guarded(command),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    sink = LogSink(stderr, f"MCP server process {process.pid} ({' '.join(command)[:80]})")
    streams = [process.stderr] + ([process.stdout] if stdout is None else [])
    for stream in streams:
        task = asyncio.ensure_future(relay(stream, sink))
        _RELAYS.add(task)
        task.add_done_callback(_RELAYS.discard)
    return process


async def _exited(process: asyncio.subprocess.Process, within_s: float) -> bool:
    """Whether the process exited within ``within_s`` (its returncode, not ``wait()``,
    which also waits for every holder of its pipes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while process.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def end_process(process: asyncio.subprocess.Process, *, close_stdin: bool = False) -> None:
    """End a process :func:`start_process` started, and its tree; bounded, at most ~13 s.

    With ``close_stdin``, its stdin is closed first and it gets :data:`EXIT_WAIT_S`
    to exit (a stdio server ends at end of file). Then SIGTERM to its process group
    (the keeper passes it on, gives the server its grace, then kills the tree). A
    keeper that is stopped (something of the server sent it ``SIGSTOP``), or has not
    exited :data:`KILL_WAIT_S` after the SIGTERM, has its tree ended from here
    (:func:`~mint_envkit.tools.keeper.kill_tree`), then is SIGKILLed; last, SIGKILL to
    whatever is left of the group (where no keeper ran).

    Example::

        # not run: needs a started process
        await end_process(process, close_stdin=True)
    """
    if close_stdin and process.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            process.stdin.close()
        await _exited(process, EXIT_WAIT_S)
    stopped = process.returncode is None and keeper.is_stopped(process.pid)
    if stopped:  # it cannot be trusted to end its tree: the kit does it at once
        logger.warning(
            "the keeper of MCP server process %d was stopped (SIGSTOP by a process of the "
            "server?); the kit ends its tree itself",
            process.pid,
        )
    if process.returncode is None and not stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        await _exited(process, KILL_WAIT_S)
    if process.returncode is None:  # the keeper did not end its tree: end it from here
        if not await asyncio.to_thread(keeper.kill_tree, process.pid):
            logger.warning("processes below MCP server process %d outlasted SIGKILL", process.pid)
        await _exited(process, KILL_WAIT_S)
    if process.returncode is None:
        logger.warning("MCP server process %d outlived SIGKILL; left behind", process.pid)
    # what is left of its group (only where no keeper ended the tree): killed too
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _lines(stream: asyncio.StreamReader, limit: int) -> AsyncIterator[Bounded]:
    """The lines of ``stream``, each kept within ``limit`` bytes (its start and end beyond)."""
    line = Bounded(limit)
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        view = memoryview(chunk)
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            line.add(view[start:end])
            yield line
            line = Bounded(limit)
            start = end + 1
        line.add(view[start:])


def read_message(line: Bounded, waiting: dict[Any, str]) -> Any:
    """The SDK's message for one line: a SessionMessage, an Exception (as the SDK's
    own transport gives), or None (a blank line, or a cut one no request waits for).
    A line that does not decode but answers a waiting request becomes a JSON-RPC
    parse error for it (:func:`~mint_envkit.tools.mcp_cut.undecodable`), so the call
    fails at once instead of at its timeout."""
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter
    from pydantic import ValidationError

    if line.cut:
        standing = stand_in(line, waiting)
        if standing is None:
            logger.warning(
                "dropped a %d-byte MCP message (over the %d-byte bound) that answers no "
                "waiting request",
                line.size,
                line.limit,
            )
            return None
        parsed = jsonrpc_message_adapter.validate_python(standing, by_name=False)
    else:
        data = line.data
        if not data.strip():
            return None
        many = many_items(line, waiting)
        try:
            if many is not None:
                parsed = jsonrpc_message_adapter.validate_python(many, by_name=False)
            else:
                parsed = jsonrpc_message_adapter.validate_json(data, by_name=False)
        except ValidationError as err:  # too deep, a number out of range, not JSON
            why = "; ".join(str(e.get("msg", "")) for e in err.errors()[:2]) or type(err).__name__
            standing = undecodable(line, waiting, why)
            if standing is None:
                return err
            parsed = jsonrpc_message_adapter.validate_python(standing, by_name=False)
    if isinstance(parsed, JSONRPCResponse | JSONRPCError):
        waiting.pop(parsed.id, None)
    return SessionMessage(parsed)


@asynccontextmanager
async def stdio_transport(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    errlog: IO[str],
    limit: int = MAX_MCP_MESSAGE_BYTES,
) -> AsyncIterator[tuple[Any, Any]]:
    """An MCP transport (for ``mcp.Client``) over a server started as ``command``.

    ``env``: put over the SDK's default environment for stdio servers (as the SDK's
    own transport does). On exit the
    server is ended with :func:`end_process` (stdin closed first), even when the
    caller is cancelled.

    Example::

        # not run: starts a server
        async with stdio_transport(command, env=None, cwd=None, errlog=sys.stderr) as streams:
            ...
    """
    import anyio
    from mcp.client.stdio import get_default_environment
    from mcp.types import JSONRPCRequest

    process = await start_process(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | dict(env or {}),
        cwd=cwd,
    )
    stdin, stdout = process.stdin, process.stdout
    if stdin is None or stdout is None:  # pragma: no cover - both are pipes
        raise RuntimeError("the server's pipes were not made")
    waiting: dict[Any, str] = {}
    reader_end, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, writer_end = anyio.create_memory_object_stream[Any](0)

    async def read() -> None:
        async with reader_end:
            async for line in _lines(stdout, limit):
                item = read_message(line, waiting)
                if item is None:
                    continue
                try:
                    await reader_end.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def write() -> None:
        try:
            async with writer_end:
                async for item in writer_end:
                    message = item.message
                    if isinstance(message, JSONRPCRequest):
                        waiting[message.id] = message.method
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(text.encode() + b"\n")
                    await stdin.drain()
        except (OSError, RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await reader_end.aclose()  # the server is gone: the session sees the end

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await end_process(process, close_stdin=True)
            tasks.cancel_scope.cancel()
