"""The log of an MCP server process the kit started: what it writes on stderr, capped.

A server's stderr (and, for an HTTP server, its stdout) goes to a pipe the kit reads
on the MCP loop (:func:`relay`); the first :data:`MAX_LOG_BYTES` of it are written on
to the server's ``stderr=`` file (or this process's stderr), then one line says how
much more came, and the rest is read and dropped, so a server that logs without end
(or a tool that makes it print megabytes) cannot fill the disk or the terminal, and
never blocks on a full pipe. Before, the file was handed to the server as it is and
grew without bound.

Example::

    # not run: needs a started process
    from mint_envkit.tools.mcp_log import LogSink, relay

    sink = LogSink(sys.stderr, "MCP server 'notes'")
    task = asyncio.ensure_future(relay(process.stderr, sink))
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from typing import IO

MAX_LOG_BYTES = 1 << 20
"""The bytes of one server process's log the kit writes on (1 MiB); the rest is dropped."""
_CHUNK = 1 << 16


class LogSink:
    """Where one server process's log goes: the first :data:`MAX_LOG_BYTES`, then a note.

    Example::

        import io

        sink = LogSink(io.StringIO(), "MCP server 'x'", limit=4)
        sink.write(b"abcdef")  # writes 'abcd', then a line saying the log was cut
        assert sink.dropped == 2
    """

    def __init__(self, out: IO[str], label: str, limit: int = MAX_LOG_BYTES) -> None:
        self.out = out
        self.label = label
        self.left = limit
        self.limit = limit
        self.dropped = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def _emit(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed or full destination
            self.out.write(text)
            self.out.flush()

    def write(self, data: bytes) -> None:
        """Take the next bytes of the log."""
        if self.left > 0:
            kept = data[: self.left]
            self.left -= len(kept)
            self._emit(self._decoder.decode(kept, final=self.left == 0))
            if self.left == 0:
                self._emit(
                    f"\n[mint-envkit: {self.label} wrote more than {self.limit} bytes of log; "
                    "the rest is dropped]\n"
                )
            data = data[len(kept) :]
        self.dropped += len(data)


async def relay(stream: asyncio.StreamReader | None, sink: LogSink) -> None:
    """Read ``stream`` to its end into ``sink`` (run on the MCP loop).

    Example::

        # not run: needs a started process
        await relay(process.stderr, LogSink(sys.stderr, "MCP server 'x'"))
    """
    if stream is None:
        return
    with contextlib.suppress(OSError, ConnectionError):
        while chunk := await stream.read(_CHUNK):
            sink.write(chunk)
