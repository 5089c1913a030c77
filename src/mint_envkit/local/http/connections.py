"""Connections the server holds: each request read within a time, and a cap on how many are open.

uvicorn's HTTP protocol (h11) closes a keep-alive connection that stays idle after a
response, but it waits without end for a request that never comes or comes half
(headers never finished, a body that stops), and it accepts every connection: issue
46's probe opened 1,100 half-sent requests against a 1,024 open-file limit, and
``healthz`` and the SDK hung. :func:`guarded_protocol` makes the server's protocol
class:

- **a request is read within** ``Limits.request_read_s`` (30 s): from the connection's
  opening, or from the first byte after the last response, to the request's last body
  byte; past it the connection is closed (a half-read request's handler sees the
  client gone). A request being answered, and an idle connection between requests
  (uvicorn's keep-alive timeout), are not timed here.
- **at most** ``Limits.max_connections`` (256) **are open**: a new connection past it
  closes the open one that has waited longest without a request being answered (one
  still being read, or idle); when every open one is being answered, the new one is
  closed at once.

Example::

    from mint_envkit.local.http.connections import guarded_protocol
    from mint_envkit.local.http.limits import Limits

    protocol = guarded_protocol(Limits(request_read_s=10.0, max_connections=64))
    # uvicorn.Config(app, http=protocol, ...)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from mint_envkit.local.http.limits import Limits

logger = logging.getLogger("mint_envkit.local")


def guarded_protocol(limits: Limits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the read deadline and the connection cap of ``limits``.

    Example::

        protocol = guarded_protocol(Limits())
        assert protocol.read_s == 30.0 and protocol.max_connections == 256
    """

    class GuardedH11Protocol(H11Protocol):
        read_s = float(limits.request_read_s)
        max_connections = int(limits.max_connections)

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            self._read_timer: Any = None
            self._since = time.monotonic()
            self._refused = False
            open_now = [c for c in self.connections if not c.transport.is_closing()]
            if len(open_now) >= self.max_connections and not self._evict(open_now):
                logger.warning(
                    "refused a connection: %d are open (Limits.max_connections), each with "
                    "a request being answered",
                    len(self.connections),
                )
                self._refused = True
                self.transport = transport
                transport.close()
                return
            super().connection_made(transport)
            self._start_reading()

        def _evict(self, open_now: list[Any]) -> bool:
            """Close the open connection waiting longest without a request being answered."""
            waiting = [c for c in open_now if getattr(c, "_answering", None) is False]
            if not waiting:
                return False
            oldest = min(waiting, key=lambda c: c._since)
            oldest._close("the server was at its connection limit")
            return True

        @property
        def _answering(self) -> bool:
            return (
                self.cycle is not None
                and not self.cycle.more_body
                and not (self.cycle.response_complete)
            )

        def _start_reading(self) -> None:
            if self._read_timer is None:
                self._since = time.monotonic()
                self._read_timer = self.loop.call_later(self.read_s, self._close, "read timeout")

        def _stop_reading(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _close(self, why: str) -> None:
            self._stop_reading()
            if not self.transport.is_closing():
                logger.debug("closing a connection from %s: %s", self.client, why)
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self.cycle is None or self.cycle.response_complete:
                self._start_reading()  # the first bytes of the next request
            super().data_received(data)
            if self.cycle is not None and not self.cycle.more_body:
                self._stop_reading()  # the whole request is in: it is being answered

        def on_response_complete(self) -> None:
            self._stop_reading()
            self._since = time.monotonic()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_reading()
            if not self._refused:
                super().connection_lost(exc)

    return GuardedH11Protocol
