"""Sampler-vs-learner metrics, behaviour logprobs, and the note of a step that trained nothing."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit.rl.datums import Sample, plan_datums
from mint_envkit.rl.diagnostics import (
    learner_logprobs,
    mean_kl,
    no_update_note,
    recomputes_behavior_logprobs,
    reply_logprobs,
    sample_train_metrics,
)


class FakeLogprobClient:
    """A sampling client whose logprob of every token is ``value``."""

    def __init__(self, value: float = -1.0) -> None:
        self.value = value
        self.asked: list[list[int]] = []

    async def compute_logprobs_async(self, model_input):
        tokens = model_input.to_ints()
        self.asked.append(tokens)
        return [None] + [self.value] * (len(tokens) - 1)


def test_sample_train_metrics_follow_the_cookbook_formulas():
    behaviour = [[-0.5, -1.0], [-2.0]]
    learner = [[-0.5, -0.8], [-1.0]]
    metrics = sample_train_metrics(behaviour, learner)
    # differences 0.0, -0.2, -1.0 over 3 action tokens
    assert metrics["optim/kl_sample_train_v1"] == pytest.approx(-1.2 / 3)
    assert metrics["optim/kl_sample_train_v2"] == pytest.approx(0.5 * (0.04 + 1.0) / 3)
    assert metrics["optim/entropy"] == pytest.approx(3.5 / 3)
    assert sample_train_metrics([], []) == {}


def test_learner_logprobs_are_the_tail_of_each_datum():
    samples = [Sample([1, 2, 3], [4, 5], [-0.1, -0.2], 1.0), Sample([1], [2], [-0.3], 0.0)]
    outputs = [{"logprobs": [0.0, 0.0, -0.7, -0.9]}, {"logprobs": [-0.4]}]
    assert learner_logprobs(outputs, samples, plan_datums(samples)) == [[-0.7, -0.9], [-0.4]]


def test_learner_logprobs_of_a_merged_multi_turn_datum():
    # turn 2's prompt = turn 1's prompt + reply + the env's new token (9)
    first = Sample([1, 2], [3, 4], [-0.1, -0.2], 1.0, episode=0)
    second = Sample([1, 2, 3, 4, 9], [5], [-0.3], 1.0, episode=0)
    plan = plan_datums([first, second])
    assert plan == [[0, 1]]
    # one datum over tokens 1 2 3 4 9 5: targets at positions 0..4 are 2 3 4 9 5
    outputs = [{"logprobs": [-9.0, -0.5, -0.6, -9.0, -0.7]}]
    assert learner_logprobs(outputs, [first, second], plan) == [[-0.5, -0.6], [-0.7]]


async def test_reply_logprobs_asks_for_every_sample_and_keeps_the_reply():
    client = FakeLogprobClient(-1.5)
    samples = [Sample([1, 2], [3, 4], [-0.5, -1.5], 1.0), Sample([7], [8], [-0.1], 0.0)]
    assert await reply_logprobs(client, samples) == [[-1.5, -1.5], [-1.5]]
    assert client.asked == [[1, 2, 3, 4], [7, 8]]


def test_mean_kl_is_over_every_token():
    assert mean_kl([[-1.0, -2.0], [-0.5]], [[-1.5, -1.5], [-1.0]]) == pytest.approx(0.5 / 3)
    assert mean_kl([], []) == 0.0


@pytest.mark.parametrize(
    ("temperature", "option", "expected"),
    [(1.0, None, False), (0.7, None, True), (0.7, False, False), (1.0, True, True)],
)
def test_behaviour_logprobs_are_recomputed_by_default_when_temperature_is_not_one(
    phase_config, temperature, option, expected
):
    config = attrs.evolve(phase_config, temperature=temperature, recompute_behavior_logprobs=option)
    assert recomputes_behavior_logprobs(config) is expected


def test_no_update_note_says_why_nothing_trained():
    metrics = {
        "train/datums": 0,
        "env/all/by_group/dropped": 4,
        "env/all/by_group/dropped_all_wrong": 3,
        "env/all/by_group/dropped_all_correct": 1,
    }
    assert (
        no_update_note(metrics, 4) == "no update: 4/4 groups constant (all wrong 3, all correct 1)"
    )
    failed = {**metrics, "env/all/by_group/dropped": 3, "env/all/by_group/dropped_all_correct": 0}
    failed["env/all/rollout_errors"] = 1
    assert no_update_note(failed, 4) == "no update: 3/4 groups constant (all wrong 3), 1 failed"
    assert no_update_note({"train/datums": 0}, 2) == "no update: no reply tokens to train on"
    assert no_update_note({"train/datums": 8}, 2) is None
