"""Route handlers: LoRA training clients (create, info, unload), training steps, weights.

Training requests go through :meth:`Backend.submit_training` (validated,
ordered by ``seq_id``, answered with a future). Every handler is
``async (backend, request, body) -> body | Response``.

Example::

    # `backend`, `request` and `result_of(answer)` as in the routes package example
    created = await create_model(backend, request, {
        "session_id": "s", "model_seq_id": 0, "base_model": "mint-envkit/tiny-qwen3-small",
        "lora_config": {"rank": 4}})
    mid = (await result_of(created))["model_id"]
    fwd = {"loss_fn": "cross_entropy", "data": [{
        "model_input": {"chunks": [{"tokens": [1, 2, 3], "type": "encoded_text"}]},
        "loss_fn_inputs": {"target_tokens": [2, 3, 4]}}]}
    await result_of(await forward_backward(backend, request, {
        "model_id": mid, "seq_id": 1, "forward_backward_input": fwd}))
    answer = await optim_step(backend, request, {"model_id": mid, "seq_id": 2,
                                                 "adam_params": {"learning_rate": 1e-3}})
    assert answer["model_id"] == mid   # {'request_id': 'req-...', 'model_id': mid}
    assert "metrics" in await result_of(answer)
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from starlette.requests import Request

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.http.datums import ForwardOp, parse_forward
from mint_envkit.local.http.requests import (
    THREAD_PARSE_BYTES,
    parse_create_model,
    parse_load_weights,
    parse_model_id_request,
    parse_optim_step,
    parse_save_weights,
    parse_save_weights_for_sampler,
    parse_weights_info,
    run_id_of,
)
from mint_envkit.local.http.responses import (
    forward_output_json,
    optim_metrics_json,
)
from mint_envkit.local.http.state import Backend

_LORA_FLAGS = ("train_mlp", "train_attn", "train_unembed")


async def create_model(b: Backend, request: Request, body: dict) -> dict:
    """``POST /create_model``: a LoRA training client on a served base model (a future).

    Example::

        answer = await create_model(backend, request, {"session_id": "s", "model_seq_id": 1,
                                                       "base_model": "mint-envkit/tiny-qwen3-small"})
        body = await result_of(answer)   # {'type': 'create_model', 'model_id': '...'}
        assert backend.require_model(body["model_id"])["lora_rank"] == 32   # the default rank
    """
    req = parse_create_model(body)
    base = b.require_base_model(req.base_model)
    lora = req.lora_config
    kwargs: dict[str, Any] = {}
    if lora is not None:
        kwargs = {"rank": lora.rank, "seed": lora.seed}
        kwargs.update({flag: getattr(lora, flag) for flag in _LORA_FLAGS})

    def fn(e: Any) -> tuple[str, dict[str, Any]]:
        model_id = e.create_lora(base, **kwargs)
        return model_id, dict(e.model_info(model_id))

    def on_success(result: tuple[str, dict[str, Any]]) -> None:
        model_id, info = result
        b.model_registry[model_id] = {
            "model_id": model_id,
            "base_model": info.get("base_model", base),
            "lora_rank": info.get("lora_rank", kwargs.get("rank")),
            "tokenizer_dir": info.get("tokenizer_dir"),
            "arch": info.get("arch"),
            **{flag: info.get(flag, kwargs.get(flag, True)) for flag in _LORA_FLAGS},
            "user_metadata": {str(k): str(v) for k, v in (req.user_metadata or {}).items()},
            "session_id": req.session_id,
            "last_request_time": time.time(),
        }
        b.session(req.session_id)["training_run_ids"].append(model_id)

    request_id = b.futures.create("create_model")
    b.start_op(request_id, fn, lambda r: {"type": "create_model", "model_id": r[0]}, on_success)
    return {"request_id": request_id}


async def get_info(b: Backend, request: Request, body: dict) -> dict:
    """``POST /get_info``: a training client's base model, tokenizer and LoRA rank.

    Example::

        info = await get_info(backend, request, {"model_id": mid})
        assert info["model_data"]["model_name"] == "mint-envkit/tiny-qwen3-small"
        assert info["lora_rank"] == 4
    """
    info = b.require_model(parse_model_id_request(body, "get_info"))
    await b.delay()
    return {
        "type": "get_info",
        "model_id": info["model_id"],
        "model_data": {
            "arch": info.get("arch"),
            "model_name": info["base_model"],
            "tokenizer_id": info.get("tokenizer_dir"),
        },
        "is_lora": True,
        "lora_rank": info.get("lora_rank"),
        "model_name": info["base_model"],
    }


async def unload_model(b: Backend, request: Request, body: dict) -> dict:
    """``POST /unload_model``: free a training client (a future); its model_id is then unknown.

    Example::

        created = await create_model(backend, request, {"session_id": "s", "model_seq_id": 2,
                                                        "base_model": "mint-envkit/tiny-qwen3-small"})
        other = (await result_of(created))["model_id"]
        await result_of(await unload_model(backend, request, {"model_id": other}))
        assert other not in backend.model_registry   # its model_id now answers 404
    """
    model_id = parse_model_id_request(body, "unload_model")
    b.require_model(model_id)
    request_id = b.futures.create("unload_model")
    b.start_op(
        request_id,
        lambda e: e.unload(model_id),
        lambda _: {"type": "unload_model", "model_id": model_id},
        lambda _: b.forget_model(model_id),
    )
    return {"request_id": request_id, "model_id": model_id}


def big_body(request: Request) -> bool:
    """Whether a request's body is big enough to be validated in a worker thread.

    A body over ``THREAD_PARSE_BYTES`` (or of unknown length) takes a while to
    validate; done on the event loop, it would hold every other client meanwhile.

    Example::

        assert big_body(request)   # the routes example's request declares no length
    """
    declared = request.headers.get("content-length", "")
    return not declared.isdigit() or int(declared) > THREAD_PARSE_BYTES


async def _forward_like(b: Backend, request: Request, body: dict, *, backward: bool) -> dict:
    def parse(bd: dict) -> ForwardOp:
        op = parse_forward(bd, backward=backward)
        b.limits.check_forward([d["model_input"] for d in op.data])
        return op

    def build(op: ForwardOp) -> tuple[Any, Any, None]:
        piece = b.limits.train_chunk_tokens
        split = b.limits.check_forward([d["model_input"] for d in op.data]) > piece

        def fn(e: Any) -> Any:
            # a big job runs in pieces; sample requests that wait meanwhile run between them
            pieces = {"between": lambda: b.batcher.run_pending(e), "piece_tokens": piece}
            return e.forward(
                op.model_id,
                op.data,
                op.loss_fn,
                op.loss_fn_config,
                backward=backward,
                **(pieces if split else {}),
            )

        return fn, lambda out: forward_output_json(out.logprobs, out.metrics), None

    # a big batch is validated in a worker thread (it takes a while), then queued on the loop
    kind = "forward_backward" if backward else "forward"
    return await b.submit_training(kind, body, parse, build, in_thread=big_body(request))


async def forward(b: Backend, request: Request, body: dict) -> dict:
    """``POST /forward``: learner logprobs and the loss, no gradient (a future).

    Example::

        answer = await forward(backend, request, {"model_id": mid, "forward_input": fwd})
        out = await result_of(answer)
        assert len(out["loss_fn_outputs"][0]["logprobs"]["data"]) == 3   # one per target token
    """
    return await _forward_like(b, request, body, backward=False)


async def forward_backward(b: Backend, request: Request, body: dict) -> dict:
    """``POST /forward_backward``: as ``forward``, and accumulate the gradient (a future).

    Example::

        answer = await forward_backward(backend, request, {"model_id": mid,
                                                           "forward_backward_input": fwd})
        assert "loss:sum" in (await result_of(answer))["metrics"]
    """
    return await _forward_like(b, request, body, backward=True)


async def optim_step(b: Backend, request: Request, body: dict) -> dict:
    """``POST /optim_step``: one AdamW step with the accumulated gradients (a future).

    Example::

        answer = await optim_step(backend, request, {"model_id": mid,
                                                     "adam_params": {"learning_rate": 1e-3}})
        assert "metrics" in await result_of(answer)
    """

    def build(req: Any) -> tuple[Any, Any, None]:
        p = req.adam_params

        def fn(e: Any) -> Any:
            return e.optim_step(
                req.model_id,
                learning_rate=p.learning_rate,
                beta1=p.beta1,
                beta2=p.beta2,
                eps=p.eps,
                weight_decay=p.weight_decay,
                grad_clip_norm=p.grad_clip_norm,
            )

        return fn, optim_metrics_json, None

    return await b.submit_training("optim_step", body, parse_optim_step, build)


async def save_weights(b: Backend, request: Request, body: dict) -> dict:
    """``POST /save_weights`` (``save_state``): weights and optimizer to ``tinker://`` (a future).

    Example::

        answer = await save_weights(backend, request, {"model_id": mid, "path": "step-1"})
        assert (await result_of(answer))["path"] == f"tinker://{mid}/weights/step-1"
    """

    def build(req: Any) -> tuple[Any, Any, None]:
        name = req.path or f"state-{req.seq_id if req.seq_id is not None else uuid.uuid4().hex[:8]}"
        return (
            lambda e: e.save_state(req.model_id, name, kind="state"),
            lambda path: {"type": "save_weights", "path": path},
            None,
        )

    return await b.submit_training("save_weights", body, parse_save_weights, build)


async def save_weights_for_sampler(b: Backend, request: Request, body: dict) -> dict:
    """``POST /save_weights_for_sampler``: a sampler snapshot, named (on disk) or not (a future).

    Example::

        answer = await save_weights_for_sampler(backend, request, {"model_id": mid})
        sid = (await result_of(answer))["sampling_session_id"]   # unnamed: in memory only
        assert backend.samplers.get(sid)["model_path"] is None
    """

    def build(req: Any) -> tuple[Any, Any, Any]:
        model_id = req.model_id

        def convert(result: tuple[str, str]) -> dict:
            sampler_id, path = result
            if req.path is not None:
                if not path:
                    raise MintEnvkitError(
                        "the engine saved sampler weights without returning a path"
                    )
                return {"type": "save_weights_for_sampler", "path": path}
            return {"type": "save_weights_for_sampler", "sampling_session_id": sampler_id}

        def on_success(result: tuple[str, str]) -> None:
            sampler_id, path = result
            info = b.model_registry.get(model_id, {})
            b.samplers.add(
                sampler_id,
                base_model=info.get("base_model", ""),
                model_path=path or None,
                unnamed=not path,
            )
            b.session(info.get("session_id"))["sampler_ids"].append(sampler_id)

        return (lambda e: tuple(e.save_for_sampler(model_id, req.path)), convert, on_success)

    return await b.submit_training(
        "save_weights_for_sampler", body, parse_save_weights_for_sampler, build
    )


async def load_weights(b: Backend, request: Request, body: dict) -> dict:
    """``POST /load_weights``: resume a training client from a ``tinker://`` path (a future).

    Example::

        saved = await result_of(await save_weights(backend, request, {"model_id": mid, "path": "a"}))
        answer = await load_weights(backend, request, {"model_id": mid, "optimizer": True,
                                                       "path": saved["path"]})
        assert await result_of(answer) == {"type": "load_weights", "path": saved["path"]}
    """

    def build(req: Any) -> tuple[Any, Any, None]:
        b.known_runs.add(run_id_of(req.path))
        return (
            lambda e: e.load_state(req.model_id, req.path, with_optimizer=req.optimizer),
            lambda _: {"type": "load_weights", "path": req.path},
            None,
        )

    return await b.submit_training("load_weights", body, parse_load_weights, build)


async def weights_info(b: Backend, request: Request, body: dict) -> dict:
    """``POST /weights_info``: base model and LoRA settings of a checkpoint.

    Example::

        saved = await result_of(await save_weights(backend, request, {"model_id": mid, "path": "b"}))
        info = await weights_info(backend, request, {"tinker_path": saved["path"]})
        assert info["base_model"] == "mint-envkit/tiny-qwen3-small" and info["lora_rank"] == 4
    """
    path = parse_weights_info(body)
    info = dict(await b.engine_call(lambda e: e.weights_info(path)))
    await b.delay()
    fields = ("base_model", "is_lora", "lora_rank", *_LORA_FLAGS)
    out = {k: info[k] for k in fields if info.get(k) is not None}
    out.setdefault("is_lora", True)
    # The SDK rebuilds a training client from these flags (create_training_client_from_state)
    # and defaults missing ones to True; fill them from the run that saved the checkpoint.
    run = b.model_registry.get(run_id_of(path), {})
    for flag in _LORA_FLAGS:
        if flag not in out and flag in run:
            out[flag] = bool(run[flag])
    return out
