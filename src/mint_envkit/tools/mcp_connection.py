"""Connections to MCP servers, each held by a task on the kit's own MCP event loop.

The ``mcp`` SDK's clients live in anyio task groups: a connection must be opened and
closed by one task. So every connection here has an owner task that opens it, waits
to be told to stop, then closes it (ending the server process the kit started). The
owner tasks run on one event loop in a daemon thread of its own, the *MCP loop*:
an episode's loop only awaits futures of it, so MCP I/O never blocks that loop, a
shared server outlives an ``asyncio.run`` that used it, and a cancelled episode
cannot leave a connection half closed. At interpreter exit every connection still
open is closed (``atexit``). ``mcp`` is imported only here, when a connection opens.
The server processes are started and ended by :mod:`~mint_envkit.tools.mcp_stdio`
(through a keeper), stdio spoken by its transport, HTTP bodies read within a bound by
:mod:`~mint_envkit.tools.mcp_http`.

Example::

    from mint_envkit.tools.mcp_connection import McpConnection, on_mcp_loop

    connection = McpConnection(McpServer.stdio([sys.executable, "server.py"]))
    listed = await on_mcp_loop(connection.open())
    result = await on_mcp_loop(connection.call("add", {"a": 2, "b": 3}, timeout_s=5.0))
    await connection.close()
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import IO, TYPE_CHECKING, Any, TypeVar

from mint_envkit.errors import EnvError, MissingExtraError
from mint_envkit.tools.mcp_http import bounded_http_client
from mint_envkit.tools.mcp_stdio import end_process, start_process, stdio_transport

if TYPE_CHECKING:
    from mint_envkit.tools.mcp import McpServer

_T = TypeVar("_T")
_EXIT_WAIT_S = 10.0
_LOOP: list[asyncio.AbstractEventLoop] = []
_LOOP_LOCK = threading.Lock()
_STOP_WAIT_S = 10.0
_OPEN: weakref.WeakSet[McpConnection] = weakref.WeakSet()
_PORTS: set[int] = set()


def import_mcp() -> Any:
    """The ``mcp`` package, or a :class:`~mint_envkit.errors.MissingExtraError` with the fix.

    Example::

        mcp = import_mcp()
        mcp.Client  # the SDK's client class
    """
    try:
        import mcp
    except ImportError as err:
        raise MissingExtraError(
            "tools from MCP servers (ToolEnv.mcp_servers) need the official MCP SDK, which "
            f"is not installed ({err}); run pip install 'mint-envkit[mcp]' (or: pip install mcp)"
        ) from err
    return mcp


def mcp_loop() -> asyncio.AbstractEventLoop:
    """The kit's MCP event loop, started in a daemon thread on first use.

    Example::

        mcp_loop().is_running()  # True
    """
    with _LOOP_LOCK:
        if not _LOOP:
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            threading.Thread(target=run, name="mint-envkit-mcp", daemon=True).start()
            started.wait()
            _LOOP.append(loop)
            atexit.register(close_all_connections)
        return _LOOP[0]


async def on_mcp_loop(coro: Coroutine[Any, Any, _T]) -> _T:
    """Await ``coro`` run on the MCP loop, from any event loop, without blocking it.

    Cancelling the caller cancels ``coro``.

    Example::

        listed = await on_mcp_loop(connection.open())
    """
    loop = mcp_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def close_all_connections(timeout_s: float = _EXIT_WAIT_S) -> None:
    """Close every open MCP connection and wait for it (at most ``timeout_s``); sync.

    Registered with ``atexit``, so no server process the kit started outlives the
    interpreter. Call it from outside the MCP loop.

    Example::

        close_all_connections()
    """
    if not _LOOP:
        return
    connections = list(_OPEN)
    if not connections:
        return

    async def close_them() -> None:
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    future = asyncio.run_coroutine_threadsafe(close_them(), _LOOP[0])
    with contextlib.suppress(Exception):
        future.result(timeout_s)


def _free_port() -> int:
    """A free localhost port, not one handed to another server of this process still running."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _PORTS:
            break
    _PORTS.add(port)
    return port


def _filled(parts: list[str], port: int | None) -> list[str]:
    return [p.replace("{port}", str(port)) if port is not None else p for p in parts]


async def _wait_listening(url: str, process: asyncio.subprocess.Process, deadline: float) -> None:
    """Wait until the started HTTP server accepts connections at ``url``'s host and port."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    while True:
        if process.returncode is not None:
            raise EnvError(f"exited with code {process.returncode} before serving {url}")
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            if loop.time() > deadline:
                raise TimeoutError from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return


def _errlog(server: McpServer, stack: AsyncExitStack) -> IO[str]:
    """Where the server's stderr goes: its ``stderr`` file, else this process's stderr.

    A replaced ``sys.stderr`` without a file descriptor (pytest's capture, a notebook)
    cannot be handed to a child process: then the real one, or the null device.
    """
    if server.stderr is not None:
        return stack.enter_context(open(server.stderr, "a", encoding="utf-8"))
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return stack.enter_context(open(os.devnull, "w", encoding="utf-8"))


class McpConnection:
    """One open connection to one MCP server, owned by a task on the MCP loop.

    :meth:`open` starts the server when the kit runs it (a stdio command, or an HTTP
    command on a free port), connects, and returns the listed tools; :meth:`call`
    calls one; :meth:`close` (from any loop) or :meth:`stop` (on the MCP loop) ends
    the connection and the process. ``open`` and ``call`` run on the MCP loop (see
    :func:`on_mcp_loop`).

    Example::

        connection = McpConnection(server)
        listed = await on_mcp_loop(connection.open())  # [mcp.types.Tool, ...]
        await connection.close()
    """

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.client: Any = None
        self.pid: int | None = None
        """The process id of the keeper of the HTTP server the kit started (None otherwise)."""
        self.closed = False
        self._serving = False
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """True while the connection is open and its task runs."""
        return self.client is not None and not self.closed

    async def open(self) -> list[Any]:
        """Start (when the kit runs it) and connect to the server; return its listed tools."""
        import_mcp()
        self._stop = asyncio.Event()
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # read, never logged
        _OPEN.add(self)
        self._owner = asyncio.get_running_loop().create_task(self._own(ready))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.server.startup_timeout_s)
        except BaseException as err:
            await self.stop()
            if isinstance(err, TimeoutError):
                raise EnvError(
                    f"MCP server {self.server.label} did not start within "
                    f"{self.server.startup_timeout_s:g} s; check its command, or raise "
                    "startup_timeout_s"
                ) from None
            if not isinstance(err, Exception):
                raise
            why = str(err) if isinstance(err, EnvError) else f"{type(err).__name__}: {err}"
            raise EnvError(
                f"MCP server {self.server.label} could not be started or connected: {why}; "
                "check its command or url (run the command by hand to see its errors)"
            ) from err

    async def _own(self, ready: asyncio.Future[list[Any]]) -> None:
        stop = self._stop
        if stop is None:  # pragma: no cover - set by open()
            return
        try:
            async with AsyncExitStack() as stack:
                self.client = await self._connect(stack)
                listed = await self._list(self.client)
                if not ready.done():
                    ready.set_result(listed)
                self._serving = True
                await stop.wait()
        except BaseException as err:
            if not ready.done():
                ready.set_exception(err if isinstance(err, Exception) else EnvError(repr(err)))
            if not isinstance(err, Exception):
                raise
        finally:
            self.client = None
            self.closed = True
            _OPEN.discard(self)

    async def _connect(self, stack: AsyncExitStack) -> Any:
        mcp = import_mcp()
        server = self.server
        errlog = _errlog(server, stack)
        env = {**os.environ, **server.env} if server.env else None
        if server.transport == "stdio":
            command = list(server.command or [])
            transport: Any = stdio_transport(command, env=env, cwd=server.cwd, errlog=errlog)
        else:
            from mcp.client.streamable_http import streamable_http_client

            port = _free_port() if server.command and "{port}" in server.url_template else None
            if port is not None:
                stack.callback(_PORTS.discard, port)
            url = _filled([server.url_template], port)[0]
            if server.command:
                process = await start_process(
                    _filled(list(server.command), port),
                    stdin=subprocess.DEVNULL,
                    stdout=None,  # into the capped log, with its stderr
                    stderr=errlog,
                    env=env,
                    cwd=server.cwd,
                )
                self.pid = process.pid
                stack.push_async_callback(end_process, process)
                deadline = asyncio.get_running_loop().time() + server.startup_timeout_s
                await _wait_listening(url, process, deadline)
            client = await stack.enter_async_context(bounded_http_client())
            transport = streamable_http_client(url, http_client=client)
        client = await stack.enter_async_context(mcp.Client(transport, cache=None))
        if server.transport == "http" and server.command and process.returncode is not None:
            raise EnvError(  # its port was taken: what answered is another server
                f"exited with code {process.returncode} while starting; is {url} in use?"
            )
        return client

    @staticmethod
    async def _list(client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor = None
        for _ in range(100):  # a server that pages forever cannot hang the start
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, name: str, arguments: dict[str, Any], *, timeout_s: float | None) -> Any:
        """Call tool ``name``; the SDK's ``CallToolResult``. Runs on the MCP loop.

        Raises:
            EnvError: the connection is closed (the server exited or was stopped).
            mcp.MCPError: the server answered with a protocol error (a timeout has
                code ``REQUEST_TIMEOUT``).
        """
        client = self.client
        if client is None or self.closed:
            raise EnvError(f"MCP server {self.server.label} is not running (it exited)")
        return await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)

    async def responds(self, timeout_s: float = 5.0) -> bool:
        """True when the connection is open and the server answers in time. MCP loop.

        The probe is a ``tools/list`` request (``ping`` is gone from the 2026 protocol).
        """
        client = self.client
        if client is None or self.closed:
            return False
        try:
            await asyncio.wait_for(client.list_tools(), timeout_s)
        except Exception:
            return False
        return True

    async def stop(self) -> None:
        """End the connection and the server's process, and wait for it. On the MCP loop."""
        if self._stop is not None:
            self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            if not self._serving:  # still starting (a server that hangs at its start)
                owner.cancel()
            # asyncio.wait: a cancelled caller stops waiting, the close still runs to its end
            done, _ = await asyncio.wait({owner}, timeout=_STOP_WAIT_S)
            if not done:  # the SDK's close hangs: cancel it (that ends the process)
                owner.cancel()
                await asyncio.wait({owner}, timeout=_STOP_WAIT_S)
        self.closed = True
        _OPEN.discard(self)

    async def close(self) -> None:
        """End the connection from any event loop; the close finishes even if this is cancelled."""
        await asyncio.shield(on_mcp_loop(self.stop()))

    def close_soon(self) -> None:
        """Ask the MCP loop to close this connection, without waiting (from any thread)."""
        if _LOOP and not self.closed:
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(self.stop(), _LOOP[0])
