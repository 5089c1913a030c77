"""MinT's own endpoints on the embedded backend, driven by the unmodified ``mint.mint`` SDK calls.

``forward_backward_reverse_kl`` and ``interpolate_checkpoints`` are checked against
hand computations in plain torch: the tiny model loaded here, the checkpoints' LoRA
factors merged by hand (``W + alpha / r * B @ A``) from the files the server wrote.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from server_helpers import SMALL

os.environ["TINKER_TELEMETRY"] = "0"

pytestmark = pytest.mark.integration

import mint  # noqa: E402
import tinker  # noqa: E402
from mint import types  # noqa: E402
from mint.mint import (  # noqa: E402
    ReverseKLDatum,
    forward_backward_reverse_kl,
    interpolate_checkpoints,
)

from mint_envkit.local.http.limits import Limits  # noqa: E402
from mint_envkit.local.models.loader import load_base_model  # noqa: E402
from mint_envkit.local.server import LocalServer  # noqa: E402

TOL = 1e-4
ALPHA = 32.0


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mint-state")


@pytest.fixture(scope="module")
def server(state_dir: Path) -> Iterator[LocalServer]:
    with LocalServer(models=[SMALL], state_dir=str(state_dir)) as running:
        assert running.preload_errors(timeout=300) == {}
        yield running


@pytest.fixture(scope="module")
def client(server: LocalServer) -> Iterator[Any]:
    service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
    yield service
    service.holder.close()


@pytest.fixture(scope="module")
def base_model() -> Any:
    return load_base_model(SMALL, device="cpu").model


@pytest.fixture(scope="module")
def checkpoints(client: Any) -> dict[str, str]:
    """Two sampler checkpoints trained apart (rank 4 and rank 2, no lm_head adapter)."""
    out = {}
    for name, rank, seed, tokens in (("a", 4, 1, [5, 6, 7, 8]), ("b", 2, 2, [9, 3, 9, 3])):
        tc = client.create_lora_training_client(
            base_model=SMALL, rank=rank, seed=seed, train_unembed=False
        )
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(tokens),
            loss_fn_inputs={"target_tokens": [*tokens[1:], tokens[0]]},
        )
        for _ in range(2):
            tc.forward_backward([datum], "cross_entropy").result()
            tc.optim_step(types.AdamParams(learning_rate=0.05)).result()
        out[name] = tc.save_weights_for_sampler(f"ckpt-{name}").result().path
    return out


def _merged(base: Any, state_dir: Path, parts: list[tuple[str, float]]) -> Any:
    """The base model with ``sum_k c_k * alpha / r_k * B_k @ A_k`` added, by hand."""
    from safetensors.torch import load_file

    model = copy.deepcopy(base)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for path, coef in parts:
            folder = state_dir / path.removeprefix("tinker://")
            tensors = load_file(str(folder / "adapter_model.safetensors"))
            for key, a in tensors.items():
                if "lora_A" not in key:
                    continue
                b = tensors[key.replace("lora_A", "lora_B")]
                layer = key.removeprefix("base_model.model.").removesuffix(".lora_A.weight")
                modules[layer].weight.add_(coef * (ALPHA / a.shape[0]) * (b @ a))
    return model


def _logits(model: Any, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens])).logits[0].float()


def _hand_kl(student: torch.Tensor, reference: torch.Tensor, temperature: float) -> torch.Tensor:
    p = torch.softmax(student / temperature, -1)
    return (p * (torch.log(p) - torch.log_softmax(reference / temperature, -1))).sum(-1)


def _rkl_datum(student: list[int], reference: list[int], completion: list[int]) -> ReverseKLDatum:
    tokens = student + completion
    weights = [0.0] * (len(student) - 1) + [1.0] * len(completion)
    return ReverseKLDatum(
        student_input=types.ModelInput.from_ints(tokens[:-1]),
        reference_input=types.ModelInput.from_ints((reference + completion)[:-1]),
        target_tokens=types.TensorData(data=tokens[1:], dtype="int64", shape=[len(tokens) - 1]),
        weights=types.TensorData(data=weights, dtype="float32", shape=[len(weights)]),
    )


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_reverse_kl_equals_the_hand_computed_full_vocabulary_kl(
    client, checkpoints, base_model, state_dir, temperature
) -> None:
    student = client.create_lora_training_client(base_model=SMALL, rank=4, seed=0)
    prompt_s, prompt_r, completion = [11, 12, 13], [40, 41, 11, 12, 13, 42], [20, 21, 22]
    data = [_rkl_datum(prompt_s, prompt_r, completion), _rkl_datum([3, 4], [3, 4], [5, 6])]
    out = forward_backward_reverse_kl(
        student, reference_model_path=checkpoints["a"], data=data, temperature=temperature
    )
    teacher = _merged(base_model, state_dir, [(checkpoints["a"], 1.0)])
    expected, kls = [], []
    for s_prompt, r_prompt in ((prompt_s, prompt_r), ([3, 4], [3, 4])):
        comp = completion if s_prompt is prompt_s else [5, 6]
        n = len(comp)  # the weighted positions are the last n of both inputs
        s_logits = _logits(base_model, (s_prompt + comp)[:-1])[-n:]  # a fresh LoRA is the base
        r_logits = _logits(teacher, (r_prompt + comp)[:-1])[-n:]
        kl = _hand_kl(s_logits, r_logits, temperature)
        kls += kl.tolist()
        expected.append(float(kl.sum()))
    got = [o.loss.data[0] for o in out.outputs]
    assert got == pytest.approx(expected, abs=TOL)
    assert all(v > 0.01 for v in got)  # the teacher differs: the check is not vacuous
    assert out.metrics["loss:sum"] == pytest.approx(sum(expected), abs=TOL)
    assert out.metrics["reverse_kl:mean"] == pytest.approx(sum(kls) / len(kls), abs=TOL)
    assert out.metrics["num_tokens:sum"] == len(kls)


def test_reverse_kl_accumulates_gradients_and_a_step_lowers_the_kl(client, checkpoints) -> None:
    student = client.create_lora_training_client(base_model=SMALL, rank=4, seed=0)
    data = [_rkl_datum([11, 12, 13], [40, 11, 12, 13], [20, 21, 22])]

    def kl() -> float:
        return (
            forward_backward_reverse_kl(student, reference_model_path=checkpoints["b"], data=data)
            .outputs[0]
            .loss.data[0]
        )

    before = kl()
    kl()  # accumulated twice: the step below uses the sum of both gradients
    metrics = student.optim_step(types.AdamParams(learning_rate=0.01)).result().metrics
    assert metrics["grad_norm"] > 0
    for _ in range(3):
        kl()
        student.optim_step(types.AdamParams(learning_rate=0.01)).result()
    assert kl() < before


def test_reverse_kl_against_the_base_model_of_a_fresh_client_is_zero(client) -> None:
    student = client.create_lora_training_client(base_model=SMALL, rank=4, seed=0)
    out = forward_backward_reverse_kl(
        student, reference_model_path=SMALL, data=[_rkl_datum([1, 2], [1, 2], [3, 4])]
    )
    assert out.outputs[0].loss.data[0] == pytest.approx(0.0, abs=1e-5)


def _logprobs(client: Any, path: str, tokens: list[int]) -> list[float]:
    sampler = client.create_sampling_client(model_path=path)
    return sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()[1:]


def test_interpolation_is_the_linear_combination_of_the_deltas(
    client, checkpoints, base_model, state_dir
) -> None:
    a, b = checkpoints["a"], checkpoints["b"]
    tokens = [5, 6, 7, 8, 9, 3, 9, 3, 1]
    outs = {}
    for coefs in ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5), (1.5, -0.5)):
        resp = interpolate_checkpoints(
            client, source_paths=[a, b], coefficients=list(coefs), output_path=f"mix-{coefs[0]}"
        )
        assert resp.path.endswith(f"/sampler_weights/mix-{coefs[0]}")
        assert resp.coefficients == list(coefs) and resp.checkpoint_type == "sampler"
        outs[coefs] = _logprobs(client, resp.path, tokens)
    lp_a, lp_b = _logprobs(client, a, tokens), _logprobs(client, b, tokens)
    assert outs[(1.0, 0.0)] == pytest.approx(lp_a, abs=TOL)
    assert outs[(0.0, 1.0)] == pytest.approx(lp_b, abs=TOL)
    assert max(abs(x - y) for x, y in zip(lp_a, lp_b, strict=True)) > 0.01  # they differ
    for coefs in ((0.5, 0.5), (1.5, -0.5)):
        model = _merged(base_model, state_dir, [(a, coefs[0]), (b, coefs[1])])
        logp = torch.log_softmax(_logits(model, tokens), -1)
        hand = [float(logp[i, tokens[i + 1]]) for i in range(len(tokens) - 1)]
        assert outs[coefs] == pytest.approx(hand, abs=TOL)


def test_interpolation_with_the_base_model_halves_the_delta(
    client, checkpoints, base_model, state_dir
) -> None:
    resp = interpolate_checkpoints(
        client, source_paths=[checkpoints["a"], SMALL], coefficients=[0.5, 0.5]
    )
    tokens = [5, 6, 7, 8, 2]
    model = _merged(base_model, state_dir, [(checkpoints["a"], 0.5)])
    logp = torch.log_softmax(_logits(model, tokens), -1)
    hand = [float(logp[i, tokens[i + 1]]) for i in range(len(tokens) - 1)]
    assert _logprobs(client, resp.path, tokens) == pytest.approx(hand, abs=TOL)


# ---------------------------------------------------------------------------- bad input


def _raw_post(server: LocalServer, path: str, raw: str) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/api/v1/mint/{path}",
        content=raw,
        headers={"content-type": "application/json"},
        timeout=60,
    )


def test_non_finite_numbers_get_a_422_naming_the_field(server, client, checkpoints) -> None:
    """The SDK cannot send NaN or infinity; a raw client can (1e400 parses as infinity)."""
    student = client.create_lora_training_client(base_model=SMALL, rank=2, seed=0)
    datum = _rkl_datum([1, 2], [1, 2], [3, 4]).model_dump(mode="json")
    body = {
        "model_id": str(student.model_id),
        "reference_model_path": checkpoints["a"],
        "data": [datum],
        "temperature": "TEMP",
    }
    for text in ("1e400", "-1e400"):
        raw = json.dumps(body).replace('"TEMP"', text)
        resp = _raw_post(server, "forward_backward_reverse_kl", raw)
        assert resp.status_code == 422 and "temperature" in resp.text
    body = {"source_paths": [checkpoints["a"], checkpoints["b"]], "coefficients": ["C", 0.5]}
    resp = _raw_post(server, "checkpoints/interpolate", json.dumps(body).replace('"C"', "1e400"))
    assert resp.status_code == 422 and "coefficients[0]" in resp.text


def _with(datum: ReverseKLDatum, changes: dict[str, Any]) -> ReverseKLDatum:
    fields = {k: getattr(datum, k) for k in type(datum).model_fields}
    return ReverseKLDatum(**{**fields, **changes})


def _status(call: Any) -> tuple[int, str]:
    with pytest.raises(tinker.APIStatusError) as info:
        call()
    return info.value.status_code, str(info.value)


def test_bad_reverse_kl_requests_get_a_4xx_naming_the_field(client, checkpoints) -> None:
    student = client.create_lora_training_client(base_model=SMALL, rank=4, seed=0)
    good = _rkl_datum([1, 2], [1, 2], [3, 4])

    def call(data: list[Any] | None = None, **kwargs: Any) -> Any:
        kwargs.setdefault("reference_model_path", checkpoints["a"])
        return lambda: forward_backward_reverse_kl(
            student, data=[good] if data is None else data, **kwargs
        )

    status, text = _status(call(reference_model_path="tinker://nope/sampler_weights/x"))
    assert status == 404 and "reference_model_path" in text
    status, text = _status(call(reference_model_path="no-such/model"))
    assert status == 404 and "reference_model_path" in text
    status, text = _status(call(data=[]))
    assert status == 422 and "data is empty" in text
    for bad in (0.0, -1.0):
        status, text = _status(call(temperature=bad))
        assert status == 422 and "temperature" in text
    short = _with(good, {"weights": types.TensorData(data=[1.0], dtype="float32", shape=[1])})
    status, text = _status(call(data=[short]))
    assert status == 422 and "data[0].weights" in text
    short = _with(good, {"target_tokens": types.TensorData(data=[1], dtype="int64", shape=[1])})
    status, text = _status(call(data=[good, short]))
    assert status == 422 and "data[1].target_tokens" in text
    other = _with(
        _rkl_datum([1, 2], [1, 2], [3, 4]),
        {"reference_input": types.ModelInput.from_ints([1, 2, 7])},
    )
    status, text = _status(call(data=[other]))
    assert status == 422 and "reference_input" in text
    # the refused requests used up their seq_ids: a good one still runs at once
    out = forward_backward_reverse_kl(student, reference_model_path=checkpoints["a"], data=[good])
    assert out.outputs[0].loss.data[0] >= 0


def test_another_base_model_and_a_too_costly_request_are_refused(tmp_path) -> None:
    other = "mint-envkit/tiny-qwen3"
    limits = Limits(max_request_tokens=64)
    with LocalServer(models=[SMALL, other], state_dir=str(tmp_path), limits=limits) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:
            student = service.create_lora_training_client(base_model=SMALL, rank=2, seed=0)
            datum = _rkl_datum([1, 2], [1, 2], [3, 4])
            status, text = _status(
                lambda: forward_backward_reverse_kl(
                    student, reference_model_path=other, data=[datum]
                )
            )
            assert status == 422 and "reference_model_path" in text and "base model" in text
            teacher = service.create_lora_training_client(base_model=other, rank=2, seed=0)
            path = teacher.save_weights_for_sampler("t").result().path
            mine = student.save_weights_for_sampler("s").result().path
            status, text = _status(
                lambda: interpolate_checkpoints(
                    service, source_paths=[mine, path], coefficients=[0.5, 0.5]
                )
            )
            assert status == 422 and "source_paths" in text and "base model" in text
            # priced like forward_backward: datums x the longest student or reference input
            long = _rkl_datum([1] * 40, [1] * 40, [3, 4])
            status, text = _status(
                lambda: forward_backward_reverse_kl(
                    student, reference_model_path=SMALL, data=[long]
                )
            )
            assert status == 413 and "max-request-tokens" in text
        finally:
            service.holder.close()


def test_bad_interpolation_requests_get_a_4xx_naming_the_field(client, checkpoints) -> None:
    a = checkpoints["a"]

    def call(**kwargs: Any) -> Any:
        kwargs.setdefault("source_paths", [a, checkpoints["b"]])
        kwargs.setdefault("coefficients", [0.5, 0.5])
        return lambda: interpolate_checkpoints(client, **kwargs)

    status, text = _status(call(source_paths=[a, "tinker://nope/sampler_weights/x"]))
    assert status == 404 and "source_paths[1]" in text
    status, text = _status(call(coefficients=[1.0]))
    assert status == 422 and "coefficients" in text and "source_paths" in text
    status, text = _status(call(source_paths=[], coefficients=[]))
    assert status == 422 and "source_paths" in text
    status, text = _status(call(output_path="../escape"))
    assert status == 422 and "output_path" in text
    status, text = _status(call(source_paths=[SMALL], coefficients=[1.0]))
    assert status == 422 and "source_paths" in text


def test_both_routes_are_bounded_in_size_like_the_others(tmp_path) -> None:
    """A body over the route's limit is a 413 (reverse-KL: forward_backward's 128 bytes per
    allowed token; interpolation: every small route's 1 MB), before the server reads it."""
    limits = Limits(max_request_tokens=64)
    with LocalServer(models=[SMALL], state_dir=str(tmp_path), limits=limits) as server:
        for path, size in (
            ("forward_backward_reverse_kl", 64 * 128 + 1),
            ("checkpoints/interpolate", (1 << 20) + 1),
        ):
            resp = _raw_post(server, path, '{"pad": "' + "x" * size + '"}')
            assert resp.status_code == 413 and "max-body-mb" in resp.text, (path, resp.text)
