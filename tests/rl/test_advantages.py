"""Advantages, the KL adjustment, and why constant groups are dropped (hand-computed)."""

from __future__ import annotations

import pytest

from mint_envkit.rl.advantages import (
    DROP_REASONS,
    constant_reason,
    group_advantages,
    kl_adjusted_advantages,
)


def test_group_advantages_subtract_the_mean():
    assert group_advantages([1.0, -0.25, -0.25, 1.0]) == pytest.approx(
        [0.625, -0.625, -0.625, 0.625]
    )
    assert group_advantages([1.0, 0.0]) == [0.5, -0.5]
    assert group_advantages([3.0, 0.0, 0.0]) == pytest.approx([2.0, -1.0, -1.0])
    assert group_advantages([0.7]) == [0.0]
    assert group_advantages([]) == []


def test_group_advantages_do_not_scale_by_std():
    # mean 2, no division: a scaled version would give +-1.22...
    assert group_advantages([1.0, 2.0, 3.0]) == pytest.approx([-1.0, 0.0, 1.0])
    assert sum(group_advantages([0.1, 0.9, 0.4, 0.0])) == pytest.approx(0.0)


def test_kl_adjusted_advantages_by_hand():
    adjusted, mean_kl = kl_adjusted_advantages(
        [[1.0, 1.0]], [[-1.0, -2.0]], [[-1.5, -1.5]], coef=0.1
    )
    # kl = [0.5, -0.5]; mean 0 -> a + 0.1 * (0 - kl)
    assert mean_kl == pytest.approx(0.0)
    assert adjusted == [[pytest.approx(0.95), pytest.approx(1.05)]]


def test_kl_adjusted_advantages_across_sequences():
    advantages = [[0.5, 0.5, 0.5], [-0.5]]
    sampler = [[-1.0, -1.0, -1.0], [-2.0]]
    reference = [[-2.0, -1.0, -1.0], [-1.0]]
    # kl = [1, 0, 0] and [-1]; mean over the 4 tokens = 0 / 4 = 0
    adjusted, mean_kl = kl_adjusted_advantages(advantages, sampler, reference, coef=0.5)
    assert mean_kl == pytest.approx(0.0)
    assert adjusted[0] == pytest.approx([0.0, 0.5, 0.5])
    assert adjusted[1] == pytest.approx([0.0])


def test_kl_mean_is_not_zero_in_general():
    adjusted, mean_kl = kl_adjusted_advantages(
        [[0.0, 0.0]], [[-1.0, -1.0]], [[-2.0, -1.5]], coef=2.0
    )
    # kl = [1.0, 0.5]; mean 0.75 -> 2 * (0.75 - kl) = [-0.5, 0.5]
    assert mean_kl == pytest.approx(0.75)
    assert adjusted == [[pytest.approx(-0.5), pytest.approx(0.5)]]


def test_kl_with_no_tokens_and_zero_coef():
    assert kl_adjusted_advantages([], [], [], coef=0.1) == ([], 0.0)
    adjusted, _ = kl_adjusted_advantages([[0.3]], [[-1.0]], [[-3.0]], coef=0.0)
    assert adjusted == [[0.3]]


def test_kl_lengths_must_match():
    with pytest.raises(ValueError):
        kl_adjusted_advantages([[1.0, 1.0]], [[-1.0]], [[-1.0]], coef=0.1)


CORRECT = {"correct": 1.0, "parsed": 1.0}
WRONG = {"correct": 0.0, "parsed": 1.0}
UNPARSED = {"correct": 0.0, "parsed": 0.0}


@pytest.mark.parametrize(
    ("rewards", "metrics", "reason"),
    [
        ([1.0, 1.0, 1.0], [CORRECT] * 3, "all_correct"),
        ([-0.25, -0.25], [WRONG] * 2, "all_wrong"),
        ([0.0, 0.0], [UNPARSED] * 2, "all_unparsed"),
        ([0.0, 0.0], [WRONG, UNPARSED], "all_wrong"),
        ([0.5, 0.5], [{}, {}], "constant"),
        ([0.5, 0.5], [CORRECT, WRONG], "constant"),
        ([1.0, 0.0], [CORRECT, WRONG], None),
        ([1.0, 1.0 + 1e-12], [CORRECT, CORRECT], "all_correct"),
        ([1.0, 1.001], [CORRECT, CORRECT], None),
        ([], [], None),
    ],
)
def test_constant_reason(rewards, metrics, reason):
    assert constant_reason(rewards, metrics) == reason


def test_drop_reasons_cover_constant_reason():
    assert set(DROP_REASONS) == {"all_correct", "all_wrong", "all_unparsed", "constant"}


def test_batch_advantages_accounts_every_group_by_reason():
    from mint_envkit.rl.advantages import batch_advantages

    groups = [
        ([1.0, -0.25], [{"correct": 1.0}, {"correct": 0.0}]),  # mixed
        ([1.0, 1.0], [{"correct": 1.0}, {"correct": 1.0}]),  # all correct
        ([0.0, 0.0], [{"parsed": 0.0}, {"parsed": 0.0}]),  # all unparsed
        None,  # failed: not counted
        ([-0.25, -0.25], [{"correct": 0.0, "parsed": 1.0}] * 2),  # all wrong
    ]
    advantages, metrics = batch_advantages(groups, remove_constant=True)
    assert advantages == {0: [0.625, -0.625]}
    assert metrics["env/all/by_group/frac_mixed"] == 0.25
    assert metrics["env/all/by_group/frac_all_good"] == 0.25
    assert metrics["env/all/by_group/frac_all_bad"] == 0.5
    assert metrics["env/all/by_group/dropped"] == 3
    assert metrics["env/all/by_group/dropped_all_correct"] == 1
    assert metrics["env/all/by_group/dropped_all_unparsed"] == 1
    assert metrics["env/all/by_group/dropped_all_wrong"] == 1
    assert metrics["env/all/by_group/dropped_constant"] == 0


def test_batch_advantages_with_no_group_that_ran():
    from mint_envkit.rl.advantages import batch_advantages

    advantages, metrics = batch_advantages([None, None])
    assert advantages == {} and metrics["env/all/by_group/frac_mixed"] == 0.0
