"""Request parsing for sampling: ``create_sampling_session`` and ``asample``.

The server's one check of sampling values (the engine trusts them): a
non-empty prompt of token chunks, ``num_samples`` in 1..4096, ``max_tokens``
at least 1, temperature, ``top_p`` and ``top_k`` in range, stop strings not
empty and stop token ids not negative. What only the loaded model knows (its
vocabulary, its context length) is left to the engine. Errors are
:class:`~mint_envkit.local.http.requests.ProtocolError` (422).

Example::

    from mint_envkit.local.http.samples import parse_sample

    op = parse_sample({
        "sampling_session_id": "s-1", "num_samples": 2,
        "prompt": {"chunks": [{"tokens": [1, 2, 3], "type": "encoded_text"}]},
        "sampling_params": {"max_tokens": 4, "temperature": 1.0},
    })
    assert (op.prompt, op.max_tokens) == ([1, 2, 3], 4)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from tinker import types as tt

from mint_envkit.local.bounds import temperature_problem
from mint_envkit.local.http.requests import (
    ProtocolError,
    check_tinker_path,
    model_input_tokens,
    validate_body,
)

MAX_NUM_SAMPLES = 4096
"""The most sequences one ``asample`` request may ask for."""


@attrs.frozen
class SampleOp:
    """A validated ``asample`` request in engine terms (the engine trusts these values).

    Example::

        assert (op.num_samples, op.temperature, op.top_k, op.stop) == (2, 1.0, -1, None)
        # the server then runs, on the engine worker:
        # engine.sample(sampler_id, op.prompt, num_samples=op.num_samples, max_tokens=op.max_tokens)
    """

    sampling_session_id: str | None
    base_model: str | None
    model_path: str | None
    prompt: list[int]
    num_samples: int
    max_tokens: int | None
    temperature: float
    top_p: float
    top_k: int
    seed: int | None
    stop: list[str] | list[int] | None
    prompt_logprobs: bool


def parse_create_sampling_session(body: Mapping[str, Any]) -> tt.CreateSamplingSessionRequest:
    """Validate a ``create_sampling_session`` body: base_model, model_path, or both.

    Both is what the SDK sends when its caller passes both (tinker-cookbook does, for a
    checkpoint teacher or KL reference); the server then samples the checkpoint, after
    checking that it is on that base model.

    Example::

        req = parse_create_sampling_session({"session_id": "s", "sampling_session_seq_id": 0,
                                             "base_model": "mint-envkit/tiny-qwen3"})
        assert req.base_model == "mint-envkit/tiny-qwen3"
    """
    req = validate_body(tt.CreateSamplingSessionRequest, body, "create_sampling_session")
    if req.base_model is None and req.model_path is None:
        raise ProtocolError(
            422,
            "create_sampling_session: give base_model (sample a base model) or model_path "
            "(sample a tinker:// checkpoint), or both when they agree",
        )
    if req.model_path is not None:
        check_tinker_path(req.model_path, "create_sampling_session")
    return req


def _check_sampling_params(sp: Any) -> None:
    if sp.max_tokens is not None and sp.max_tokens < 1:
        raise ProtocolError(
            422, f"max_tokens must be a positive number of tokens, got {sp.max_tokens}"
        )
    problem = temperature_problem(sp.temperature, field="sampling_params.temperature")
    if problem is not None:
        raise ProtocolError(422, problem)
    if not (0.0 < sp.top_p <= 1.0):
        raise ProtocolError(422, f"top_p must be in (0, 1], got {sp.top_p}")
    if sp.top_k == 0 or sp.top_k < -1:
        raise ProtocolError(422, f"top_k must be -1 (off) or a positive integer, got {sp.top_k}")


def _parse_stop(stop: Any) -> list[str] | list[int] | None:
    if stop is None:
        return None
    items = [stop] if isinstance(stop, str) else list(stop)
    for i, item in enumerate(items):
        if isinstance(item, str) and not item:
            raise ProtocolError(422, f"stop[{i}] is an empty string; remove it")
    if any(isinstance(s, int) and s < 0 for s in items):
        raise ProtocolError(422, f"stop token ids must be non-negative, got {items}")
    return items


def parse_sample(body: Mapping[str, Any]) -> SampleOp:
    """Validate an ``asample`` body and convert it for the engine.

    Refuses empty prompts, ``max_tokens`` below 1, ``num_samples`` outside
    1..4096, sampling parameters out of range and empty stop strings;
    ``topk_prompt_logprobs`` is not supported.

    Example::

        op = parse_sample({"sampling_session_id": "s-1", "num_samples": 4,
                           "prompt": {"chunks": [{"tokens": [5, 6], "type": "encoded_text"}]},
                           "sampling_params": {"max_tokens": 8, "stop": "\\n"}})
        assert op.stop == ["\\n"]
    """
    req = validate_body(tt.SampleRequest, body, "asample")
    prompt = model_input_tokens(req.prompt, "prompt")
    if not prompt:
        raise ProtocolError(422, "the prompt is empty: send at least one token")
    if not 1 <= req.num_samples <= MAX_NUM_SAMPLES:
        raise ProtocolError(
            422,
            f"num_samples must be at least 1 and at most {MAX_NUM_SAMPLES}, got {req.num_samples}",
        )
    sp = req.sampling_params
    _check_sampling_params(sp)
    if req.topk_prompt_logprobs:
        raise ProtocolError(
            422, "topk_prompt_logprobs is not supported by the local backend; use prompt_logprobs"
        )
    stop = _parse_stop(sp.stop)
    if req.sampling_session_id is None and req.base_model is None and req.model_path is None:
        raise ProtocolError(
            422, "asample: give sampling_session_id (from create_sampling_session) or base_model"
        )
    if req.model_path is not None:
        check_tinker_path(req.model_path, "asample")
    return SampleOp(
        sampling_session_id=req.sampling_session_id,
        base_model=req.base_model,
        model_path=req.model_path,
        prompt=prompt,
        num_samples=req.num_samples,
        max_tokens=sp.max_tokens,
        temperature=float(sp.temperature),
        top_p=float(sp.top_p),
        top_k=int(sp.top_k),
        seed=sp.seed,
        stop=stop,
        prompt_logprobs=bool(req.prompt_logprobs),
    )
