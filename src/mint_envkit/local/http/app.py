"""The Starlette app: the declared route table, body reading and error answers.

:data:`ROUTES` lists every endpoint (path, name, handler, methods, whether it
takes a JSON body); :func:`build_app` binds them to a
:class:`~mint_envkit.local.http.state.Backend`. Each endpoint counts its
request, lets the backend's :class:`~mint_envkit.local.http.guard.Guard`
refuse what a browser or a client without the key sends, reads the body
(413 past the route's limit, before reading it when Content-Length says so;
big bodies are decoded in a worker thread), calls its handler and turns a
:class:`~mint_envkit.local.http.requests.ProtocolError` into its 4xx answer.

Example::

    # not run: serves until stopped
    import uvicorn
    from mint_envkit.local.http.app import build_app
    from mint_envkit.local.http.state import Backend

    uvicorn.run(build_app(Backend(models=["mint-envkit/tiny-qwen3"])), port=8765)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mint_envkit.local.http.requests import THREAD_PARSE_BYTES, ProtocolError, parse_json_body
from mint_envkit.local.http.responses import JSONResponse, error_response
from mint_envkit.local.http.routes import mint, openai, rest, sampling, sessions, training
from mint_envkit.local.http.state import Backend

logger = logging.getLogger("mint_envkit.local.server")

Handler = Callable[[Backend, Request, Any], Awaitable[Any]]

_V1 = "/api/v1"


@attrs.frozen
class RouteSpec:
    """One endpoint: its path, name (the request-count key), handler and methods.

    ``body``: the handler takes the decoded JSON object (a POST body is read
    and size-checked either way).

    Example::

        spec = RouteSpec("/api/v1/healthz", "healthz", sessions.healthz, ("GET",))
        assert spec in ROUTES and not spec.body
    """

    path: str
    name: str
    handler: Handler
    methods: tuple[str, ...]
    body: bool = False


def _post(name: str, handler: Handler, path: str | None = None, *, body: bool = True) -> RouteSpec:
    return RouteSpec(f"{_V1}/{path or name}", name, handler, ("POST",), body)


def _get(name: str, handler: Handler, path: str | None = None) -> RouteSpec:
    return RouteSpec(f"{_V1}/{path or name}", name, handler, ("GET",))


ROUTES: tuple[RouteSpec, ...] = (
    # setup and sessions
    _post("client_config", sessions.client_config, "client/config", body=False),
    _post("auth_token", sessions.auth_token, "auth/token", body=False),
    _post("create_session", sessions.create_session, body=False),
    _post("session_heartbeat", sessions.session_heartbeat),
    _post("telemetry", sessions.telemetry, body=False),
    _get("healthz", sessions.healthz),
    _get("get_server_capabilities", sessions.capabilities),
    _get("stats", sessions.stats, "mint_envkit/stats"),
    # training clients and steps
    _post("create_model", training.create_model),
    _post("get_info", training.get_info),
    _post("unload_model", training.unload_model),
    _post("forward", training.forward),
    _post("forward_backward", training.forward_backward),
    _post("optim_step", training.optim_step),
    _post("save_weights", training.save_weights),
    _post("save_weights_for_sampler", training.save_weights_for_sampler),
    _post("load_weights", training.load_weights),
    _post("weights_info", training.weights_info),
    # MinT's own endpoints (mint.mint in the SDK)
    _post(
        "forward_backward_reverse_kl",
        mint.forward_backward_reverse_kl,
        "mint/forward_backward_reverse_kl",
    ),
    _post("interpolate_checkpoints", mint.interpolate, "mint/checkpoints/interpolate"),
    # sampling and futures
    _post("create_sampling_session", sampling.create_sampling_session),
    _post("asample", sampling.asample),
    _post("retrieve_future", sessions.retrieve_future),
    # REST
    _get("list_training_runs", rest.list_training_runs, "training_runs"),
    _get("get_training_run", rest.get_training_run, "training_runs/{run_id}"),
    _get("list_checkpoints", rest.list_checkpoints, "training_runs/{run_id}/checkpoints"),
    RouteSpec(
        f"{_V1}/training_runs/{{run_id}}/checkpoints/{{checkpoint_id:path}}",
        "delete_checkpoint",
        rest.delete_checkpoint,
        ("DELETE",),
    ),
    _get("list_user_checkpoints", rest.list_user_checkpoints, "checkpoints"),
    _get("list_sessions", sessions.list_sessions, "sessions"),
    _get("get_session", sessions.get_session, "sessions/{session_id}"),
    _get("get_sampler", rest.get_sampler, "samplers/{sampler_id}"),
    # the OpenAI-compatible door (routes/openai.py)
    RouteSpec("/v1/models", "openai_models", openai.list_models, ("GET",)),
    RouteSpec("/v1/chat/completions", "openai_chat", openai.chat_completions, ("POST",), True),
    RouteSpec("/v1/{rest:path}", "openai_unknown", openai.unknown, ("GET", "POST")),
    RouteSpec(
        "/{rest:path}",
        "not_supported",
        rest.not_supported,
        ("GET", "POST", "PUT", "DELETE", "PATCH"),
    ),
)
"""Every endpoint the server answers, in matching order (the last one catches the rest)."""

_UNCOUNTED = frozenset({"stats"})


def _too_big(size: int, limit: int, route: str) -> ProtocolError:
    return ProtocolError(
        413,
        f"{route} request body of {'over ' if size > limit else ''}{size} bytes is over this "
        f"server's limit of {limit} bytes for {route} (set by mint-envkit serve --max-body-mb "
        "and, for forward, forward_backward and asample, by --max-request-tokens / "
        "--max-sample-tokens); send smaller batches",
    )


async def _read_body(request: Request, limit: int, route: str) -> bytes:
    """The body, at most ``limit`` bytes.

    A larger declared Content-Length is refused before anything is read, and a
    chunked body as soon as it passes the limit (the 413 closes the connection).
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()) or len(declared) > 20:
            raise ProtocolError(400, f"Content-Length {declared[:40]!r} is not a byte count")
        if int(declared) > limit:
            raise _too_big(int(declared), limit, route)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise _too_big(limit, limit, route)  # stop reading: the connection is closed
        chunks.append(chunk)
    return b"".join(chunks)


async def _parse(raw: bytes) -> dict[str, Any]:
    if len(raw) > THREAD_PARSE_BYTES:
        return await asyncio.to_thread(parse_json_body, raw)
    return parse_json_body(raw)


def _endpoint(backend: Backend, spec: RouteSpec) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        if spec.name not in _UNCOUNTED:
            backend.count(spec.name)
        try:
            backend.guard.check(request.method, request.headers, route=spec.name, body=spec.body)
            backend.reaper.ensure_running()
            parsed: dict[str, Any] | None = None
            if request.method in ("POST", "PUT"):
                limit = backend.limits.body_bytes(spec.name, backend.max_body_bytes)
                raw = await _read_body(request, limit, spec.name)
                if spec.body:
                    parsed = await _parse(raw)
            result = await spec.handler(backend, request, parsed)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)
        except ProtocolError as err:  # always a 4xx: the SDK retries a 5xx for minutes
            if err.status == 413:  # the rest of the body is not read: close the connection
                return error_response(err.status, err.message, connection="close")
            return error_response(err.status, err.message)
        except Exception as err:
            logger.exception("%s %s failed", request.method, request.url.path)
            return error_response(
                500,
                f"internal error in the local backend ({type(err).__name__}: {err}); "
                "see the server log",
                **{"x-should-retry": "false"},
            )

    return endpoint


def build_app(backend: Backend) -> Starlette:
    """The Starlette app serving ``backend`` over the Tinker wire protocol (see :data:`ROUTES`).

    Example::

        import tempfile

        backend = Backend(models=["mint-envkit/tiny-qwen3-small"], preload=False,
                          state_dir=tempfile.mkdtemp())
        app = build_app(backend)   # then: uvicorn.run(app, port=8765)
        assert app.state.backend is backend
        assert len(app.routes) == len(ROUTES)
        backend.close()
    """
    routes = [
        Route(spec.path, _endpoint(backend, spec), methods=list(spec.methods), name=spec.name)
        for spec in ROUTES
    ]
    app = Starlette(routes=routes)
    app.state.backend = backend
    return app
