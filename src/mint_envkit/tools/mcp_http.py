"""HTTP for MCP within a bound: :func:`bounded_http_client`, an HTTP client whose JSON bodies are read within :data:`~mint_envkit.tools.mcp_cut.MAX_MCP_MESSAGE_BYTES`.

The SDK's streamable-HTTP client reads a JSON response body whole (``aread()``): a
50 MB tool result was read, parsed and held whole before the kit cut it. Here the
client's transport reads each ``application/json`` body as it comes, keeps at most
the bound (and the body's last bytes), and answers a longer one with the
:func:`~mint_envkit.tools.mcp_cut.stand_in` for the request it answers (the request's
id and method are read from the request the body answers). It asks for bodies
without compression (``Accept-Encoding: identity``), so the bound is on the bytes
that are parsed. Server-sent events keep the SDK's own bound on one event.

Example::

    # not run: needs a server
    from mint_envkit.tools.mcp_http import bounded_http_client

    client = await stack.enter_async_context(bounded_http_client())
    transport = streamable_http_client(url, http_client=client)
"""

from __future__ import annotations

import json
from typing import Any

from mint_envkit.tools.mcp_cut import MAX_MCP_MESSAGE_BYTES, Bounded, many_items, stand_in

_DROPPED_HEADERS = (b"content-length", b"content-encoding", b"transfer-encoding")


def _waiting(content: bytes) -> dict[Any, str]:
    """The request in an MCP POST body, as ``{id: method}`` (empty for a notification)."""
    try:
        message = json.loads(content)
    except ValueError:
        return {}
    if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
        return {message["id"]: message["method"]}
    return {}


def bounded_http_client(limit: int = MAX_MCP_MESSAGE_BYTES) -> Any:
    """An ``httpx2.AsyncClient`` with the SDK's MCP timeouts whose JSON bodies are read within ``limit``.

    Use it as an async context manager (it holds connections).

    Example::

        # not run: needs a server
        async with bounded_http_client() as client:
            ...
    """
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    class BoundedTransport(httpx2.AsyncBaseTransport):
        """Reads ``application/json`` bodies within ``limit``; passes the rest on."""

        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = "identity"
            response = await self.inner.handle_async_request(request)
            kind = response.headers.get("content-type", "").lower()
            if not kind.startswith("application/json"):
                return response
            body = Bounded(limit)
            try:
                async for chunk in response.stream:
                    body.add(chunk)
            finally:
                await response.aclose()
            data = body.data
            waiting = _waiting(request.content)
            answers = next(iter(waiting), None)
            if body.cut:
                standing = stand_in(body, waiting, answers=answers)
                data = json.dumps(standing).encode() if standing is not None else b""
            elif (many := many_items(body, waiting, answers=answers)) is not None:
                data = json.dumps(many).encode()
            headers = [
                (name, value)
                for name, value in response.headers.raw
                if name.lower() not in _DROPPED_HEADERS
            ]
            return httpx2.Response(
                response.status_code,
                headers=headers,
                content=data,
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(timeout=timeout, transport=BoundedTransport())
