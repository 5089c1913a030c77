"""Tools from MCP servers: :class:`McpServer`, and the tools of one episode, :class:`McpTools`.

A :class:`~mint_envkit.ToolEnv` lists :class:`McpServer` objects in ``mcp_servers``;
each episode then offers the tools those servers list next to its ``tools``, in the
same schema format as :func:`~mint_envkit.tool` (so a renderer shows them the same
way), and a call goes to the server through the official ``mcp`` SDK
(``pip install 'mint-envkit[mcp]'``; imported only when a server is started).

A server runs over stdio (:meth:`McpServer.stdio`: the kit starts the command and
talks over its stdin/stdout) or streamable HTTP (:meth:`McpServer.http`: the kit
starts the command on a free port, or connects to a server already running). With
``per_episode=True`` each episode gets a server of its own, started before the
episode and stopped when it ends (state such as a counter or a scratch file is
per episode); otherwise one server is shared by every episode of the process,
started on first use, restarted if it died, and stopped at exit (or by
:meth:`McpServer.aclose`). Whatever happens to a call (an ``isError`` result, a
protocol error, a timeout, a server that exited) comes back to the model as a
tool message and is counted like a failing ``@tool``; ``docs/tools.md`` has the
details. Every server the kit starts runs under a keeper
(:mod:`~mint_envkit.tools.keeper`), so the processes it starts, ``setsid`` ones
included, end with it, with the episode and with the interpreter; an answer over
:data:`~mint_envkit.tools.mcp_cut.MAX_MCP_MESSAGE_BYTES` is read within that bound
and cut (:mod:`~mint_envkit.tools.mcp_cut`). Connections live on the kit's own MCP event loop
(:mod:`~mint_envkit.tools.mcp_connection`), so MCP I/O never blocks an episode's loop;
:mod:`~mint_envkit.tools.mcp_tool` turns a listed tool into a schema and a result into text.

Example::

    import sys
    from mint_envkit import McpServer, ToolEnv, first_number

    class CounterEnv(ToolEnv):
        system_prompt = "Use the tools, then reply with only the number."
        mcp_servers = [McpServer.stdio([sys.executable, "counter_server.py"], per_episode=True)]
        parser = first_number
"""

from __future__ import annotations

import asyncio
import shlex
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from mint_envkit.checks import check_number
from mint_envkit.errors import ConfigError, ToolDefinitionError
from mint_envkit.tools.mcp_connection import McpConnection, on_mcp_loop
from mint_envkit.tools.mcp_tool import McpTool


class McpServer:
    """An MCP server whose tools a :class:`~mint_envkit.ToolEnv` offers (``mcp_servers``).

    Make one with :meth:`stdio` or :meth:`http`. ``per_episode=True`` gives each
    episode a server of its own (for tools with state); the default is one server
    shared by every episode of the process (for read-only tools), started on first
    use and stopped at interpreter exit or by :meth:`aclose`.

    Attributes:
        transport: ``"stdio"`` or ``"http"``.
        command: the command the kit runs (None: an HTTP server already running).
        url_template: the HTTP endpoint; ``{port}`` is filled with a free port.
        per_episode: one server per episode (True) or one shared (False).
        env: variables added to the server's environment.
        cwd: the server's working directory.
        startup_timeout_s: how long the start and the first listing may take.
        stderr: a file the server's log (stderr) is appended to (None: this
            process's stderr).
        prefix: put before every tool name (``"calc."`` gives ``calc.add``), to
            keep two servers' tool names apart.

    Example::

        McpServer.stdio([sys.executable, "counter_server.py"], per_episode=True)
        McpServer.http("http://127.0.0.1:{port}/mcp",
                       command=[sys.executable, "server.py", "--port", "{port}"])
        McpServer.http("http://127.0.0.1:8000/mcp")  # a server already running
    """

    def __init__(
        self,
        transport: Literal["stdio", "http"],
        *,
        command: Sequence[str] | None = None,
        url: str = "",
        per_episode: bool = False,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout_s: float = 30.0,
        stderr: str | Path | None = None,
        prefix: str = "",
    ) -> None:
        if transport not in ("stdio", "http"):
            raise ConfigError(f"McpServer transport must be 'stdio' or 'http', got {transport!r}")
        if command is not None and (
            isinstance(command, str)
            or not command
            or not all(isinstance(part, str) for part in command)
        ):
            raise ConfigError(
                f"McpServer command must be a non-empty list of strings, got {command!r}; "
                'e.g. [sys.executable, "server.py"] (shlex.split a command line)'
            )
        if transport == "stdio" and command is None:
            raise ConfigError("McpServer.stdio needs a command, e.g. [sys.executable, 'server.py']")
        if transport == "http" and not (isinstance(url, str) and url.startswith("http")):
            raise ConfigError(
                f"McpServer.http needs an http(s) url, got {url!r}; "
                "e.g. 'http://127.0.0.1:{port}/mcp'"
            )
        if transport == "http" and command is None and ("{port}" in url or per_episode):
            raise ConfigError(
                f"McpServer.http({url!r}) without a command connects to a server already "
                "running, so it cannot fill '{port}' or start one per episode; pass "
                "command=[...] for the kit to start it"
            )
        check_number(
            startup_timeout_s, "McpServer startup_timeout_s", low=0, low_open=True, why="seconds"
        )
        self.transport = transport
        self.command = tuple(command) if command is not None else None
        self.url_template = url
        self.per_episode = bool(per_episode)
        self.env = dict(env or {})
        self.cwd = cwd
        self.startup_timeout_s = float(startup_timeout_s)
        self.stderr = stderr
        self.prefix = prefix

    @classmethod
    def stdio(
        cls, command: Sequence[str], *, per_episode: bool = False, **options: Any
    ) -> McpServer:
        """A server the kit starts as ``command`` and talks to over stdin/stdout.

        ``options``: ``env``, ``cwd``, ``startup_timeout_s``, ``stderr``, ``prefix``
        (see the class attributes).

        Example::

            McpServer.stdio([sys.executable, "server.py"], per_episode=True)
        """
        return cls("stdio", command=command, per_episode=per_episode, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        command: Sequence[str] | None = None,
        per_episode: bool = False,
        **options: Any,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url``.

        With ``command`` the kit starts it (``{port}`` in ``url`` and ``command`` is
        filled with a free localhost port), waits until it listens, and stops it
        (through a keeper: it and every process it started). Without, it connects to a
        server already running at ``url`` (shared only).

        Example::

            McpServer.http("http://127.0.0.1:{port}/mcp",
                           command=[sys.executable, "server.py", "--port", "{port}"])
        """
        return cls("http", command=command, url=url, per_episode=per_episode, **options)

    @property
    def label(self) -> str:
        """The server in a message: its command, or its url."""
        where = shlex.join(self.command) if self.command else self.url_template
        return repr(where if len(where) <= 120 else where[:120] + "...")

    async def aclose(self) -> None:
        """Stop this server's shared connection (and the process the kit started), if any.

        Example::

            await SERVER.aclose()  # the next episode starts it again
        """
        connection = _SHARED.pop(self, None)
        if connection is not None:
            await connection.close()

    def __repr__(self) -> str:
        scope = "per episode" if self.per_episode else "shared"
        return f"McpServer.{self.transport}({self.label}, {scope})"


_SHARED: dict[McpServer, McpConnection] = {}
_LISTED: dict[McpServer, list[Any]] = {}
_LOCKS: dict[McpServer, asyncio.Lock] = {}
_SPECS: weakref.WeakKeyDictionary[McpServer, list[dict[str, Any]]] = weakref.WeakKeyDictionary()


def check_servers(owner: str, servers: Any) -> None:
    """Raise :class:`~mint_envkit.errors.ToolDefinitionError` unless ``servers`` is a list of McpServer.

    Example::

        check_servers("MyEnv", [McpServer.stdio([sys.executable, "server.py"])])  # fine
    """
    if not isinstance(servers, list | tuple) or not all(isinstance(s, McpServer) for s in servers):
        raise ToolDefinitionError(
            f"{owner}.mcp_servers must be a list of McpServer (McpServer.stdio([...]) or "
            f"McpServer.http(url, ...)), got {servers!r}"
        )


def known_specs(servers: Sequence[McpServer]) -> list[dict[str, Any]]:
    """The tool schemas these servers listed the last time one was started (empty before).

    Example::

        known_specs(MyEnv.mcp_servers)  # [] before the first episode's setup
    """
    return [spec for server in servers for spec in _SPECS.get(server, [])]


async def _shared(server: McpServer) -> tuple[McpConnection, list[Any]]:
    """The shared connection to ``server`` (started, or restarted if it died). MCP loop."""
    lock = _LOCKS.setdefault(server, asyncio.Lock())
    async with lock:
        connection = _SHARED.get(server)
        if connection is None or not await connection.responds():
            if connection is not None:  # it died (or hangs): end it, start a new one
                await connection.stop()
            connection = McpConnection(server)
            _LISTED[server] = await connection.open()
            _SHARED[server] = connection
        return connection, _LISTED[server]


def _close_soon(connections: list[McpConnection]) -> None:
    for connection in connections:
        connection.close_soon()


class McpTools:
    """The MCP tools of one episode, and the per-episode servers it started.

    :class:`~mint_envkit.ToolEnv` opens one before the episode's first observation
    and closes it when the episode ends, is aborted, or raises. If it is dropped
    unclosed, its servers are closed when it is garbage-collected.

    Example::

        episode = await McpTools.open("MyEnv", MyEnv.mcp_servers, taken={"add"})
        [spec["function"]["name"] for spec in episode.specs]  # ['count', 'pid']
        await episode.close()
    """

    def __init__(self) -> None:
        self.tools: dict[str, McpTool] = {}
        self.connections: list[McpConnection] = []
        """The per-episode connections (shared ones are not closed with the episode)."""
        self._finalizer = weakref.finalize(self, _close_soon, self.connections)

    @classmethod
    async def open(cls, owner: str, servers: Sequence[McpServer], taken: set[str]) -> McpTools:
        """Start or join every server and gather its tools; ``taken``: names already used.

        Raises:
            EnvError: a server could not be started or listed.
            ToolDefinitionError: two tools share a name (set ``prefix=``).
        """
        episode = cls()
        try:
            for server in servers:
                if server.per_episode:
                    connection = McpConnection(server)
                    episode.connections.append(connection)
                    listed = await on_mcp_loop(connection.open())
                else:
                    connection, listed = await on_mcp_loop(_shared(server))
                made = [McpTool(item, connection) for item in listed]
                _SPECS[server] = [t.schema for t in made]
                for item in made:
                    if item.name in taken or item.name in episode.tools:
                        raise ToolDefinitionError(
                            f"{owner}: MCP server {server.label} lists a tool named "
                            f"{item.name!r}, a name already taken; give the server a "
                            "prefix (McpServer.stdio(..., prefix='name.'))"
                        )
                    episode.tools[item.name] = item
        except BaseException:
            await episode.close()
            raise
        return episode

    @property
    def specs(self) -> list[dict[str, Any]]:
        """The tools' schemas, for the chat template's ``tools=``."""
        return [t.schema for t in self.tools.values()]

    async def close(self) -> None:
        """Stop this episode's own servers; safe to call twice, and when cancelled."""
        connections = list(self.connections)
        self.connections.clear()
        self._finalizer.detach()
        _close_soon(connections)  # the MCP loop closes them all, even if this task is cancelled
        for connection in connections:
            await connection.close()
