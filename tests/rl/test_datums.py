"""From scored rollouts to training data: samples, datums."""

from __future__ import annotations

import pytest

from mint_envkit.rl.datums import (
    Sample,
    datum_metrics,
    plan_datums,
    to_datum,
    to_datums,
    training_samples,
)
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition


def test_one_sample_per_reply_of_the_groups_that_train(make_group):
    rollouts = [make_group(0, [1.0, 0.0]), make_group(1, [1.0, 1.0])]
    samples = training_samples(rollouts, {0: [0.5, -0.5]})
    assert samples == [
        Sample(prompt=[1, 2, 3], reply=[10, 11], logprobs=[-0.5, -0.25], advantage=0.5),
        Sample(prompt=[1, 2, 3], reply=[11, 11], logprobs=[-0.5, -0.25], advantage=-0.5),
    ]
    assert samples[0].token_advantages() == [0.5, 0.5]


def test_a_datum_trains_only_the_reply():
    datum = to_datum([1, 2, 3], [4, 5], [0.5, 0.5], [-0.1, -0.2])
    assert datum.model_input.to_ints() == [1, 2, 3, 4]
    inputs = datum.loss_fn_inputs
    assert inputs["target_tokens"].data == [2, 3, 4, 5]
    assert inputs["logprobs"].data == pytest.approx([0.0, 0.0, -0.1, -0.2])
    assert inputs["advantages"].data == [0.0, 0.0, 0.5, 0.5]


def test_to_datums_pairs_samples_with_their_advantages():
    samples = [Sample([1], [2], [-0.1], 1.0), Sample([3], [4, 5], [-0.1, -0.2], -1.0)]
    data = to_datums(samples, [[1.0], [-1.0, -2.0]])
    assert [d.loss_fn_inputs["advantages"].data for d in data] == [[1.0], [-1.0, -2.0]]


class FakeReference:
    """A reference model whose logprob of every token is -1."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    async def compute_logprobs_async(self, model_input):
        tokens = model_input.to_ints()
        self.asked.append(tokens)
        return [None] + [-1.0] * (len(tokens) - 1)


def _episode(*turns: tuple[list[int], list[int]]) -> Trajectory:
    """An episode from (observation, reply) pairs; every reply has logprob -0.5 per token."""
    return Trajectory(
        transitions=[
            Transition(
                ob=ob,
                ac=SampledTokens(tokens=reply, logprobs=[-0.5] * len(reply), stop_reason="stop"),
                reward=0.0,
                episode_done=number == len(turns) - 1,
            )
            for number, (ob, reply) in enumerate(turns)
        ]
    )


def test_an_episode_whose_observations_extend_each_other_is_one_datum():
    faithful = _episode(
        ([1, 2], [3, 4]), ([1, 2, 3, 4, 5, 6], [7]), ([1, 2, 3, 4, 5, 6, 7, 8], [9])
    )
    single = _episode(([1, 2], [3]))
    rollouts = [GroupRollout(0, [], [faithful, single])]
    samples = training_samples(rollouts, {0: [1.0, -1.0]})
    assert plan_datums(samples) == [[0, 1, 2], [3]]
    data = to_datums(samples, [s.token_advantages() for s in samples])
    assert len(data) == 2
    merged = data[0]
    assert merged.model_input.to_ints() == [1, 2, 3, 4, 5, 6, 7, 8]
    inputs = merged.loss_fn_inputs
    assert inputs["target_tokens"].data == [2, 3, 4, 5, 6, 7, 8, 9]
    # sampled tokens (3, 4, 7, 9) carry the advantage and their logprob; env tokens zeros
    assert inputs["advantages"].data == [0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    assert inputs["logprobs"].data == [0.0, -0.5, -0.5, 0.0, 0.0, -0.5, 0.0, -0.5]
    assert datum_metrics(samples, plan_datums(samples)) == {
        "train/datums": 2,
        "train/datum_tokens": 8 + 2,
        "train/turn_fallbacks": 0,
    }


def test_an_observation_that_does_not_extend_splits_the_episode_and_is_counted():
    rewritten = _episode(([1, 2], [3]), ([1, 2, 99, 5], [6]), ([1, 2, 99, 5, 6, 7], [8]))
    samples = training_samples([GroupRollout(0, [], [rewritten])], {0: [1.0]})
    plan = plan_datums(samples)
    assert plan == [[0], [1, 2]]
    assert datum_metrics(samples, plan)["train/turn_fallbacks"] == 1
    data = to_datums(samples, [s.token_advantages() for s in samples])
    assert [d.model_input.to_ints() for d in data] == [[1, 2], [1, 2, 99, 5, 6, 7]]


def test_replies_of_different_episodes_never_share_a_datum():
    a = _episode(([1], [2]))
    b = _episode(([1, 2], [3]))  # extends a's prompt + reply, but is another episode
    samples = training_samples([GroupRollout(0, [], [a, b])], {0: [1.0, -1.0]})
    assert plan_datums(samples) == [[0], [1]]
