"""From scored rollouts to training data: samples, datums."""

from __future__ import annotations

import pytest

from mint_envkit.rl.datums import Sample, to_datum, to_datums, training_samples


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
