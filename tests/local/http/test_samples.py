"""Sampling request parsing, without HTTP: every sampling value the engine trusts is checked here."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

from mint_envkit.local.http.samples import (
    MAX_NUM_SAMPLES,
    parse_create_sampling_session,
    parse_sample,
)

Refuse = Callable[..., AbstractContextManager[None]]  # the `refused` fixture (conftest.py)


def sample_body(**params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sampling_session_id": "s-1",
        "prompt": {"chunks": [{"tokens": [5, 6], "type": "encoded_text"}]},
        "sampling_params": {"max_tokens": 4},
    }
    body.update({k: v for k, v in params.items() if k in ("num_samples", "prompt", "base_model")})
    body["sampling_params"].update(
        {k: v for k, v in params.items() if k not in ("num_samples", "prompt", "base_model")}
    )
    return body


def test_sampling_session_needs_a_source_and_takes_both(refused: Refuse) -> None:
    base = {"session_id": "s", "sampling_session_seq_id": 0}
    assert parse_create_sampling_session({**base, "base_model": "b"}).base_model == "b"
    with refused("give base_model .sample a base model. or model_path"):
        parse_create_sampling_session(base)
    # both is what the SDK sends for a checkpoint teacher (tinker-cookbook): the route
    # checks that they agree
    both = {**base, "base_model": "b", "model_path": "tinker://m/weights/a"}
    req = parse_create_sampling_session(both)
    assert (req.base_model, req.model_path) == ("b", "tinker://m/weights/a")
    with refused("must not contain '..'"):
        parse_create_sampling_session({**base, "model_path": "tinker://m/weights/.."})


def test_a_good_sample_request_is_converted() -> None:
    op = parse_sample(sample_body(temperature=0.7, top_p=0.9, top_k=5, seed=3, stop="\n"))
    assert op.prompt == [5, 6] and op.max_tokens == 4 and op.num_samples == 1
    assert (op.temperature, op.top_p, op.top_k, op.seed) == (0.7, 0.9, 5, 3)
    assert op.stop == ["\n"]
    assert parse_sample(sample_body(stop=[7, 8])).stop == [7, 8]
    assert parse_sample(sample_body(max_tokens=None)).max_tokens is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"prompt": {"chunks": []}}, "the prompt is empty"),
        (
            {"prompt": {"chunks": [{"tokens": [1, -2], "type": "encoded_text"}]}},
            "token ids must be non-negative",
        ),
        ({"num_samples": 0}, "num_samples must be at least 1 and at most 4096"),
        ({"num_samples": MAX_NUM_SAMPLES + 1}, "num_samples must be at least 1 and at most 4096"),
        ({"max_tokens": 0}, "max_tokens must be a positive number of tokens"),
        ({"temperature": 0.0}, "temperature must be > 0"),
        ({"temperature": math.nan}, "temperature must be > 0"),
        ({"temperature": math.inf}, "temperature must be > 0"),
        ({"top_p": 0.0}, r"top_p must be in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\]"),
        ({"top_k": 0}, "top_k must be -1"),
        ({"top_k": -2}, "top_k must be -1"),
        ({"seed": 1.5}, "invalid asample request: sampling_params.seed"),
        ({"stop": ""}, r"stop\[0\] is an empty string"),
        ({"stop": ["a", ""]}, r"stop\[1\] is an empty string"),
        ({"stop": [3, -1]}, "stop token ids must be non-negative"),
    ],
)
def test_bad_sample_values_are_refused(
    params: dict[str, Any], message: str, refused: Refuse
) -> None:
    with refused(message):
        parse_sample(sample_body(**params))


def test_sample_needs_a_source_and_token_chunks(refused: Refuse) -> None:
    body = sample_body()
    del body["sampling_session_id"]
    with refused("give sampling_session_id"):
        parse_sample(body)
    body = sample_body()
    body["topk_prompt_logprobs"] = 3
    with refused("topk_prompt_logprobs is not supported"):
        parse_sample(body)
    image = {"type": "image_asset_pointer", "format": "png", "location": "x", "expected_tokens": 1}
    with refused("token chunks"):
        parse_sample(sample_body(prompt={"chunks": [image]}))
