"""Route handlers: the OpenAI-compatible door (``/v1/models``, ``/v1/chat/completions``).

An ordinary OpenAI client, a chat UI or an agent framework can sample the server's base
models and the ``tinker://`` sampler checkpoints of its runs. A request's messages are
rendered with the model's chat template (the renderer our envs use for that model), the
end-of-turn token stops every reply, and the reply is sampled on the engine like any
``asample`` (the same batching, limits and checkpoints). Requests and answers are shaped
in :mod:`mint_envkit.local.http.chat`; errors are OpenAI's error objects with a 4xx.

Example::

    # `backend`, `request` as in the routes package example
    body = await list_models(backend, request, None)
    assert body["data"][0]["id"] == "mint-envkit/tiny-qwen3-small"
    answer = await chat_completions(backend, request, {
        "model": "mint-envkit/tiny-qwen3-small", "max_tokens": 4, "seed": 0,
        "messages": [{"role": "user", "content": "What is 2 + 3?"}]})
    assert answer["usage"]["completion_tokens"] <= 4
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from mint_envkit.local.http.chat import (
    ChatRequest,
    Choice,
    chunk_events,
    completion_json,
    openai_error,
    parse_chat,
)
from mint_envkit.local.http.requests import ProtocolError, check_tinker_path, run_id_of
from mint_envkit.local.http.responses import checkpoint_json, engine_error
from mint_envkit.local.http.splitting import submit_split
from mint_envkit.local.http.state import Backend
from mint_envkit.rendering.chat_template import default_renderer_for
from mint_envkit.rendering.renderer import Renderer, get_renderer


def _model(model_id: str, owner: str = "mint-envkit") -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owner}


async def list_models(b: Backend, request: Request, body: Any) -> dict:
    """``GET /v1/models``: the served base models, then the sampler checkpoints of this
    server's runs (newest first), each usable as ``model`` in a chat completion.

    Example::

        assert [m["object"] for m in body["data"]] == ["model"]
    """
    ours = set(b.model_registry) | b.known_runs
    records = await b.engine_call(lambda e: list(e.list_checkpoints(None)))
    items = sorted((checkpoint_json(r) for r in records), key=lambda c: c["time"], reverse=True)
    paths = [
        c["tinker_path"]
        for c in items
        if c["checkpoint_type"] == "sampler"
        and (b.list_all_checkpoints or run_id_of(c["tinker_path"]) in ours)
    ]
    return {
        "object": "list",
        "data": [*(_model(m) for m in b.models), *(_model(p, "local") for p in paths)],
    }


async def _target(b: Backend, req: ChatRequest) -> tuple[str, tuple[str, str]]:
    """The base model to render for, and the engine sampler key of ``req.model``."""
    if req.model.startswith("tinker://"):
        path = check_tinker_path(req.model, "chat/completions model")
        base = await b.engine_call(lambda e: b.checkpoint_base_model(e, path))
        return str(base), ("model_path", path)
    try:
        base = b.require_base_model(req.model)
    except ProtocolError as err:
        raise ProtocolError(
            404, f"{err.message}; or name a tinker:// sampler checkpoint (GET /v1/models)"
        ) from None
    return base, ("base_model", base)


def _render(base: str, req: ChatRequest) -> tuple[Renderer, list[int]]:
    renderer = get_renderer(default_renderer_for(base), base)
    try:
        prompt = renderer.render_tokens([dict(m) for m in req.messages], None)
    except Exception as err:  # the model's chat template refused these messages
        raise ProtocolError(
            400, f"the chat template of {base!r} cannot render these messages: {err}"
        ) from None
    return renderer, prompt


def _cut_at_stop(text: str, stops: tuple[str, ...]) -> str | None:
    found = [text.index(s) for s in stops if s in text]
    return text[: min(found)] if found else None


def _choice(renderer: Renderer, seq: Any, req: ChatRequest) -> Choice:
    """A sampled sequence as the client sees it: without the stop token or string."""
    tokens, logprobs = list(seq.tokens), list(seq.logprobs)
    stop_ids = {t for t in renderer.get_stop_sequences() if isinstance(t, int)}
    shown = tokens[:-1] if tokens and tokens[-1] in stop_ids else tokens
    decode = renderer.tokenizer.decode
    text = decode(shown, skip_special_tokens=True)
    if seq.stop_reason == "stop" and len(shown) == len(tokens):
        text = _cut_at_stop(text, req.stop) or text
    finish = "stop" if seq.stop_reason == "stop" else "length"
    pieces = [decode([t]) for t in tokens]
    return Choice(text=text, finish_reason=finish, tokens=tokens, logprobs=logprobs, pieces=pieces)


async def _sample(b: Backend, req: ChatRequest) -> tuple[int, list[Choice]]:
    base, key = await _target(b, req)
    renderer, prompt = await asyncio.to_thread(_render, base, req)
    b.limits.check_sample(num_samples=req.n, prompt=len(prompt), max_tokens=req.max_tokens)
    stop: list[Any] = [*renderer.get_stop_sequences(), *req.stop]
    checked: list[bool] = []

    def resolve(e: Any) -> str:
        if key[0] == "model_path" and not checked:
            b.checkpoint_base_model(e, key[1])
            checked.append(True)
        return b.samplers.adhoc(e, key)

    kwargs = {
        "num_samples": req.n,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "top_k": -1,
        "seed": req.seed,
        "stop": stop,
    }
    future = submit_split(
        b.batcher,
        b.limits,
        resolve=resolve,
        ready=None,
        prompt=prompt,
        kwargs=kwargs,
        prompt_logprobs=False,
    )
    try:
        sequences, _ = await asyncio.wrap_future(future)
    except ProtocolError:
        raise
    except Exception as err:
        raise engine_error(err) from None
    choices = await asyncio.to_thread(lambda: [_choice(renderer, s, req) for s in sequences])
    return len(prompt), choices


async def chat_completions(b: Backend, request: Request, body: Any) -> Any:
    """``POST /v1/chat/completions``: sample a base model or a sampler checkpoint.

    Non-streaming answers are a ``chat.completion`` with ``usage``; ``stream: true``
    answers with ``chat.completion.chunk`` events (one content chunk per choice: the
    engine returns whole replies). Bad input is a 4xx with OpenAI's error object.

    Example::

        answer = await chat_completions(backend, request, {"model": "nope", "messages": []})
        assert answer.status_code == 400   # messages must be a non-empty list ...
    """
    try:
        req = parse_chat(body)
        prompt_tokens, choices = await _sample(b, req)
    except ProtocolError as err:
        return JSONResponse(openai_error(err), status_code=err.status)
    await b.delay()
    if req.stream:
        return StreamingResponse(
            chunk_events(req, prompt_tokens, choices), media_type="text/event-stream"
        )
    return completion_json(req, prompt_tokens, choices)


async def unknown(b: Backend, request: Request, body: Any) -> Response:
    """The answer to a ``/v1/...`` path this door does not serve (404, OpenAI's shape).

    Example::

        assert (await unknown(backend, request, None)).status_code == 404
    """
    message = (
        f"{request.url.path} is not served; the OpenAI-compatible door answers "
        "GET /v1/models and POST /v1/chat/completions"
    )
    return JSONResponse(openai_error(ProtocolError(404, message)), status_code=404)
