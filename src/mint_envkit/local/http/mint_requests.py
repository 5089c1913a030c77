"""Request parsing for MinT's own endpoints (``/api/v1/mint/...``), as the SDK sends them.

``mint.mint.forward_backward_reverse_kl`` and ``mint.mint.interpolate_checkpoints``
(mindlab-toolkit 0.2.0, ``mint/mint/_mintx.py``). The wire shapes are declared
here (extra fields dropped, as for the other routes); every error is a
:class:`~mint_envkit.local.http.requests.ProtocolError` (422) that names the field.

Example::

    from mint_envkit.local.http.mint_requests import parse_reverse_kl

    op = parse_reverse_kl({"model_id": "m-1", "reference_model_path": "mint-envkit/tiny-qwen3",
        "data": [{"student_input": {"chunks": [{"type": "encoded_text", "tokens": [1, 2]}]},
                  "reference_input": {"chunks": [{"type": "encoded_text", "tokens": [1, 2]}]},
                  "target_tokens": {"data": [2, 3], "dtype": "int64"},
                  "weights": {"data": [0.0, 1.0], "dtype": "float32"}}]})
    op.data[0]["weights"]   # [0.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np
import pydantic
from tinker import types as tt

from mint_envkit.local.http.requests import ProtocolError, model_input_tokens, validate_body


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


class _TensorData(_Strict):
    data: list[int] | list[float] | float
    shape: list[int] | None = None
    dtype: str = "float32"


class _ReverseKLDatum(_Strict):
    student_input: tt.ModelInput
    reference_input: tt.ModelInput
    target_tokens: _TensorData
    weights: _TensorData


class _ReverseKLRequest(_Strict):
    model_id: str
    reference_model_path: str
    data: list[_ReverseKLDatum]
    temperature: float = 1.0
    seq_id: int | None = None
    type: Literal["mint_forward_backward_reverse_kl"] = "mint_forward_backward_reverse_kl"


class _InterpolateRequest(_Strict):
    source_paths: list[str]
    coefficients: list[float]
    output_path: str | None = None
    output_checkpoint_type: Literal["sampler"] = "sampler"
    type: Literal["mint_interpolate_checkpoints"] = "mint_interpolate_checkpoints"


@attrs.frozen
class ReverseKLOp:
    """A validated ``forward_backward_reverse_kl`` request in engine terms.

    ``data`` items are ``{"student_input", "reference_input", "target_tokens", "weights"}``
    (plain lists).

    Example::

        op.model_id, op.reference_model_path, op.temperature
    """

    model_id: str
    seq_id: int | None
    reference_model_path: str
    temperature: float
    data: list[dict[str, list[Any]]]


@attrs.frozen
class InterpolateOp:
    """A validated ``checkpoints/interpolate`` request.

    Example::

        op.source_paths, op.coefficients, op.output_path
    """

    source_paths: list[str]
    coefficients: list[float]
    output_path: str | None


def _values(tensor: _TensorData, where: str, *, ints: bool) -> list[Any]:
    try:
        arr = np.array(tensor.data, dtype=np.float64)
        if tensor.shape is not None:
            arr = arr.reshape(tensor.shape)
    except (ValueError, OverflowError) as err:
        raise ProtocolError(422, f"{where} is malformed: {err}") from None
    if arr.ndim != 1:
        raise ProtocolError(
            422, f"{where} has shape {list(arr.shape)}; give a 1-D array (one value per position)"
        )
    values = arr.tolist()
    if not all(math.isfinite(v) for v in values):
        raise ProtocolError(422, f"{where} contains NaN or infinity")
    if not ints:
        return values
    if any(v != int(v) or v < 0 for v in values):
        raise ProtocolError(422, f"{where} must hold non-negative integer token ids")
    return [int(v) for v in values]


def _reverse_kl_datum(i: int, datum: _ReverseKLDatum) -> dict[str, list[Any]]:
    where = f"forward_backward_reverse_kl: data[{i}]"
    student = model_input_tokens(datum.student_input, f"{where}.student_input")
    reference = model_input_tokens(datum.reference_input, f"{where}.reference_input")
    for key, tokens in (("student_input", student), ("reference_input", reference)):
        if not tokens:
            raise ProtocolError(422, f"{where}.{key} is empty")
    targets = _values(datum.target_tokens, f"{where}.target_tokens", ints=True)
    weights = _values(datum.weights, f"{where}.weights", ints=False)
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

        parse_reverse_kl(body).data[0]["student_input"]   # [1, 2]
    """
    req = validate_body(_ReverseKLRequest, body, "forward_backward_reverse_kl")
    if not req.data:
        raise ProtocolError(
            422, "forward_backward_reverse_kl: data is empty; send at least one ReverseKLDatum"
        )
    if not math.isfinite(req.temperature) or req.temperature <= 0:
        raise ProtocolError(
            422,
            f"forward_backward_reverse_kl: temperature must be a finite number > 0, "
            f"got {req.temperature!r}",
        )
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


def parse_interpolate(body: Mapping[str, Any]) -> InterpolateOp:
    """Validate a ``checkpoints/interpolate`` body (counts, finite coefficients).

    Example::

        parse_interpolate({"source_paths": ["tinker://a/sampler_weights/s"],
                           "coefficients": [1.0]}).output_path   # None
    """
    req = validate_body(_InterpolateRequest, body, "interpolate_checkpoints")
    if not req.source_paths:
        raise ProtocolError(
            422, "interpolate_checkpoints: source_paths is empty; name at least one checkpoint"
        )
    if len(req.coefficients) != len(req.source_paths):
        raise ProtocolError(
            422,
            f"interpolate_checkpoints: coefficients has {len(req.coefficients)} entries but "
            f"source_paths has {len(req.source_paths)}; give one coefficient per source path",
        )
    for i, c in enumerate(req.coefficients):
        if not math.isfinite(c):
            raise ProtocolError(
                422, f"interpolate_checkpoints: coefficients[{i}] must be finite, got {c!r}"
            )
    return InterpolateOp(
        source_paths=list(req.source_paths),
        coefficients=[float(c) for c in req.coefficients],
        output_path=req.output_path,
    )
