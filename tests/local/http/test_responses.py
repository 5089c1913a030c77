"""Response shaping, without HTTP: bodies in the SDK's shapes, errors with the right status."""

from __future__ import annotations

import math

import pytest
from server_helpers import FakeEngineError, FakeSeq
from tinker import types as tt

from mint_envkit.local.http.requests import ProtocolError
from mint_envkit.local.http.responses import (
    JSONResponse,
    checkpoint_json,
    describe_error,
    engine_error,
    forward_output_json,
    optim_metrics_json,
    sample_response_json,
    sanitize_metrics,
)


def test_metrics_keys_get_a_reduction_and_values_become_floats() -> None:
    assert sanitize_metrics({"loss:sum": 1, "lr": 0.1, "a:b:c": 2, "note": "x"}) == {
        "loss:sum": 1.0,
        "lr:mean": 0.1,
    }
    assert optim_metrics_json({"grad_norm": 1, "note": "x"}) == {"metrics": {"grad_norm": 1.0}}


def test_forward_and_sample_bodies() -> None:
    out = forward_output_json([[-0.5, -1]], {"loss:sum": 1.5})
    assert out["loss_fn_outputs"][0]["logprobs"] == {
        "data": [-0.5, -1.0],
        "dtype": "float32",
        "shape": [2],
    }
    body = sample_response_json([FakeSeq([1, 2], [-0.1, -0.2], "length")], [None, -2])
    assert body == {
        "type": "sample",
        "sequences": [{"tokens": [1, 2], "logprobs": [-0.1, -0.2], "stop_reason": "length"}],
        "prompt_logprobs": [None, -2.0],
    }
    assert "prompt_logprobs" not in sample_response_json([], None)


def test_checkpoint_bodies_validate_as_the_sdk_type() -> None:
    for path, kind in (("weights", "training"), ("sampler_weights", "sampler")):
        body = checkpoint_json(
            {"tinker_path": f"tinker://m-1/{path}/a", "time": 0, "size_bytes": 7}
        )
        checkpoint = tt.Checkpoint.model_validate(body)
        assert (checkpoint.checkpoint_id, checkpoint.checkpoint_type) == (f"{path}/a", kind)
        assert body["time"] == "1970-01-01T00:00:00+00:00"


def test_errors_keep_their_category_and_map_to_4xx() -> None:
    assert describe_error(ProtocolError(422, "bad")) == ("bad", "user")
    assert describe_error(FakeEngineError("boom", "server")) == ("boom", "server")
    message, category = describe_error(RuntimeError("oops"))
    assert category == "server" and "internal error" in message and "oops" in message
    assert engine_error(FakeEngineError("no checkpoint at 'x'", "user")).status == 404
    assert engine_error(FakeEngineError("rank too big", "user")).status == 422
    failed = engine_error(FakeEngineError("disk full", "server"))
    assert failed.status == 400 and "local backend error: disk full" in failed.message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_no_answer_carries_nan_or_infinity(value: float) -> None:
    """They are not JSON: the SDK failed on a bare NaN with a non-retryable JSONDecodeError."""
    body = {"type": "sample", "sequences": [{"tokens": [0, 0], "logprobs": [-1.0, value]}]}
    with pytest.raises(ProtocolError) as info:
        JSONResponse(body)
    assert info.value.status == 422
    assert f"{value!r} at sequences[0].logprobs[1]" in info.value.message
    assert JSONResponse({"x": 1.5, "y": [None, 2]}).body == b'{"x":1.5,"y":[null,2]}'
