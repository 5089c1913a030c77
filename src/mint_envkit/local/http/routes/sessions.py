"""Route handlers: client setup, sessions, health, stats and ``retrieve_future``.

Every handler is ``async (backend, request, body) -> body | Response``; the
route table is :data:`mint_envkit.local.http.app.ROUTES`.

Example::

    import tempfile
    from starlette.requests import Request
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": []})
    assert (await healthz(backend, request, None))["status"] == "ok"   # 'instance': '3f9c...'
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from mint_envkit.local.http.requests import ProtocolError, parse_paging, parse_retrieve_future
from mint_envkit.local.http.responses import JSONResponse, error_response
from mint_envkit.local.http.state import Backend


def _constant(payload: dict[str, Any]) -> Callable[[Backend, Request, Any], Awaitable[dict]]:
    """A handler that always answers ``payload`` (a copy)."""

    async def handler(b: Backend, request: Request, body: Any) -> dict:
        return dict(payload)

    return handler


client_config = _constant(
    {
        "pjwt_auth_enabled": True,
        "credential_default_source": "api_key",
        "parallel_fwdbwd_chunks": True,
        "proto_write_fwdbwd": False,
        "enable_grpc_retrieve_future": False,
        "sample_no_retries": False,
    }
)
"""``POST /client/config``: the SDK's client settings."""


async def session_heartbeat(b: Backend, request: Request, body: Any) -> dict:
    """``POST /session_heartbeat``: the session is alive (it is not released as idle).

    Example::

        backend.session("session-1")
        answer = await session_heartbeat(backend, request, {"session_id": "session-1"})
        assert answer == {"type": "session_heartbeat"}   # and session-1 is not idle now
    """
    session_id = body.get("session_id") if isinstance(body, dict) else None
    if isinstance(session_id, str) and session_id in b.sessions:
        b.reaper.touch_session(session_id)
    return {"type": "session_heartbeat"}


telemetry = _constant({"status": "accepted"})
"""``POST /telemetry``: accepted and dropped."""


async def healthz(b: Backend, request: Request, body: Any) -> dict:
    """``GET /healthz``: ``{"status": "ok", "instance": ...}``; ``instance`` is new each time
    a server starts, so a client can tell a restarted backend from the one it knew.

    Example::

        body = await healthz(backend, request, None)   # {'status': 'ok', 'instance': '3f9c0a1b2c3d4e5f'}
        assert body["instance"] == backend.instance_id and len(body["instance"]) == 16
    """
    return {"status": "ok", "instance": b.instance_id}


async def auth_token(b: Backend, request: Request, body: Any) -> dict:
    """A JWT signed by this server (``POST /auth/token``), for the key checked by the guard.

    Example::

        jwt = (await auth_token(backend, request, None))["jwt"]
        assert jwt.startswith("eyJ") and backend.guard.token_ok(jwt)
    """
    return {"jwt": b.guard.issue_token()}


async def create_session(b: Backend, request: Request, body: Any) -> dict:
    """A new session id (``POST /create_session``).

    Example::

        session_id = (await create_session(backend, request, None))["session_id"]  # 'session-...'
        assert session_id.startswith("session-") and session_id in backend.sessions
    """
    session_id = f"session-{uuid.uuid4().hex[:12]}"
    b.session(session_id)
    return {"type": "create_session", "session_id": session_id}


async def capabilities(b: Backend, request: Request, body: Any) -> dict:
    """``GET /get_server_capabilities``: the served base models.

    Example::

        body = await capabilities(backend, request, None)
        assert body == {"supported_models": [{"model_name": "mint-envkit/tiny-qwen3-small"}]}
    """
    return {"supported_models": [{"model_name": m} for m in b.models]}


async def stats(b: Backend, request: Request, body: Any) -> dict:
    """``GET /mint_envkit/stats``: request counts, pending futures, batches, uptime.

    Example::

        backend.count("asample")   # the app counts every request
        body = await stats(backend, request, None)
        assert body["request_counts"]["asample"] >= 1 and body["models"] == backend.models
    """
    return {
        "request_counts": dict(b.request_counts()),
        "pending_futures": b.futures.pending,
        "models": b.models,
        "training_runs": len(b.model_registry),
        "samplers": len(b.samplers),
        "sample_batches": list(b.batcher.batches),
        "latency_ms": b.latency_s * 1000.0,
        "uptime_s": time.time() - b.started_at,
    }


async def retrieve_future(b: Backend, request: Request, body: dict) -> Any:
    """``POST /retrieve_future``: the result, or try_again after a long poll.

    "Try again" is an HTTP 408 with the ``{"type": "try_again", ...}`` body:
    the SDK re-polls a 408 at once and quietly, whereas a 200 try_again body
    makes it log ``Retrying request ... because of try_again`` at WARNING on
    every poll (``tinker/lib/api_future_impl.py``, ``_fetch_via_rest`` and
    ``_rest_status_error_to_transport_error``). The long poll (30 s) stays
    under the SDK's 45 s read timeout.

    Example::

        rid = backend.futures.create("optim_step")
        backend.futures.set_result(rid, {"metrics": {}})   # the operation finished
        assert await retrieve_future(backend, request, {"request_id": rid}) == {"metrics": {}}
        answer = await retrieve_future(backend, request, {"request_id": "req-never"})
        assert answer.status_code == 404
    """
    request_id = parse_retrieve_future(body)
    try:
        payload = await b.futures.wait(request_id, b.long_poll_s)
    except KeyError:
        return error_response(
            404,
            f"unknown request_id {request_id!r}: this server never issued it, or has "
            "restarted since",
        )
    if payload is None:
        body = {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        return JSONResponse(body, status_code=408)
    return payload


async def list_sessions(b: Backend, request: Request, body: Any) -> dict:
    """``GET /sessions``: a page of session ids.

    Example::

        backend.session("session-a")
        page = Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                        "query_string": b"limit=100"})
        assert "session-a" in (await list_sessions(backend, page, None))["sessions"]
    """
    offset, limit = parse_paging(request.query_params, 20)
    ids = list(b.sessions)
    return {"sessions": ids[offset : offset + limit]}


async def get_session(b: Backend, request: Request, body: Any) -> dict:
    """``GET /sessions/{session_id}``: its training runs and samplers.

    Example::

        backend.session("session-b")["training_run_ids"].append("model-1")
        one = Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                       "path_params": {"session_id": "session-b"}})
        assert (await get_session(backend, one, None))["training_run_ids"] == ["model-1"]
    """
    session_id = request.path_params["session_id"]
    if session_id not in b.sessions:
        raise ProtocolError(404, f"unknown session {session_id!r}")
    rec = b.sessions[session_id]
    return {
        "training_run_ids": list(rec["training_run_ids"]),
        "sampler_ids": list(rec["sampler_ids"]),
    }
