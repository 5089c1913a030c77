"""forward / forward_backward parsing, without HTTP: datums, loss inputs, loss config."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

from mint_envkit.local.http.datums import LOSS_FN_REQUIRED_INPUTS, parse_forward

Refuse = Callable[..., AbstractContextManager[None]]  # the `refused` fixture (conftest.py)


def tensor(values: list[Any], dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"data": values, "dtype": dtype, **extra}


def body(
    *datums: dict[str, Any],
    loss_fn: str = "cross_entropy",
    config: dict[str, float] | None = None,
    backward: bool = True,
) -> dict[str, Any]:
    fb: dict[str, Any] = {"loss_fn": loss_fn, "data": list(datums)}
    if config is not None:
        fb["loss_fn_config"] = config
    key = "forward_backward_input" if backward else "forward_input"
    return {"model_id": "m-1", "seq_id": 1, key: fb}


def datum(ids: list[int], **inputs: Any) -> dict[str, Any]:
    return {
        "model_input": {"chunks": [{"tokens": ids, "type": "encoded_text"}]},
        "loss_fn_inputs": inputs,
    }


def test_a_good_request_is_converted_for_the_engine() -> None:
    d = datum([1, 2], target_tokens=tensor([2, 3], "int64"), weights=tensor([0.0, 1.0]))
    op = parse_forward(body(d), backward=True)
    assert (op.model_id, op.seq_id, op.loss_fn, op.loss_fn_config) == (
        "m-1",
        1,
        "cross_entropy",
        None,
    )
    assert op.data == [
        {"model_input": [1, 2], "loss_fn_inputs": {"target_tokens": [2, 3], "weights": [0.0, 1.0]}}
    ]
    assert parse_forward(body(d, backward=False), backward=False).data == op.data


def test_plain_lists_are_1d_tensors_as_the_sdk_reads_them() -> None:
    d = datum([1, 2], target_tokens=[2, 3], advantages=[0.5, -1], logprobs=[-1.0, -2.0])
    op = parse_forward(body(d, loss_fn="importance_sampling"), backward=True)
    assert op.data[0]["loss_fn_inputs"] == {
        "target_tokens": [2, 3],
        "advantages": [0.5, -1.0],
        "logprobs": [-1.0, -2.0],
    }


def test_float32_values_are_rounded_as_on_the_wire() -> None:
    d = datum([1], target_tokens=[2], weights=tensor([0.1]))
    assert parse_forward(body(d), backward=True).data[0]["loss_fn_inputs"]["weights"] == [
        pytest.approx(0.1, abs=1e-8)
    ]


def test_supported_losses_and_their_inputs(refused: Refuse) -> None:
    assert set(LOSS_FN_REQUIRED_INPUTS) == {"cross_entropy", "importance_sampling", "ppo"}
    good = datum([1], target_tokens=[2])
    for loss_fn in ("cispo", "dro", "nope"):
        with refused(f"unsupported loss_fn '{loss_fn}'"):
            parse_forward(body(good, loss_fn=loss_fn), backward=True)
    with refused(r"needs loss_fn_inputs \['target_tokens', 'logprobs', 'advantages'\]"):
        parse_forward(body(good, loss_fn="ppo"), backward=True)


@pytest.mark.parametrize(
    ("config", "ok"),
    [
        (None, True),
        ({"clip_low_threshold": 0.5, "clip_high_threshold": 2.0}, True),
        ({"clip_low_threshold": 1.5}, False),
        ({"clip_high_threshold": 0.9}, False),
        ({"clip_low_threshold": -0.1}, False),
    ],
)
def test_ppo_clip_thresholds(config: dict[str, float] | None, ok: bool, refused: Refuse) -> None:
    d = datum([1], target_tokens=[2], logprobs=[-1.0], advantages=[1.0])
    request = body(d, loss_fn="ppo", config=config)
    if ok:
        assert parse_forward(request, backward=True).loss_fn_config == config
    else:
        with refused("ppo needs 0 <= clip_low_threshold <= 1 <= clip_high_threshold"):
            parse_forward(request, backward=True)


@pytest.mark.parametrize(
    ("d", "message"),
    [
        (datum([], target_tokens=[]), "model_input is empty"),
        (datum([1, -2], target_tokens=[2, 3]), "token ids must be non-negative"),
        (datum([1, 2], target_tokens=[2]), r"'target_tokens'\] has 1 values but model_input has 2"),
        (datum([1], target_tokens=[-3]), "target_tokens must be non-negative"),
        (datum([1], target_tokens=tensor([2.5])), "target_tokens must be integers"),
        (datum([1], target_tokens=[2], weights=tensor([float("nan")])), "NaN or infinity"),
        (datum([1], target_tokens=[2], weights=tensor([float("inf")])), "NaN or infinity"),
        (datum([1, 2], target_tokens=tensor([2, 3], "int64", shape=[2, 1])), r"shape \[2, 1\]"),
        (datum([1], target_tokens=tensor([2], "int64", shape=[3])), "is malformed"),
        (
            datum(
                [1], target_tokens=tensor([2], "int64", shape=[1, 1], sparse_crow_indices=[0, 1])
            ),
            "sparse tensor",
        ),
        (datum([1], target_tokens=tensor([2], "int8")), "invalid forward_backward request"),
    ],
)
def test_bad_datums_are_refused(d: dict[str, Any], message: str, refused: Refuse) -> None:
    with refused(message):
        parse_forward(body(d), backward=True)


def test_empty_data_and_missing_input(refused: Refuse) -> None:
    with refused("data is empty"):
        parse_forward(body(), backward=True)
    with refused("invalid forward request: forward_input"):
        parse_forward({"model_id": "m-1"}, backward=False)
