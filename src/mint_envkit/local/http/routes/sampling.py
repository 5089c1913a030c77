"""Route handlers: sampling sessions and ``asample`` (batched on the engine worker).

Every handler is ``async (backend, request, body) -> body | Response``.

Example::

    # `backend`, `request` and `result_of(answer)` as in the routes package example
    session = await create_sampling_session(backend, request, {
        "session_id": "s", "sampling_session_seq_id": 0,
        "base_model": "mint-envkit/tiny-qwen3-small"})
    sid = session["sampling_session_id"]
    prompt = {"chunks": [{"tokens": [1, 2], "type": "encoded_text"}]}
    answer = await asample(backend, request, {"sampling_session_id": sid, "prompt": prompt,
                                              "sampling_params": {"max_tokens": 8}})
    assert set(answer) == {"request_id"}   # {'request_id': 'req-...'}
    assert len((await result_of(answer))["sequences"]) == 1
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from starlette.requests import Request

from mint_envkit.local.http.requests import ProtocolError, run_id_of
from mint_envkit.local.http.responses import engine_error, sample_response_json
from mint_envkit.local.http.samples import SampleOp, parse_create_sampling_session, parse_sample
from mint_envkit.local.http.splitting import submit_split
from mint_envkit.local.http.state import Backend


async def create_sampling_session(b: Backend, request: Request, body: dict) -> dict:
    """``POST /create_sampling_session``: a sampler on a base model or on saved weights.

    Waits for the engine, but not past the SDK's 60 s read timeout (it would
    re-send): if the worker is busy for long, it answers with a server-side id
    now and binds it to the engine's sampler when that is made (FIFO: before
    any sample on it can run).

    Example::

        answer = await create_sampling_session(backend, request, {"session_id": "s",
            "sampling_session_seq_id": 1, "base_model": "mint-envkit/tiny-qwen3-small"})
        sid = answer["sampling_session_id"]
        assert backend.samplers.get(sid)["base_model"] == "mint-envkit/tiny-qwen3-small"
    """
    req = parse_create_sampling_session(body)
    named = b.require_base_model(req.base_model) if req.base_model is not None else None
    if req.model_path is None:
        assert named is not None  # parse_create_sampling_session ensures one of the two

        def fn(e: Any) -> tuple[str, str]:
            return e.create_sampler(base_model=named), named
    else:
        path = req.model_path

        def fn(e: Any) -> tuple[str, str]:
            base = b.checkpoint_base_model(e, path)
            _check_agree(named, path, base)
            return e.create_sampler(model_path=path), base

    cf = b.worker.submit(fn, "create_sampling_session")
    try:
        sampler_id, base = await asyncio.wait_for(
            asyncio.shield(asyncio.wrap_future(cf)), b.direct_call_timeout_s
        )
        pending = None
    except TimeoutError:
        sampler_id = f"sampler-pending-{uuid.uuid4().hex}"
        run = b.model_registry.get(run_id_of(req.model_path or ""), {})
        base = req.base_model or str(run.get("base_model", ""))
        pending = cf
    except Exception as err:
        raise engine_error(err) from None
    b.samplers.add(sampler_id, base_model=base, model_path=req.model_path, pending=pending)
    b.session(req.session_id)["sampler_ids"].append(sampler_id)
    await b.delay()
    return {"type": "create_sampling_session", "sampling_session_id": sampler_id}


def _check_agree(named: str | None, path: str, base: str) -> None:
    """422 when a request names both a base model and a checkpoint of another base model."""
    if named is not None and named != base:
        raise ProtocolError(
            422,
            f"base_model {named!r} and model_path {path!r} disagree: that checkpoint was "
            f"trained on base model {base!r}; pass base_model={base!r} (or only model_path)",
        )


def _engine_kwargs(op: SampleOp) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "num_samples": op.num_samples,
        "temperature": op.temperature,
        "top_p": op.top_p,
        "top_k": op.top_k,
        "seed": op.seed,
        "stop": op.stop,
    }
    if op.max_tokens is not None:
        kwargs["max_tokens"] = op.max_tokens
    return kwargs


async def asample(b: Backend, request: Request, body: dict) -> dict:
    """``POST /asample``: sample from a session, a saved path or a base model (a future).

    Example::

        answer = await asample(backend, request, {"sampling_session_id": sid, "num_samples": 2,
            "prompt": {"chunks": [{"tokens": [1, 2], "type": "encoded_text"}]},
            "sampling_params": {"max_tokens": 8}})
        body = await result_of(answer)   # {'type': 'sample', 'sequences': [...]}
        assert body["type"] == "sample" and len(body["sequences"]) == 2
    """
    op = parse_sample(body)
    sampler_key: tuple[str, str] | None = None
    sampler_id: str | None = None
    named: str | None = None  # a base_model given beside model_path, checked against it
    if op.sampling_session_id is not None:
        sampler_id = b.samplers.require(op.sampling_session_id)
    elif op.model_path is not None:
        sampler_key = ("model_path", op.model_path)
        named = b.require_base_model(op.base_model) if op.base_model is not None else None
    else:
        sampler_key = ("base_model", b.require_base_model(op.base_model or ""))
    pending = b.samplers.pending.get(sampler_id or "")
    checked: list[bool] = []  # a checkpoint's base model is checked once per request

    def resolve(e: Any) -> str:
        if pending is not None:
            return str(pending.result()[0])  # done: the batcher waits until it is
        if sampler_id is not None:
            return sampler_id
        assert sampler_key is not None  # parse_sample ensures one of the three
        if sampler_key[0] == "model_path" and not checked:
            base = b.checkpoint_base_model(e, sampler_key[1])
            _check_agree(named, sampler_key[1], base)
            checked.append(True)
        return b.samplers.adhoc(e, sampler_key)

    b.limits.check_sample(
        num_samples=op.num_samples, prompt=len(op.prompt), max_tokens=op.max_tokens
    )
    if op.prompt_logprobs:
        b.limits.check_prompt_logprobs(len(op.prompt))
    request_id = b.futures.create("asample")
    future = submit_split(
        b.batcher,
        b.limits,
        resolve=resolve,
        ready=pending,
        prompt=op.prompt,
        kwargs=_engine_kwargs(op),
        prompt_logprobs=bool(op.prompt_logprobs),
    )
    b.complete_when_done(request_id, future, lambda r: sample_response_json(r[0], r[1]))
    return {"request_id": request_id}
