"""Route handlers: the REST listings (training runs, checkpoints, samplers) and deletes.

Every handler is ``async (backend, request, body) -> body | Response``.

Example::

    await list_checkpoints(backend, request, None)   # {'checkpoints': [...]}
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from mint_envkit.local.http.requests import (
    ProtocolError,
    parse_delete_checkpoint,
    parse_paging,
    parse_run_id,
    run_id_of,
)
from mint_envkit.local.http.responses import (
    checkpoint_json,
    cursor_json,
    error_response,
    iso_time,
)
from mint_envkit.local.http.state import Backend


async def _checkpoints_of(b: Backend, model_id: str | None) -> list[dict[str, Any]]:
    records = await b.engine_call(lambda e: list(e.list_checkpoints(model_id)))
    items = [checkpoint_json(r) for r in records]
    items.sort(key=lambda c: c["time"], reverse=True)
    return items


async def _training_run_json(b: Backend, model_id: str) -> dict[str, Any]:
    info = b.model_registry[model_id]
    try:
        checkpoints = await _checkpoints_of(b, model_id)
    except ProtocolError:
        checkpoints = []
    last_training = next((c for c in checkpoints if c["checkpoint_type"] == "training"), None)
    last_sampler = next((c for c in checkpoints if c["checkpoint_type"] == "sampler"), None)
    return {
        "training_run_id": model_id,
        "base_model": info["base_model"],
        "model_owner": "local",
        "is_lora": True,
        "corrupted": False,
        "lora_rank": info.get("lora_rank"),
        "last_request_time": iso_time(info.get("last_request_time", time.time())),
        "last_checkpoint": last_training,
        "last_sampler_checkpoint": last_sampler,
        "user_metadata": info.get("user_metadata") or None,
    }


async def list_training_runs(b: Backend, request: Request, body: Any) -> dict:
    """``GET /training_runs``: a page of training runs, with their last checkpoints.

    Example::

        (await list_training_runs(backend, request, None))["cursor"]["total_count"]
    """
    offset, limit = parse_paging(request.query_params, 20)
    ids = list(b.model_registry)
    page = ids[offset : offset + limit]
    return {
        "training_runs": [await _training_run_json(b, m) for m in page],
        "cursor": cursor_json(offset, limit, len(ids)),
    }


async def get_training_run(b: Backend, request: Request, body: Any) -> dict:
    """``GET /training_runs/{run_id}``.

    Example::

        (await get_training_run(backend, request, None))["base_model"]
    """
    model_id = request.path_params["run_id"]
    b.require_model(model_id)
    return await _training_run_json(b, model_id)


async def list_checkpoints(b: Backend, request: Request, body: Any) -> dict:
    """``GET /training_runs/{run_id}/checkpoints``: newest first.

    Example::

        (await list_checkpoints(backend, request, None))["checkpoints"][0]["checkpoint_id"]
    """
    model_id = parse_run_id(request.path_params["run_id"])
    return {"checkpoints": await _checkpoints_of(b, model_id)}


async def delete_checkpoint(b: Backend, request: Request, body: Any) -> Response:
    """``DELETE /training_runs/{run_id}/checkpoints/{checkpoint_id}``: 204 when deleted.

    Example::

        (await delete_checkpoint(backend, request, None)).status_code   # 204
    """
    path = parse_delete_checkpoint(
        request.path_params["run_id"], request.path_params["checkpoint_id"]
    )
    await b.engine_call(lambda e: e.delete_checkpoint(path))
    return Response(status_code=204)


async def list_user_checkpoints(b: Backend, request: Request, body: Any) -> dict:
    """``GET /checkpoints``: a page of the checkpoints of this server's runs.

    The state directory may be shared by every project on the machine; this
    listing shows only the runs this server created or was asked about by id
    (``load_weights``, sampling from a path). Any run's checkpoints are listed by
    ``GET /training_runs/{run_id}/checkpoints``; a server started with
    ``list_all_checkpoints`` lists every run.

    Example::

        (await list_user_checkpoints(backend, request, None))["cursor"]["total_count"]
    """
    offset, limit = parse_paging(request.query_params, 100)
    ours = set(b.model_registry) | b.known_runs
    items = [
        c
        for c in await _checkpoints_of(b, None)
        if b.list_all_checkpoints or run_id_of(c["tinker_path"]) in ours
    ]
    return {
        "checkpoints": items[offset : offset + limit],
        "cursor": cursor_json(offset, limit, len(items)),
    }


async def get_sampler(b: Backend, request: Request, body: Any) -> dict:
    """``GET /samplers/{sampler_id}``: its base model and path.

    Example::

        (await get_sampler(backend, request, None))["base_model"]
    """
    sampler_id = request.path_params["sampler_id"]
    rec = b.samplers.get(sampler_id)
    if rec is None:
        raise ProtocolError(404, f"unknown sampler {sampler_id!r}")
    return rec


async def not_supported(b: Backend, request: Request, body: Any) -> Any:
    """Any other path: a 404 that says the local backend does not support it.

    Example::

        (await not_supported(backend, request, None)).status_code   # 404
    """
    return error_response(
        404,
        f"{request.method} {request.url.path} is not supported by the local mint-envkit "
        "backend (see docs/local-backend.md for what is)",
    )
