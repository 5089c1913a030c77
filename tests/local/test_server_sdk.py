"""Integration: the unmodified ``mint`` SDK drives the embedded server and the real engine.

The whole RL path of the issue, through the SDK's async API: LoRA client,
tokenizer, a sampled group, forward_backward (importance_sampling),
optim_step, a new sampler, compute_logprobs on the base model, save state,
load it into a new training client; and the numbers are checked.
"""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path

import pytest
from server_helpers import SMALL

os.environ["TINKER_TELEMETRY"] = "0"

pytestmark = pytest.mark.integration

import mint  # noqa: E402
from mint import types  # noqa: E402

TOL = 1e-4


def _datum(prompt: list[int], completion: list[int], **per_completion: list[float]) -> types.Datum:
    """Tokens ``prompt + completion``, shifted; ``per_completion`` arrays padded with 0 on the prompt."""
    n = len(prompt) - 1
    inputs: dict[str, list[float] | list[int]] = {"target_tokens": prompt[1:] + completion}
    for key, values in per_completion.items():
        inputs[key] = [0.0] * n + list(values)
    return types.Datum(
        model_input=types.ModelInput.from_ints(prompt + completion[:-1]), loss_fn_inputs=inputs
    )


def _completion_logprobs(out: types.ForwardBackwardOutput, i: int, prompt_len: int) -> list[float]:
    return out.loss_fn_outputs[i]["logprobs"].tolist()[prompt_len - 1 :]


def _close(a: list[float], b: list[float], tol: float = TOL) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


async def test_rl_round_trip_through_the_sdk(real_server, service_client) -> None:
    client = service_client
    training = await client.create_lora_training_client_async(
        base_model=SMALL, rank=8, seed=0, train_unembed=True
    )
    tokenizer = await asyncio.to_thread(training.get_tokenizer)
    prompt = tokenizer.encode("What is 2 + 3?")
    assert prompt and tokenizer.decode(prompt) == "What is 2 + 3?"
    model_input = types.ModelInput.from_ints(prompt)

    # sampler on the current weights; a group of 4
    saved = await (await training.save_weights_for_sampler_async("s0")).result_async()
    assert saved.path.startswith("tinker://") and saved.path.endswith("/sampler_weights/s0")
    sampler0 = await training.create_sampling_client_async(saved.path)
    params = types.SamplingParams(max_tokens=8, temperature=1.0, seed=123)
    real_server.reset_counts()
    group = await sampler0.sample_async(model_input, 4, params)
    assert real_server.request_counts()["asample"] == 1
    assert len(group.sequences) == 4
    for seq in group.sequences:
        assert seq.stop_reason in ("stop", "length") and 1 <= len(seq.tokens) <= 8
        assert len(seq.logprobs) == len(seq.tokens)
        assert all(math.isfinite(v) and v <= 0 for v in seq.logprobs)

    # sampled logprobs equal the learner's forward logprobs on the same weights (temperature 1)
    data = [_datum(prompt, s.tokens) for s in group.sequences]
    fwd = await (await training.forward_async(data, "cross_entropy")).result_async()
    for i, seq in enumerate(group.sequences):
        assert _close(_completion_logprobs(fwd, i, len(prompt)), list(seq.logprobs))

    # importance-sampling update with group-relative advantages
    rewards = [1.0 if s.tokens[0] == group.sequences[0].tokens[0] else 0.0 for s in group.sequences]
    mean = sum(rewards) / len(rewards)
    is_data = [
        _datum(prompt, s.tokens, logprobs=s.logprobs, advantages=[r - mean] * len(s.tokens))
        for s, r in zip(group.sequences, rewards, strict=True)
    ]
    fb = await (
        await training.forward_backward_async(is_data, "importance_sampling")
    ).result_async()
    assert math.isfinite(fb.metrics["loss:sum"]) and len(fb.loss_fn_outputs) == 4
    step = await (
        await training.optim_step_async(types.AdamParams(learning_rate=1e-2))
    ).result_async()
    assert step.metrics is not None and step.metrics["grad_norm"] > 0

    # a new sampler sees the update; the old one is unchanged (same seed, same outputs)
    saved1 = await (await training.save_weights_for_sampler_async("s1")).result_async()
    sampler1 = await training.create_sampling_client_async(saved1.path)
    new_fwd = await (await training.forward_async(data, "cross_entropy")).result_async()
    moved = [_completion_logprobs(new_fwd, i, len(prompt)) for i in range(len(group.sequences))]
    assert any(
        not _close(m, list(s.logprobs), 1e-3) for m, s in zip(moved, group.sequences, strict=True)
    )
    again = await sampler0.sample_async(model_input, 4, params)
    for old, new in zip(group.sequences, again.sequences, strict=True):
        assert old.tokens == new.tokens and _close(list(old.logprobs), list(new.logprobs), 1e-6)
    lp1 = await sampler1.compute_logprobs_async(
        types.ModelInput.from_ints(prompt + group.sequences[0].tokens)
    )
    assert _close(list(lp1[len(prompt) :]), moved[0])

    # compute_logprobs against the base model: one value per token, the first None; the
    # untrained sampler s0 (LoRA B starts at zero) equals the base model
    reference = await client.create_sampling_client_async(base_model=SMALL)
    ref_lp = await reference.compute_logprobs_async(model_input)
    assert len(ref_lp) == len(prompt) and ref_lp[0] is None
    assert all(v is not None and math.isfinite(v) and v <= 0 for v in ref_lp[1:])
    s0_lp = await sampler0.compute_logprobs_async(model_input)
    assert s0_lp[0] is None and _close(s0_lp[1:], ref_lp[1:], 1e-5)

    # save state; load it into new training clients; they reproduce the saved weights
    state = await (await training.save_state_async("st1")).result_async()
    restored = await client.create_training_client_from_state_async(state.path)
    assert restored.model_id != training.model_id
    a = await (await training.forward_async(data, "cross_entropy")).result_async()
    b = await (await restored.forward_async(data, "cross_entropy")).result_async()
    for i in range(len(data)):
        assert _close(
            a.loss_fn_outputs[i]["logprobs"].tolist(),
            b.loss_fn_outputs[i]["logprobs"].tolist(),
            1e-5,
        )

    # with the optimizer state too: one more identical step keeps them identical
    resumed = await client.create_training_client_from_state_with_optimizer_async(state.path)
    for tc in (training, resumed):
        await (await tc.forward_backward_async(is_data, "importance_sampling")).result_async()
        await (await tc.optim_step_async(types.AdamParams(learning_rate=1e-2))).result_async()
    a = await (await training.forward_async(data, "cross_entropy")).result_async()
    c = await (await resumed.forward_async(data, "cross_entropy")).result_async()
    for i in range(len(data)):
        assert _close(
            a.loss_fn_outputs[i]["logprobs"].tolist(),
            c.loss_fn_outputs[i]["logprobs"].tolist(),
            1e-5,
        )

    # checkpoints: listed by the REST client, deleted by tinker path
    rest = client.create_rest_client()
    listed = await rest.list_checkpoints_async(training.model_id)
    paths = {c.tinker_path for c in listed.checkpoints}
    assert {saved.path, saved1.path, state.path} <= paths
    await rest.delete_checkpoint_from_tinker_path_async(saved1.path)
    listed = await rest.list_checkpoints_async(training.model_id)
    assert saved1.path not in {c.tinker_path for c in listed.checkpoints}
    runs = await rest.list_training_runs_async()
    assert training.model_id in {r.training_run_id for r in runs.training_runs}
    again1 = await sampler1.sample_async(model_input, 1, params)  # a sampler outlives its files
    assert len(again1.sequences) == 1


async def test_chunked_forward_backward_is_applied_in_order(real_server, service_client) -> None:
    """Over 1024 datums the SDK sends two chunks at once, the first one last; seq_ids order them."""
    training = await service_client.create_lora_training_client_async(
        base_model=SMALL, rank=4, seed=1
    )
    n = 1025  # one datum over the SDK's 1024-datum chunk size: two chunks, one token each
    data = [
        types.Datum(
            model_input=types.ModelInput.from_ints([10 + i % 500]),
            loss_fn_inputs={"target_tokens": [11 + i % 7]},
        )
        for i in range(n)
    ]
    real_server.reset_counts()
    out = await (await training.forward_backward_async(data, "cross_entropy")).result_async()
    assert real_server.request_counts()["forward_backward"] == 2
    assert len(out.loss_fn_outputs) == n
    single = await (await training.forward_async([data[-1]], "cross_entropy")).result_async()
    assert _close(
        out.loss_fn_outputs[-1]["logprobs"].tolist(),
        single.loss_fn_outputs[0]["logprobs"].tolist(),
        1e-5,
    )


@pytest.mark.parametrize("api_key", ["sk-integration", "tml-integration"])
def test_sync_sdk_with_sk_and_tml_keys(real_server, api_key: str) -> None:
    client = mint.ServiceClient(base_url=real_server.base_url, api_key=api_key)
    training = client.create_lora_training_client(base_model=SMALL, rank=4, seed=2)
    info = training.get_info()
    assert info.model_data.model_name == SMALL and info.lora_rank == 4
    assert Path(info.model_data.tokenizer_id or "").is_absolute()
    sampler = client.create_sampling_client(base_model=SMALL)
    result = sampler.sample(
        types.ModelInput.from_ints([1, 2, 3]), 2, types.SamplingParams(max_tokens=3, seed=0)
    ).result()
    assert len(result.sequences) == 2


def test_state_keeps_the_lora_layout(service_client) -> None:
    """weights_info reports the LoRA flags, so a restored client has the saved layout."""
    training = service_client.create_lora_training_client(
        base_model=SMALL, rank=4, seed=3, train_unembed=False, train_mlp=False
    )
    path = training.save_state("layout").result().path
    info = service_client.create_rest_client().get_weights_info_by_tinker_path(path).result()
    assert (info.lora_rank, info.train_unembed, info.train_mlp, info.train_attn) == (
        4,
        False,
        False,
        True,
    )
    restored = service_client.create_training_client_from_state_with_optimizer(path)
    assert restored.get_info().lora_rank == 4
