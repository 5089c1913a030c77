"""Request parsing for the bodies that carry training data, as the SDK sends them.

``forward`` / ``forward_backward`` (datums, loss inputs, loss config) and MinT's
``forward_backward_reverse_kl`` (``mint.mint`` in mindlab-toolkit 0.2.0,
``mint/mint/_mintx.py``). The SDK's public ``Datum`` / ``TensorData`` are plain
classes, not pydantic models, so the wire shapes are declared here (the same
fields, extra fields forbidden as in the SDK's request types, then dropped by
:func:`~mint_envkit.local.http.requests.validate_body`) instead of importing the
SDK's private pydantic modules, which an SDK upgrade may move. Every tensor is
checked by one function: 1-D, finite, token ids non-negative integers. Errors are
:class:`~mint_envkit.local.http.requests.ProtocolError` (422) naming the field.

Example::

    from mint_envkit.local.http.datums import parse_forward

    op = parse_forward({
        "model_id": "m-1", "seq_id": 1,
        "forward_backward_input": {"loss_fn": "cross_entropy", "data": [{
            "model_input": {"chunks": [{"tokens": [1, 2], "type": "encoded_text"}]},
            "loss_fn_inputs": {"target_tokens": {"data": [2, 3], "dtype": "int64"}},
        }]},
    }, backward=True)
    assert op.data[0] == {"model_input": [1, 2], "loss_fn_inputs": {"target_tokens": [2, 3]}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np
import pydantic
from tinker import types as tt

from mint_envkit.local.bounds import temperature_problem
from mint_envkit.local.http.requests import (
    ProtocolError,
    _Strict,
    model_input_tokens,
    validate_body,
)

LOSS_FN_REQUIRED_INPUTS: dict[str, tuple[str, ...]] = {
    "cross_entropy": ("target_tokens",),
    "importance_sampling": ("target_tokens", "logprobs", "advantages"),
    "ppo": ("target_tokens", "logprobs", "advantages"),
}
"""The loss functions the local backend supports (the engine's ``SUPPORTED_LOSSES``), and
the ``loss_fn_inputs`` each needs. ``cispo`` and ``dro`` (in the SDK's enum) are refused."""

_PPO_CLIP_DEFAULTS = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}


class _TensorData(_Strict):
    data: list[int] | list[float]
    dtype: Literal["int64", "float32"]
    shape: list[int] | None = None
    sparse_crow_indices: list[int] | None = None
    sparse_col_indices: list[int] | None = None


class _Datum(_Strict):
    loss_fn_inputs: dict[str, _TensorData]
    model_input: tt.ModelInput

    @pydantic.model_validator(mode="before")
    @classmethod
    def _plain_lists(cls, data: Any) -> Any:
        """A plain list of numbers is a 1-D tensor (int64 for target_tokens), as the SDK reads it."""
        if isinstance(data, dict) and isinstance(data.get("loss_fn_inputs"), dict):
            inputs = {
                key: (
                    {
                        "data": value,
                        "dtype": "int64" if key == "target_tokens" else "float32",
                        "shape": [len(value)],
                    }
                    if isinstance(value, list)
                    else value
                )
                for key, value in data["loss_fn_inputs"].items()
            }
            data = {**data, "loss_fn_inputs": inputs}
        return data


class _ForwardInput(_Strict):
    data: list[_Datum]
    loss_fn: str
    loss_fn_config: dict[str, float] | None = None


class _ForwardRequest(_Strict):
    forward_input: _ForwardInput
    model_id: str
    seq_id: int | None = None


class _ForwardBackwardRequest(_Strict):
    forward_backward_input: _ForwardInput
    model_id: str
    seq_id: int | None = None


class _KLTensorData(_Strict):
    data: list[int] | list[float] | float
    shape: list[int] | None = None
    dtype: str = "float32"


class _ReverseKLDatum(_Strict):
    student_input: tt.ModelInput
    reference_input: tt.ModelInput
    target_tokens: _KLTensorData
    weights: _KLTensorData


class _ReverseKLRequest(_Strict):
    model_id: str
    reference_model_path: str
    data: list[_ReverseKLDatum]
    temperature: float = 1.0
    seq_id: int | None = None
    type: Literal["mint_forward_backward_reverse_kl"] = "mint_forward_backward_reverse_kl"


@attrs.frozen
class ForwardOp:
    """A validated ``forward`` / ``forward_backward`` request in engine terms.

    ``data`` items are ``{"model_input": [ids], "loss_fn_inputs": {name: [values]}}``.

    Example::

        assert (op.model_id, op.seq_id, op.loss_fn, op.loss_fn_config) == ("m-1", 1, "cross_entropy", None)
        # the server then runs, on the engine worker:
        # engine.forward(op.model_id, op.data, op.loss_fn, op.loss_fn_config, backward=True)
    """

    model_id: str
    seq_id: int | None
    data: list[dict[str, Any]]
    loss_fn: str
    loss_fn_config: dict[str, float] | None


@attrs.frozen
class ReverseKLOp:
    """A validated ``forward_backward_reverse_kl`` request in engine terms.

    ``data`` items are ``{"student_input", "reference_input", "target_tokens", "weights"}``
    (plain lists).

    Example::

        tokens = lambda ids: {"chunks": [{"tokens": ids, "type": "encoded_text"}]}
        op = parse_reverse_kl({
            "model_id": "m-1", "reference_model_path": "tinker://t-1/sampler_weights/s",
            "data": [{"student_input": tokens([1, 2]), "reference_input": tokens([9, 1, 2]),
                      "target_tokens": {"data": [2, 3]}, "weights": {"data": [1.0, 1.0]}}],
        })
        assert (op.reference_model_path, op.temperature) == ("tinker://t-1/sampler_weights/s", 1.0)
    """

    model_id: str
    seq_id: int | None
    reference_model_path: str
    temperature: float
    data: list[dict[str, list[Any]]]


def _tensor_values(tensor: Any, where: str, *, token_ids: bool, dtype: Any) -> list[Any]:
    """The values of a 1-D tensor, read as ``dtype``: finite, token ids non-negative integers."""
    if getattr(tensor, "sparse_crow_indices", None) is not None:
        shape = tensor.shape if tensor.shape is not None else "unknown"
        raise ProtocolError(
            422,
            f"{where} is a sparse tensor of shape {shape}; "
            "the local backend takes 1-D arrays (one value per position)",
        )
    try:
        arr = np.array(tensor.data, dtype=dtype)
        if tensor.shape is not None:
            arr = arr.reshape(tensor.shape)
    except (ValueError, OverflowError) as err:
        raise ProtocolError(422, f"{where} is malformed: {err}") from None
    if arr.ndim != 1:
        raise ProtocolError(
            422,
            f"{where} has shape {list(arr.shape)}; "
            "the local backend takes 1-D arrays (one value per position)",
        )
    values = arr.tolist()
    if not all(math.isfinite(v) for v in values):
        raise ProtocolError(422, f"{where} contains NaN or infinity")
    if not token_ids:
        return values
    if any(v != int(v) for v in values):
        raise ProtocolError(422, f"{where} must be integers (token ids)")
    if any(v < 0 for v in values):
        raise ProtocolError(422, f"{where} must be non-negative token ids")
    return [int(v) for v in values]


def _check_loss_fn(loss_fn: Any) -> None:
    if not isinstance(loss_fn, str) or loss_fn not in LOSS_FN_REQUIRED_INPUTS:
        raise ProtocolError(
            422,
            f"unsupported loss_fn {loss_fn!r}; the local backend supports "
            f"{', '.join(sorted(LOSS_FN_REQUIRED_INPUTS))}",
        )


def _check_loss_fn_config(loss_fn: str, config: dict[str, float] | None) -> None:
    if loss_fn != "ppo":
        return
    low, high = ({**_PPO_CLIP_DEFAULTS, **(config or {})}[k] for k in _PPO_CLIP_DEFAULTS)
    if not 0 <= low <= 1 <= high:
        raise ProtocolError(
            422,
            f"ppo needs 0 <= clip_low_threshold <= 1 <= clip_high_threshold, got {low} and {high}",
        )


def _datum(datum: _Datum, required: tuple[str, ...], loss_fn: str, where: str) -> dict[str, Any]:
    tokens = model_input_tokens(datum.model_input, f"{where} model_input")
    if not tokens:
        raise ProtocolError(422, f"{where}: model_input is empty")
    missing = [k for k in required if k not in datum.loss_fn_inputs]
    if missing:
        raise ProtocolError(
            422,
            f"{where}: loss_fn {loss_fn!r} needs loss_fn_inputs {list(required)}; missing {missing}",
        )
    inputs: dict[str, Any] = {}
    for name, tensor in datum.loss_fn_inputs.items():
        values = _tensor_values(
            tensor,
            f"{where}: loss_fn_inputs.{name}",
            token_ids=name == "target_tokens",
            dtype=np.int64 if tensor.dtype == "int64" else np.float32,
        )
        if len(values) != len(tokens):
            raise ProtocolError(
                422,
                f"{where}: loss_fn_inputs[{name!r}] has {len(values)} values but "
                f"model_input has {len(tokens)} tokens; they must be the same length",
            )
        inputs[name] = values
    return {"model_input": tokens, "loss_fn_inputs": inputs}


def parse_forward(body: Mapping[str, Any], *, backward: bool) -> ForwardOp:
    """Validate a ``forward`` / ``forward_backward`` body and convert it for the engine.

    Checks the loss function (and ppo's clip thresholds), that each datum has
    the inputs its loss needs, and that every ``loss_fn_inputs`` array has one
    finite value per input token.

    Example::

        op = parse_forward({"model_id": "m-1", "forward_input": {
            "loss_fn": "cross_entropy",
            "data": [{"model_input": {"chunks": [{"tokens": [1], "type": "encoded_text"}]},
                      "loss_fn_inputs": {"target_tokens": [2]}}]}}, backward=False)
        op.loss_fn   # 'cross_entropy'
    """
    what = "forward_backward" if backward else "forward"
    raw_input = body.get("forward_backward_input" if backward else "forward_input")
    if isinstance(raw_input, Mapping):
        _check_loss_fn(raw_input.get("loss_fn"))
    request_type = _ForwardBackwardRequest if backward else _ForwardRequest
    req = validate_body(request_type, body, what)
    fb_input = req.forward_backward_input if backward else req.forward_input
    _check_loss_fn(fb_input.loss_fn)
    if not fb_input.data:
        raise ProtocolError(422, f"{what}: data is empty; send at least one Datum")
    config = dict(fb_input.loss_fn_config) if fb_input.loss_fn_config else None
    _check_loss_fn_config(fb_input.loss_fn, config)
    required = LOSS_FN_REQUIRED_INPUTS[fb_input.loss_fn]
    data = [
        _datum(datum, required, fb_input.loss_fn, f"{what}: datum {i}")
        for i, datum in enumerate(fb_input.data)
    ]
    return ForwardOp(
        model_id=req.model_id,
        seq_id=req.seq_id,
        data=data,
        loss_fn=fb_input.loss_fn,
        loss_fn_config=config,
    )


def _reverse_kl_datum(i: int, datum: _ReverseKLDatum) -> dict[str, list[Any]]:
    where = f"forward_backward_reverse_kl: data[{i}]"
    student = model_input_tokens(datum.student_input, f"{where}.student_input")
    reference = model_input_tokens(datum.reference_input, f"{where}.reference_input")
    for key, tokens in (("student_input", student), ("reference_input", reference)):
        if not tokens:
            raise ProtocolError(422, f"{where}.{key} is empty")
    targets = _tensor_values(
        datum.target_tokens, f"{where}.target_tokens", token_ids=True, dtype=np.float64
    )
    weights = _tensor_values(datum.weights, f"{where}.weights", token_ids=False, dtype=np.float64)
    for key, values in (("target_tokens", targets), ("weights", weights)):
        if len(values) != len(student):
            raise ProtocolError(
                422,
                f"{where}.{key} has {len(values)} values but student_input has "
                f"{len(student)} tokens; give one per student_input position",
            )
    offset = len(reference) - len(student)
    for t, w in enumerate(weights):
        if w == 0.0:
            continue
        j = t + offset
        if j < 0:
            raise ProtocolError(
                422,
                f"{where}.reference_input ({len(reference)} tokens) is too short for the "
                f"weighted position {t} of student_input ({len(student)} tokens); the two "
                "inputs are aligned at their ends (the completion is their common suffix)",
            )
        if j + 1 < len(reference) and reference[j + 1] != targets[t]:
            raise ProtocolError(
                422,
                f"{where}.reference_input does not end with the student's completion: at "
                f"weighted position {t} target_tokens holds {targets[t]} but the aligned "
                f"reference_input token is {reference[j + 1]}; the inputs are aligned at their "
                "ends, so reference_input must be (reference prompt + the same completion)",
            )
    return {
        "student_input": student,
        "reference_input": reference,
        "target_tokens": targets,
        "weights": weights,
    }


def parse_reverse_kl(body: Mapping[str, Any]) -> ReverseKLOp:
    """Validate a ``forward_backward_reverse_kl`` body (shapes, lengths, temperature).

    Example::

        tokens = lambda ids: {"chunks": [{"tokens": ids, "type": "encoded_text"}]}
        body = {
            "model_id": "m-1", "reference_model_path": "tinker://t-1/sampler_weights/s",
            "data": [{"student_input": tokens([1, 2]), "reference_input": tokens([9, 1, 2]),
                      "target_tokens": {"data": [2, 3]}, "weights": {"data": [1.0, 1.0]}}],
        }
        assert parse_reverse_kl(body).data[0]["student_input"] == [1, 2]
        # the inputs are aligned at their ends: reference_input is (its prompt + the completion)
        body["data"][0]["reference_input"] = tokens([9, 1, 5])
        try:
            parse_reverse_kl(body)
        except ProtocolError as err:
            assert "does not end with the student's completion" in err.message
        else:
            raise AssertionError("a misaligned reference_input is refused")
    """
    req = validate_body(_ReverseKLRequest, body, "forward_backward_reverse_kl")
    if not req.data:
        raise ProtocolError(
            422, "forward_backward_reverse_kl: data is empty; send at least one ReverseKLDatum"
        )
    problem = temperature_problem(req.temperature)
    if problem is not None:  # the bound of sampling: below it the scaled logits overflow
        raise ProtocolError(422, f"forward_backward_reverse_kl: {problem}")
    if not req.reference_model_path:
        raise ProtocolError(
            422, "forward_backward_reverse_kl: reference_model_path must not be empty"
        )
    return ReverseKLOp(
        model_id=req.model_id,
        seq_id=req.seq_id,
        reference_model_path=req.reference_model_path,
        temperature=float(req.temperature),
        data=[_reverse_kl_datum(i, d) for i, d in enumerate(req.data)],
    )
