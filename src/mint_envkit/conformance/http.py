"""The server's error answers, as the SDK received them, and the service a run uses.

The SDK retries every 5xx for up to five minutes and raises nothing meanwhile, so a
row whose call the server answers with a 500 would only time out, its message lost.
:class:`ServerErrors` is an ``httpx`` response hook on the SDK's own HTTP client
(:func:`conformance_service`): it records every 5xx answer (status, route, the
server's message), and a row fails at the first 500 or 501 with them
(:func:`mint_envkit.conformance.rows.run_checks`); a 502-504 (a proxy or a restart)
is left to the SDK's retries and shown if the row then times out.

Example::

    # not run: needs a running backend
    errors = ServerErrors()
    async with conformance_service(connection, errors) as service:
        rows = await run_checks(CHECKS, Probe(service=service, model=m, dtype="float32"),
                                timeout_s=120, errors=errors)
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import attrs

from mint_envkit.rollouts.backend import Connection, close_session

FATAL_STATUSES = (500, 501)
"""The 5xx answers a row stops at: the server's own error, and "not implemented"."""


@attrs.frozen
class ErrorAnswer:
    """One 5xx answer: the request's method and path, the status, the server's message.

    Example::

        str(ErrorAnswer("POST", "/api/v1/forward", 500, "the engine crashed"))
        # 'HTTP 500 from POST /api/v1/forward: the engine crashed'
    """

    method: str
    path: str
    status: int
    message: str

    def __str__(self) -> str:
        return f"HTTP {self.status} from {self.method} {self.path}: {self.message}"


def _message(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "detail", "message"):
            if isinstance(body.get(key), str):
                return body[key]
    text = " ".join(response.text.split())
    return text[:300] or "(no body)"


class ServerErrors:
    """Every 5xx answer the SDK received, in order; rows wait on it for a 500 or 501.

    Example::

        errors = ServerErrors()
        errors.mark(), errors.fatal_since(0)   # (0, None)
    """

    def __init__(self) -> None:
        self._seen: list[ErrorAnswer] = []
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def on_response(self, response: Any) -> None:
        """The ``httpx`` response hook (runs on the SDK's event loop).

        Example::

            # not run: httpx calls it
            httpx.AsyncClient(event_hooks={"response": [errors.on_response]})
        """
        if response.status_code < 500:
            return
        await response.aread()
        answer = ErrorAnswer(
            response.request.method,
            response.request.url.path,
            response.status_code,
            _message(response),
        )
        with self._lock:
            self._seen.append(answer)
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # a loop that has closed
                loop.call_soon_threadsafe(event.set)

    def mark(self) -> int:
        """How many answers are recorded so far (where a row starts looking).

        Example::

            ServerErrors().mark()   # 0
        """
        with self._lock:
            return len(self._seen)

    def fatal_since(self, mark: int) -> ErrorAnswer | None:
        """The first 500 or 501 recorded after ``mark``, else None.

        Example::

            ServerErrors().fatal_since(0)   # None
        """
        with self._lock:
            return next((a for a in self._seen[mark:] if a.status in FATAL_STATUSES), None)

    def last_since(self, mark: int) -> ErrorAnswer | None:
        """The last 5xx recorded after ``mark``, else None.

        Example::

            ServerErrors().last_since(0)   # None
        """
        with self._lock:
            return self._seen[-1] if len(self._seen) > mark else None

    async def wait_fatal(self, mark: int) -> ErrorAnswer:
        """Wait until a 500 or 501 is recorded after ``mark``; return it.

        Example::

            # not run: waits for the server's error
            answer = await errors.wait_fatal(errors.mark())
        """
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            self._waiters.append(entry)
        try:
            while (answer := self.fatal_since(mark)) is None:
                await event.wait()
                event.clear()
            return answer
        finally:
            with self._lock:
                self._waiters.remove(entry)


@contextlib.asynccontextmanager
async def conformance_service(connection: Connection, errors: ServerErrors) -> AsyncIterator[Any]:
    """A ``mint.ServiceClient`` whose HTTP client reports every 5xx to ``errors``.

    Its HTTP client has the SDK's own timeouts and limits; the session is closed when
    the block ends.

    Example::

        # not run: needs a running backend
        async with conformance_service(connection, errors) as service:
            caps = await service.get_server_capabilities_async()
    """
    import httpx
    import mint

    client = httpx.AsyncClient(
        timeout=httpx.Timeout(60.0, connect=5.0),
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=20),
        event_hooks={"response": [errors.on_response]},
    )
    service = await asyncio.to_thread(
        mint.ServiceClient,
        base_url=connection.base_url,
        api_key=connection.api_key,
        http_client=client,
    )
    try:
        yield service
    finally:
        close_session(service)
