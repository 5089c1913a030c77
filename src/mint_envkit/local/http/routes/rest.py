"""Route handlers: the REST listings (training runs, checkpoints, samplers) and deletes.

Every handler is ``async (backend, request, body) -> body | Response``.

Example::

    import tempfile
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())

    def get(path="/", query=b"", **path_params):   # a GET request and its path parameters
        return Request({"type": "http", "method": "GET", "path": path, "headers": [],
                        "query_string": query, "path_params": path_params})

    def saved_run(e):   # on the engine worker: a training run with one checkpoint
        model_id = e.create_lora("mint-envkit/tiny-qwen3-small", rank=4)
        e.save_state(model_id, "step-1")
        return model_id

    mid = await backend.engine_call(saved_run)
    backend.model_registry[mid] = {   # as the create_model route records it
        "model_id": mid, "base_model": "mint-envkit/tiny-qwen3-small", "lora_rank": 4}
    body = await list_checkpoints(backend, get(run_id=mid), None)   # {'checkpoints': [...]}
    assert [c["checkpoint_id"] for c in body["checkpoints"]] == ["weights/step-1"]
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

        body = await list_training_runs(backend, get(query=b"limit=5"), None)
        assert body["cursor"] == {"offset": 0, "limit": 5, "total_count": 1}
        assert body["training_runs"][0]["last_checkpoint"]["checkpoint_id"] == "weights/step-1"
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

        run = await get_training_run(backend, get(run_id=mid), None)
        assert (run["base_model"], run["lora_rank"]) == ("mint-envkit/tiny-qwen3-small", 4)
    """
    model_id = request.path_params["run_id"]
    b.require_model(model_id)
    return await _training_run_json(b, model_id)


async def list_checkpoints(b: Backend, request: Request, body: Any) -> dict:
    """``GET /training_runs/{run_id}/checkpoints``: newest first.

    Example::

        body = await list_checkpoints(backend, get(run_id=mid), None)
        assert body["checkpoints"][0]["checkpoint_id"] == "weights/step-1"   # the newest
    """
    model_id = parse_run_id(request.path_params["run_id"])
    return {"checkpoints": await _checkpoints_of(b, model_id)}


async def delete_checkpoint(b: Backend, request: Request, body: Any) -> Response:
    """``DELETE /training_runs/{run_id}/checkpoints/{checkpoint_id}``: 204 when deleted.

    Example::

        await backend.engine_call(lambda e: e.save_state(mid, "scratch"))
        one = get(run_id=mid, checkpoint_id="weights/scratch")
        assert (await delete_checkpoint(backend, one, None)).status_code == 204
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

        body = await list_user_checkpoints(backend, get(), None)
        assert body["cursor"]["total_count"] == 1   # this server's run, step-1
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

        backend.samplers.add("sampler-1", base_model="mint-envkit/tiny-qwen3-small", model_path=None)
        rec = await get_sampler(backend, get(sampler_id="sampler-1"), None)
        assert rec["base_model"] == "mint-envkit/tiny-qwen3-small"
    """
    sampler_id = request.path_params["sampler_id"]
    rec = b.samplers.get(sampler_id)
    if rec is None:
        raise ProtocolError(404, f"unknown sampler {sampler_id!r}")
    return rec


async def not_supported(b: Backend, request: Request, body: Any) -> Any:
    """Any other path: a 404 that says the local backend does not support it.

    Example::

        answer = await not_supported(backend, get("/api/v1/no_such_thing"), None)
        assert answer.status_code == 404   # "GET /api/v1/no_such_thing is not supported by ..."
    """
    return error_response(
        404,
        f"{request.method} {request.url.path} is not supported by the local mint-envkit "
        "backend (see docs/local-backend.md for what is)",
    )
