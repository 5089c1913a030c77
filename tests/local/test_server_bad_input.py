"""Bad input: each case gives a readable error at once, and the server keeps serving.

Errors found when a request arrives are 4xx answers the SDK raises without
retrying (APIStatusError with the message); errors found while the engine
works are failed futures the SDK raises as RequestFailedError. ``QUICK`` is a
liveness bound: the failure it guards against is the SDK retrying for minutes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from server_helpers import SMALL, datum, post, tokens

os.environ["TINKER_TELEMETRY"] = "0"

import tinker
from mint import types

QUICK = 10.0


@contextmanager
def raises_quickly(
    exc: type[BaseException] | tuple[type[BaseException], ...], match: str
) -> Iterator[None]:
    t0 = time.perf_counter()
    with pytest.raises(exc, match=match):
        yield
    assert time.perf_counter() - t0 < QUICK


@pytest.fixture(scope="module")
def training(service_client):
    return service_client.create_lora_training_client(base_model=SMALL, rank=4, seed=0)


@pytest.fixture(scope="module")
def sampler(service_client):
    return service_client.create_sampling_client(base_model=SMALL)


@pytest.fixture(autouse=True)
def _server_keeps_serving(real_server):
    yield
    health = httpx.get(f"{real_server.base_url}/api/v1/healthz", timeout=10).json()
    assert health == {"status": "ok", "instance": real_server.backend.instance_id}


def _ce(ids: list[int], targets: list[int], weights: list[float] | None = None) -> types.Datum:
    inputs: dict = {"target_tokens": targets}
    if weights is not None:
        inputs["weights"] = weights
    return types.Datum(model_input=types.ModelInput.from_ints(ids), loss_fn_inputs=inputs)


def test_malformed_json_is_a_400(real_server) -> None:
    for path in ("forward_backward", "asample", "create_model", "retrieve_future"):
        r = httpx.post(
            f"{real_server.base_url}/api/v1/{path}",
            content=b'{"model_id": oops',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    r = httpx.post(f"{real_server.base_url}/api/v1/asample", json=[1, 2])
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    r = httpx.post(f"{real_server.base_url}/api/v1/asample", json={"prompt": "hi"})
    assert r.status_code == 422 and "invalid asample request" in r.json()["error"]


def test_unknown_base_model(service_client) -> None:
    with raises_quickly(tinker.NotFoundError, "unknown base model 'nope/not-a-model'"):
        service_client.create_lora_training_client(base_model="nope/not-a-model", rank=4)
    with raises_quickly(tinker.NotFoundError, "unknown base model"):
        service_client.create_sampling_client(base_model="nope/not-a-model")


def test_unknown_model_id_and_sampler(real_server, service_client) -> None:
    body = {
        "model_id": "no-such-model",
        "seq_id": 1,
        "forward_backward_input": {
            "loss_fn": "cross_entropy",
            "data": [datum([1, 2], target_tokens=[2, 3])],
        },
    }
    r = post(real_server, "forward_backward", body)
    assert r.status_code == 404 and "unknown model_id 'no-such-model'" in r.json()["error"]
    r = post(real_server, "get_info", {"model_id": "no-such-model"})
    assert r.status_code == 404
    r = post(
        real_server,
        "asample",
        {"sampling_session_id": "sampler-nope", "prompt": tokens([1, 2]), "sampling_params": {}},
    )
    assert r.status_code == 404 and "unknown sampling_session_id" in r.json()["error"]
    # through the SDK: a sampler on weights that do not exist
    with raises_quickly(tinker.NotFoundError, "no checkpoint at"):
        service_client.create_sampling_client(model_path="tinker://no-such-run/sampler_weights/x")


def test_token_ids_outside_the_vocabulary(training, sampler) -> None:
    with raises_quickly(tinker.RequestFailedError, r"token id 99999 outside the vocabulary"):
        sampler.sample(
            types.ModelInput.from_ints([1, 99999]), 1, types.SamplingParams(max_tokens=2)
        ).result()
    with raises_quickly(tinker.RequestFailedError, "outside the vocabulary"):
        training.forward_backward([_ce([1, 2], [2, 99999])], "cross_entropy").result()
    with raises_quickly(tinker.UnprocessableEntityError, "non-negative"):
        training.forward_backward([_ce([1, -2], [2, 3])], "cross_entropy").result()
    # the training client still works after the failures (its seq_ids stay in step)
    out = training.forward_backward([_ce([1, 2], [2, 3])], "cross_entropy").result()
    assert len(out.loss_fn_outputs) == 1


def test_empty_prompt_and_bad_sampling_params(sampler) -> None:
    with raises_quickly(tinker.UnprocessableEntityError, "the prompt is empty"):
        sampler.sample(
            types.ModelInput.from_ints([]), 1, types.SamplingParams(max_tokens=2)
        ).result()
    with raises_quickly(tinker.UnprocessableEntityError, "max_tokens must be a positive"):
        sampler.sample(
            types.ModelInput.from_ints([1]), 1, types.SamplingParams(max_tokens=-3)
        ).result()
    with raises_quickly(tinker.UnprocessableEntityError, "num_samples must be at least 1"):
        sampler.sample(
            types.ModelInput.from_ints([1]), 0, types.SamplingParams(max_tokens=2)
        ).result()
    with raises_quickly(tinker.UnprocessableEntityError, "temperature must be > 0"):
        sampler.sample(
            types.ModelInput.from_ints([1]), 1, types.SamplingParams(max_tokens=2, temperature=0)
        ).result()
    with raises_quickly(tinker.UnprocessableEntityError, "top_p"):
        sampler.sample(
            types.ModelInput.from_ints([1]), 1, types.SamplingParams(max_tokens=2, top_p=0)
        ).result()
    with raises_quickly(tinker.UnprocessableEntityError, "empty"):
        sampler.compute_logprobs(types.ModelInput.from_ints([])).result()
    ok = sampler.sample(
        types.ModelInput.from_ints([1]), 1, types.SamplingParams(max_tokens=2)
    ).result()
    assert len(ok.sequences) == 1


def test_unsupported_loss_fn_and_bad_datums(training) -> None:
    good = _ce([1, 2, 3], [2, 3, 4])
    with raises_quickly(tinker.UnprocessableEntityError, "unsupported loss_fn 'cispo'"):
        training.forward_backward([good], "cispo").result()
    with raises_quickly(
        tinker.UnprocessableEntityError, r"'weights'\] has 2 values but model_input has 3 tokens"
    ):
        training.forward_backward([_ce([1, 2, 3], [2, 3, 4], [1.0, 1.0])], "cross_entropy").result()
    with raises_quickly(tinker.UnprocessableEntityError, "needs loss_fn_inputs"):
        training.forward_backward([good], "importance_sampling").result()
    with raises_quickly(tinker.UnprocessableEntityError, "model_input is empty"):
        training.forward_backward([_ce([], [])], "cross_entropy").result()
    with raises_quickly(tinker.UnprocessableEntityError, "invalid adam_params"):
        training.optim_step(types.AdamParams(learning_rate=1e-3, beta1=1.5)).result()
    # still in step: a good request after the refused ones runs
    assert training.optim_step(types.AdamParams(learning_rate=1e-3)).result().metrics is not None


def test_checkpoint_names_cannot_escape(training, service_client) -> None:
    with raises_quickly(tinker.UnprocessableEntityError, "invalid checkpoint name '../escape'"):
        training.save_state("../escape").result()
    with raises_quickly(tinker.UnprocessableEntityError, "invalid checkpoint name"):
        training.save_weights_for_sampler("a/../../b").result()
    with raises_quickly(tinker.UnprocessableEntityError, "must not contain '..'"):
        training.load_state("tinker://x/weights/../../etc").result()
    with raises_quickly(tinker.UnprocessableEntityError, "must not contain '..'"):
        service_client.create_sampling_client(model_path="tinker://../weights/x")
    path = training.save_state("fine-name_1.0").result().path
    assert path.endswith("/weights/fine-name_1.0")


def test_oversized_body_is_refused_with_413(real_server) -> None:
    big = b'{"pad": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    t0 = time.perf_counter()
    r = httpx.post(
        f"{real_server.base_url}/api/v1/forward_backward",
        content=big,
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert time.perf_counter() - t0 < QUICK
    assert r.status_code == 413 and "over this server's limit" in r.json()["error"]

    def chunks() -> Iterator[bytes]:  # no content-length: counted while read
        for _ in range(65):
            yield b" " * (1024 * 1024)

    r = httpx.post(
        f"{real_server.base_url}/api/v1/asample",
        content=chunks(),
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 413
