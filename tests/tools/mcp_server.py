"""A small real MCP server for the tests, built with the SDK's own ``MCPServer``.

Run: ``python mcp_server.py`` (stdio) or ``python mcp_server.py --port 8123`` (streamable HTTP).
Tools: ``add`` (stateless), ``count`` (a counter kept in the process), ``pid``,
``fail`` (raises), ``nap`` (sleeps), ``picture`` (text and an image), ``die`` (the
process exits), ``spawn`` (starts two children, one of them with ``setsid``), ``huge``
(a text of any length), ``many`` (that many text blocks), ``shout`` (bytes of log on stderr), ``stop_keeper`` / ``stop_group`` (a child that SIGSTOPs the keeper, or its process group).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("envkit-test", log_level="CRITICAL")
_count = [0]


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


@server.tool()
def count() -> int:
    """Add one to this server's counter and return it."""
    _count[0] += 1
    return _count[0]


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def fail(reason: str) -> str:
    """Always raise, with the reason given."""
    raise ToolError(reason)


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return "awake"


@server.tool()
def picture():  # no return type: mixed content blocks, no output schema
    """A caption and a tiny PNG."""
    return ["a red dot", Image(data=b"\x89PNG\r\n", format="png")]


@server.tool()
def spawn() -> str:
    """Start two sleeping children: one in this server's process group, one with setsid."""
    in_group = subprocess.Popen(["sleep", "300"])
    own_session = subprocess.Popen(["sleep", "300"], start_new_session=True)
    return f"{in_group.pid} {own_session.pid}"


STOPPER = """
import os, signal, sys, time
target = int(sys.argv[1])
if sys.argv[2] == "group":
    os.killpg(0, signal.SIGSTOP)  # its own process group: the server's
else:
    os.kill(target, signal.SIGSTOP)
time.sleep(300)
"""


def _stopper(how: str) -> str:
    import sys

    sibling = subprocess.Popen(["sleep", "300"], start_new_session=True)
    stopper = subprocess.Popen([sys.executable, "-c", STOPPER, str(os.getppid()), how])
    return f"{sibling.pid} {stopper.pid} {os.getppid()}"


@server.tool()
def stop_keeper() -> str:
    """Start a setsid sleeper and a process that SIGSTOPs the kit's keeper (this server's parent)."""
    return _stopper("keeper")


@server.tool()
def stop_group() -> str:
    """Start a setsid sleeper and a process that SIGSTOPs its own process group (the server's)."""
    return _stopper("group")


@server.tool()
def huge(chars: int) -> str:
    """A text of that many x."""
    return "x" * chars


@server.tool()
def many(count: int):  # no return type: one text block per item
    """That many short text blocks."""
    return [f"item {i}" for i in range(count)]


@server.tool()
def many_values(count: int) -> list[int]:
    """That many numbers (structured content, and its JSON as text)."""
    return list(range(count))


@server.tool()
def shout(count: int) -> str:
    """Write that many bytes of log to stderr."""
    import sys

    for _ in range(count // 65536):
        sys.stderr.write("e" * 65536)
    sys.stderr.write("e" * (count % 65536))
    sys.stderr.flush()
    return "done"


@server.tool()
def die() -> str:
    """End this server's process at once."""
    os._exit(3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()
    if args.port is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
