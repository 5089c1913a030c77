"""num_substeps, post-update KL and parse-failure masking, against a fake training client.

Every figure is computed by hand from the numbers the fake client is given.
"""

from __future__ import annotations

import types

import attrs
import pytest

from mint_envkit import ConfigError
from mint_envkit.rl.datums import (
    Sample,
    mask_parse_failures,
    reply_parse_failed,
    training_samples,
)
from mint_envkit.rl.diagnostics import post_kl_metrics
from mint_envkit.rl.train import train_on_batch
from mint_envkit.rl.update import merge_substep_metrics, substep_slices
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition


class Done:
    """An SDK future that has finished."""

    def __init__(self, value) -> None:
        self.value = value

    def __await__(self):
        yield from ()
        return self.value


def _column(datum, key: str) -> list[float]:
    return list(datum.loss_fn_inputs[key].data)


class RecordingTrainingClient:
    """Records every call with its datums; answers with the logprobs it is given.

    ``learner[i]`` / ``updated[i]``: the logprobs over every target position of the
    datum whose first target token is ``i`` (what forward_backward / forward return).
    """

    def __init__(self, learner: dict[int, list[float]], updated: dict[int, list[float]]):
        self.learner, self.updated = learner, updated
        self.calls: list[tuple] = []

    def _outputs(self, data, table):
        return [{"logprobs": table[_column(d, "target_tokens")[0]]} for d in data]

    async def forward_backward_async(self, data, loss_fn, loss_fn_config):
        self.calls.append(("forward_backward", data))
        n = len(self.calls)
        outputs = self._outputs(data, self.learner)
        return Done(types.SimpleNamespace(metrics={"loss:sum": float(n)}, loss_fn_outputs=outputs))

    async def optim_step_async(self, params):
        self.calls.append(("optim_step", params.learning_rate))
        return Done(types.SimpleNamespace(metrics={"grad_norm": float(len(self.calls))}))

    async def forward_async(self, data, loss_fn, loss_fn_config):
        self.calls.append(("forward", data))
        outputs = self._outputs(data, self.updated)
        return Done(types.SimpleNamespace(metrics={}, loss_fn_outputs=outputs))


def _samples() -> list[Sample]:
    """Four single-turn replies; sample i's prompt is [10 * (i + 1)], its datum's first
    target token is its first reply token (i + 1)."""
    return [
        Sample([10], [1, 2], [-0.1, -0.2], 1.0),
        Sample([20], [2], [-0.3], -1.0),
        Sample([30], [3, 4], [-0.4, -0.5], 0.5),
        Sample([40], [4], [-0.6], -0.5),
    ]


LEARNER = {1: [-0.2, -0.2], 2: [-0.1], 3: [-0.4, -0.7], 4: [-0.3]}
UPDATED = {1: [-0.5, -0.6], 2: [-0.2], 3: [-0.1, -0.1], 4: [-0.9]}


async def test_two_substeps_send_two_pairs_with_the_halves_in_order_and_the_same_rate(
    phase_config,
):
    config = attrs.evolve(phase_config, num_substeps=2, learning_rate=0.02)
    training = RecordingTrainingClient(LEARNER, UPDATED)
    samples = _samples()
    submitted_at = []
    metrics = await train_on_batch(
        training,
        config,
        samples,
        [s.token_advantages() for s in samples],
        after_submit=lambda: submitted_at.append(len(training.calls)),
    )
    kinds = [c[0] for c in training.calls]
    assert kinds == ["forward_backward", "optim_step", "forward_backward", "optim_step"]
    first, second = training.calls[0][1], training.calls[2][1]
    assert [_column(d, "target_tokens") for d in first] == [[1, 2], [2]]
    assert [_column(d, "target_tokens") for d in second] == [[3, 4], [4]]
    assert [_column(d, "advantages") for d in second] == [[0.5, 0.5], [-0.5]]
    assert training.calls[1][1] == training.calls[3][1] == 0.02
    assert submitted_at == [4]  # the next snapshot is queued behind the last optim_step
    assert metrics["optim/substeps"] == 2
    assert metrics["train/loss:sum"] == pytest.approx(1.0 + 3.0)  # summed over substeps
    assert metrics["optim/grad_norm"] == pytest.approx((2.0 + 4.0) / 2)  # averaged
    # sampler vs learner over both halves: behaviour - learner per token
    diffs = [0.1, 0.0, -0.2, 0.0, 0.2, -0.3]
    assert metrics["optim/kl_sample_train_v1"] == pytest.approx(sum(diffs) / 6)
    assert metrics["optim/kl_sample_train_v2"] == pytest.approx(0.5 * sum(d * d for d in diffs) / 6)
    assert "kl_pre_post_v1" not in metrics  # compute_post_kl is off by default


async def test_one_substep_is_one_pair_of_every_datum(phase_config):
    training = RecordingTrainingClient(LEARNER, UPDATED)
    samples = _samples()
    metrics = await train_on_batch(
        training, phase_config, samples, [s.token_advantages() for s in samples]
    )
    assert [c[0] for c in training.calls] == ["forward_backward", "optim_step"]
    assert len(training.calls[0][1]) == 4
    assert "optim/substeps" not in metrics


async def test_more_substeps_than_datums_gives_one_step_per_datum(phase_config):
    training = RecordingTrainingClient(LEARNER, UPDATED)
    samples = _samples()[:3]
    config = attrs.evolve(phase_config, num_substeps=8)
    metrics = await train_on_batch(
        training, config, samples, [s.token_advantages() for s in samples]
    )
    assert [len(c[1]) for c in training.calls if c[0] == "forward_backward"] == [1, 1, 1]
    assert metrics["optim/substeps"] == 3


def test_substep_slices_split_like_the_cookbook():
    # tinker-cookbook split_list: edges = linspace(0, n, k + 1).astype(int)
    assert substep_slices(5, 3) == [slice(0, 1), slice(1, 3), slice(3, 5)]
    assert substep_slices(4, 2) == [slice(0, 2), slice(2, 4)]
    assert substep_slices(7, 1) == [slice(0, 7)]
    assert substep_slices(2, 4) == [slice(0, 1), slice(1, 2)]
    assert substep_slices(0, 2) == []


def test_merging_substep_metrics_follows_each_keys_reduction():
    merged = merge_substep_metrics(
        [{"loss:sum": 1.0, "m:max": 1.0, "m:min": 1.0, "g:mean": 1.0, "lr": 2.0},
         {"loss:sum": 2.0, "m:max": 3.0, "m:min": 0.5, "g:mean": 3.0, "lr": 4.0}]
    )  # fmt: skip
    assert merged == {"loss:sum": 3.0, "m:max": 3.0, "m:min": 0.5, "g:mean": 2.0, "lr": 3.0}
    assert merge_substep_metrics([{"x": 1.5}]) == {"x": 1.5}


async def test_post_kl_is_behaviour_minus_updated_logprobs_after_the_whole_update(phase_config):
    config = attrs.evolve(phase_config, num_substeps=2, compute_post_kl=True)
    training = RecordingTrainingClient(LEARNER, UPDATED)
    samples = _samples()
    submitted_at = []
    metrics = await train_on_batch(
        training,
        config,
        samples,
        [s.token_advantages() for s in samples],
        after_submit=lambda: submitted_at.append(len(training.calls)),
    )
    kinds = [c[0] for c in training.calls]
    assert kinds == ["forward_backward", "optim_step"] * 2 + ["forward"]
    assert submitted_at == [4]  # the measuring forward does not delay the next snapshot
    assert len(training.calls[4][1]) == 4  # every datum is measured
    # behaviour [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6]; updated [-0.5, -0.6, -0.2, -0.1, -0.1, -0.9]
    diffs = [0.4, 0.4, -0.1, -0.3, -0.4, 0.3]
    assert metrics["kl_pre_post_v1"] == pytest.approx(0.3 / 6)
    assert metrics["kl_pre_post_v2"] == pytest.approx(0.5 * sum(d * d for d in diffs) / 6)


async def test_post_kl_is_not_measured_when_nothing_trains(phase_config):
    config = attrs.evolve(phase_config, compute_post_kl=True)
    training = RecordingTrainingClient(LEARNER, UPDATED)
    metrics = await train_on_batch(training, config, [], [])
    assert training.calls == [] and "kl_pre_post_v1" not in metrics


def test_post_kl_metrics_on_known_numbers():
    metrics = post_kl_metrics([[-0.5, -1.0], [-2.0]], [[-0.7, -0.6], [-1.0]])
    assert metrics["kl_pre_post_v1"] == pytest.approx((0.2 - 0.4 - 1.0) / 3)
    assert metrics["kl_pre_post_v2"] == pytest.approx(0.5 * (0.04 + 0.16 + 1.0) / 3)
    assert post_kl_metrics([], []) == {}


@pytest.mark.parametrize(
    ("metrics", "logs", "failed"),
    [
        ({}, {"parse_status": "ok"}, False),
        ({}, {"parse_status": "no_match"}, True),
        ({}, {"parse_status": "truncated"}, True),
        ({}, {"parse_status": None}, False),  # nothing read an answer
        ({}, {}, False),
        ({"parse_error": 1.0}, {"end": "no stop token"}, True),  # the renderer failed
        ({"parse_error": 0.0}, {"parse_status": "ok"}, False),
    ],
)
def test_a_reply_fails_to_parse_by_its_parse_status_or_the_renderers_parse_error(
    metrics, logs, failed
):
    assert reply_parse_failed(metrics, logs) is failed


def test_training_samples_carry_each_turns_parse_failure():
    def turn(tokens, logs, done):
        reply = SampledTokens(tokens, [-0.5] * len(tokens), "stop")
        return Transition(ob=[1], ac=reply, reward=0.0, episode_done=done, logs=logs)

    episodes = [
        Trajectory([turn([2], {}, False), turn([3], {"parse_status": "no_match"}, True)]),
        Trajectory([turn([4], {"parse_status": "ok"}, True)]),
    ]
    rollout = GroupRollout(0, [], episodes)
    samples = training_samples([rollout], {0: [1.0, -1.0]})
    assert [s.parse_failed for s in samples] == [False, True, False]


def test_masking_zeroes_the_advantages_of_unparsed_replies_and_counts_them():
    samples = [attrs.evolve(s, parse_failed=i in (1, 2)) for i, s in enumerate(_samples())]
    advantages = [[1.0, 0.9], [-1.0], [0.5, 0.4], [-0.5]]  # e.g. after a KL penalty
    masked, counts = mask_parse_failures(samples, advantages)
    assert masked == [[1.0, 0.9], [0.0], [0.0, 0.0], [-0.5]]
    assert counts == {"train/masked_parse_failures": 2, "train/masked_tokens": 3}


async def test_the_loop_sends_zero_weights_for_unparsed_replies_only_when_asked(phase_config):
    samples = [attrs.evolve(s, parse_failed=i == 2) for i, s in enumerate(_samples())]
    advantages = [s.token_advantages() for s in samples]
    sent = {}
    for mask in (False, True):
        training = RecordingTrainingClient(LEARNER, UPDATED)
        config = attrs.evolve(phase_config, mask_parse_failures=mask)
        metrics = await train_on_batch(training, config, samples, advantages)
        calls = [data for kind, data in training.calls if kind != "optim_step"]
        sent[mask] = [_column(d, "advantages") for data in calls for d in data]
        assert ("train/masked_parse_failures" in metrics) is mask
    assert sent[False][2] == [0.5, 0.5]
    # the masked reply's zero weights: a forward after the others' forward_backward
    # (a datum whose advantages are all 0 needs no backward pass, rl/update.py)
    assert [c[0] for c in training.calls[:2]] == ["forward_backward", "forward"]
    assert sent[True] == [[1.0, 1.0], [-1.0], [-0.5], [0.0, 0.0]]
    assert sent[True][:2] == sent[False][:2]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_substeps", 0, "Config.num_substeps must be an integer >= 1"),
        ("num_substeps", 1.5, "Config.num_substeps must be an integer >= 1"),
        ("num_substeps", True, "Config.num_substeps must be an integer >= 1"),
        ("compute_post_kl", 1, "Config.compute_post_kl must be True or False"),
        ("mask_parse_failures", "yes", "Config.mask_parse_failures must be True or False"),
    ],
)
def test_bad_values_of_the_new_fields_are_refused_by_name(phase_config, field, value, message):
    with pytest.raises(ConfigError, match=message):
        attrs.evolve(phase_config, **{field: value})


def test_the_new_fields_default_to_the_cookbooks_behaviour(phase_config):
    assert (phase_config.num_substeps, phase_config.compute_post_kl) == (1, False)
    assert phase_config.mask_parse_failures is False
