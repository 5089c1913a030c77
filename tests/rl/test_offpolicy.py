"""Bounded-staleness scheduling: which weights sample which batch, and what a batch carries."""

from __future__ import annotations

import asyncio
import types

import attrs
import pytest

from mint_envkit.rl.offpolicy import (
    BatchPipeline,
    prepare_batch,
    sampler_version,
    staleness_metrics,
    versioned_records,
)


class FakeClient:
    """Samples [7, 8] at logprobs [-0.1, -0.2]; its own logprob of any token is -0.5."""

    def __init__(self, name: str = "sampler", delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.sampled = 0
        self.scored = 0

    async def sample_async(self, *, prompt, num_samples, sampling_params):
        self.sampled += 1
        await asyncio.sleep(self.delay)
        seq = types.SimpleNamespace(tokens=[7, 8], logprobs=[-0.1, -0.2], stop_reason="length")
        return types.SimpleNamespace(sequences=[seq] * num_samples)

    async def compute_logprobs_async(self, model_input):
        self.scored += 1
        return [None] + [-0.5] * (len(model_input.to_ints()) - 1)


@pytest.mark.parametrize(
    ("k", "start", "versions"),
    [(0, 0, [0, 1, 2, 3]), (1, 0, [0, 0, 1, 2]), (2, 0, [0, 0, 0, 1]), (1, 2, [2, 2, 3, 4])],
)
def test_each_batch_is_sampled_at_most_k_versions_back(k, start, versions):
    steps = range(start, start + len(versions))
    got = [sampler_version(s, start=start, max_steps_off_policy=k) for s in steps]
    assert got == versions


async def _pipeline(phase_config, k, total=4, start=0):
    config = attrs.evolve(phase_config, max_steps_off_policy=k)
    train, _ = await config.dataset_builder()
    return BatchPipeline(config, train, None, start=start, total=total)


async def test_due_batches_fill_the_pipeline_once_then_one_per_step(phase_config):
    on = await _pipeline(phase_config, 0)
    assert [on.due(v) for v in range(4)] == [[0], [1], [2], [3]]
    ahead = await _pipeline(phase_config, 1)
    assert [ahead.due(v) for v in range(4)] == [[0, 1], [2], [3], []]
    resumed = await _pipeline(phase_config, 2, total=6, start=2)
    assert [resumed.due(v) for v in range(2, 6)] == [[2, 3, 4], [5], [], []]


async def test_pipeline_samples_ahead_with_the_given_weights(phase_config):
    pipeline = await _pipeline(phase_config, 1, total=3)
    v0, v1 = FakeClient("v0"), FakeClient("v1")
    try:
        pipeline.launch(0, v0)
        assert sorted(pipeline.tasks) == [0, 1]
        first = await pipeline.take(0)
        pipeline.launch(1, v1)
        second, third = await pipeline.take(1), await pipeline.take(2)
    finally:
        await pipeline.close()
    assert [(b.step, b.version) for b in (first, second, third)] == [(0, 0), (1, 0), (2, 1)]
    assert v0.sampled == 2 and v1.sampled == 1
    assert staleness_metrics(second)["off_policy/staleness_max"] == 1.0
    assert staleness_metrics(first)["off_policy/staleness_mean"] == 0.0
    records = versioned_records(third, {})
    assert records and {r["sampler_version"] for r in records} == {1}


async def test_close_cancels_batches_in_flight(phase_config):
    pipeline = await _pipeline(phase_config, 1)
    pipeline.launch(0, FakeClient(delay=30))
    tasks = list(pipeline.tasks.values())
    await pipeline.close()
    assert all(t.cancelled() for t in tasks) and not pipeline.tasks


async def test_prepare_batch_asks_reference_and_sampler_for_every_reply(phase_config):
    train, _ = await phase_config.dataset_builder()
    sampler, reference = FakeClient(), FakeClient("reference")
    config = attrs.evolve(phase_config, temperature=0.7)
    prepared = await prepare_batch(
        config, sampler, train.get_batch(0), step=0, version=0, reference=reference
    )
    assert sampler.scored == 2 and reference.scored == 2  # one per reply of the group of 2
    assert prepared.behaviour(0) == [[-0.5, -0.5]] * 2  # recomputed at T=1
    assert prepared.reference[0] == [[-0.5, -0.5]] * 2
    plain = await prepare_batch(phase_config, FakeClient(), train.get_batch(0), step=0, version=0)
    assert plain.behaviour(0) == [[-0.1, -0.2]] * 2 and not plain.reference
    samples, reference, behaviour = prepared.trained({0: [0.5, -0.5]})
    assert [s.logprobs for s in samples] == behaviour == [[-0.5, -0.5]] * 2
    assert [s.advantage for s in samples] == [0.5, -0.5] and len(reference) == 2
    assert prepared.kl_metrics() == {
        "optim/behavior_logprobs_recomputed": 1.0,
        "kl_policy_base": 0.0,
    }
    assert plain.kl_metrics() == {"optim/behavior_logprobs_recomputed": 0.0}
    assert plain.trained({})[0] == []


class FakeTraining:
    """Counts the weight snapshots asked for."""

    def __init__(self) -> None:
        self.snapshots = 0

    def save_weights_and_get_sampling_client(self):
        self.snapshots += 1
        return f"sampler-{self.snapshots}"


async def test_snapshots_are_requested_once_and_never_past_the_last_step(phase_config):
    pipeline = await _pipeline(phase_config, 0, total=2)
    training = FakeTraining()
    assert await pipeline.snapshot(0, training) == "sampler-1"
    pipeline.request_snapshot(1, training)
    pipeline.request_snapshot(1, training)
    pipeline.request_snapshot(2, training)  # past the last step: nothing
    assert await pipeline.snapshot(1, training) == "sampler-2"
    assert training.snapshots == 2 and not pipeline.snapshots
