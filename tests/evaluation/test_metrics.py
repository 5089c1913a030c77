"""pass@k against hand-computed values; per-problem results, the summary and the comparison."""

from __future__ import annotations

import math

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation import EvalResult, comparison_table, pass_at_k
from mint_envkit.evaluation.compare import per_problem
from mint_envkit.evaluation.files import metric_line
from mint_envkit.evaluation.metrics import pass_ks, problem_result, summarize
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 1, 1 / 4),
        (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
        (4, 1, 4, 1.0),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (8, 0, 4, 0.0),
        (8, 8, 1, 1.0),
        (16, 1, 8, 0.5),  # 1 - C(15,8)/C(16,8) = 1 - 8/16
    ],
)
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert math.isclose(pass_at_k(n, c, k), expected, rel_tol=1e-12)


def test_pass_at_k_is_not_the_biased_estimate():
    # the plug-in 1 - (1 - c/n)^k would give 1 - 0.75^2 = 0.4375
    assert pass_at_k(4, 1, 2) == 0.5


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 1, 0), (4, 1, 5)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ConfigError, match=f"n={n}, c={c}, k={k}"):
        pass_at_k(n, c, k)


@pytest.mark.parametrize(
    ("samples", "ks"), [(1, [1]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]), (16, [1, 2, 4, 8, 16])]
)
def test_pass_ks_are_one_the_powers_of_two_and_k(samples, ks):
    assert pass_ks(samples) == ks


def _rollout(index, outcomes, error=None):
    """outcomes: one (reward, correct, parsed, truncated) per sample."""
    if error:
        return GroupRollout(index, [], [], error=error)
    trajectories = []
    for reward, correct, parsed, truncated in outcomes:
        step = Transition(
            ob=[1],
            ac=SampledTokens([2], None, "length" if truncated else "stop"),
            reward=reward,
            episode_done=True,
            metrics={"correct": correct, "parsed": parsed, "truncated": truncated},
            logs={"parse_status": "ok" if parsed else "no_number"},
            message={"role": "assistant", "content": f"r{reward}"},
        )
        trajectories.append(Trajectory([step]))
    return GroupRollout(index, [{"role": "user", "content": "q"}], trajectories)


RIGHT, WRONG, UNPARSED, CUT = (
    (1.0, 1.0, 1.0, 0.0),
    (0.0, 0.0, 1.0, 0.0),
    (-0.5, 0.0, 0.0, 0.0),
    (
        -0.1,
        0.0,
        0.0,
        1.0,
    ),
)


def _results():
    return [
        problem_result("test", {"q": 0}, _rollout(0, [RIGHT, WRONG, WRONG, UNPARSED])),
        problem_result("test", {"q": 1}, _rollout(1, [RIGHT, RIGHT, CUT, WRONG])),
        problem_result("test", {"q": 2}, _rollout(2, [], error="RuntimeError: boom")),
    ]


def test_a_problem_result_counts_its_samples():
    first = _results()[0]
    assert (first.n, first.c) == (4, 1)
    assert first.parse_status == ["ok", "ok", "ok", "no_number"]
    assert first.pass_at(2) == 0.5 and first.mean_reward() == 0.125
    record = first.record([1, 2, 4])
    assert record["pass@"] == {"1": 0.25, "2": 0.5, "4": 1.0}
    assert record["correct"] == [True, False, False, False] and record["replies"][0] == "r1.0"


def test_the_summary_averages_over_problems_and_leaves_failed_ones_out():
    figures = summarize(_results(), samples=4)
    assert (figures.problems, figures.episodes, figures.errors) == (3, 8, 1)
    assert figures.mean_reward == pytest.approx((0.5 + 1.9) / 8)
    assert figures.pass_at["1"] == pytest.approx((0.25 + 0.5) / 2)
    assert figures.pass_at["2"] == pytest.approx((0.5 + (1 - 1 / 6)) / 2)
    assert figures.pass_at["4"] == 1.0
    assert figures.parse_failure_rate == pytest.approx(2 / 8)
    assert figures.truncated_rate == pytest.approx(1 / 8)
    assert metric_line(figures.summary())["eval/pass@2"] == figures.pass_at["2"]


def test_an_env_without_a_correct_metric_reports_no_pass_at_k():
    rollout = _rollout(0, [RIGHT])
    step = rollout.trajectories[0].transitions[0]
    bare = GroupRollout(0, [], [Trajectory([Transition(step.ob, step.ac, 1.0, True)])])
    figures = summarize([problem_result("train", {}, bare)], samples=1)
    assert figures.pass_at == {"1": None} and figures.mean_reward == 1.0


def _eval(label, results):
    summary = {"label": label, "samples": 4, **summarize(results, 4).summary()}
    return EvalResult(summary=summary, problems=results)


def test_per_problem_counts_and_the_table():
    base = _eval("base", _results())
    better = [
        problem_result("test", {"q": 0}, _rollout(0, [RIGHT, RIGHT, WRONG, WRONG])),
        problem_result("test", {"q": 1}, _rollout(1, [RIGHT, RIGHT, CUT, WRONG])),
        problem_result("test", {"q": 2}, _rollout(2, [RIGHT] * 4)),
    ]
    tuned = _eval("tuned", better)
    assert per_problem(base, tuned) == {"better": 1, "worse": 0, "tied": 1, "skipped": 1}
    assert per_problem(base, tuned, by="reward")["better"] == 1
    table = comparison_table([base, tuned])
    header, reward = table.splitlines()[:2]
    assert header.split() == ["metric", "base", "tuned", "tuned-base"]
    assert reward.split()[-1].startswith("+")
    assert "share correct): tuned better on 1, worse on 0, tied on 1, skipped 1" in table
    assert "mean reward): tuned better on 1" in table
    assert "not a significance test" in table
    with pytest.raises(ConfigError, match="pass@3 was not computed"):
        tuned.pass_at(3)


def test_the_table_shows_correct_beside_the_baseline_and_flags_a_collapse():
    answers = {
        "correct": 0.575,
        "answers/baseline_correct": 0.575,
        "answers/baseline_name": "constant 'no'",
        "answers/distinct": 1,
        "answers/entropy": 0.0,
        "answers/top_share": 1.0,
        "answers/top": "no",
        "answers/truncated": 0.0,
        "answers/concentrated": 1.0,
        "answers/beats_baseline": 0.0,
        "answers/collapse": 1.0,
    }
    base = _eval("base", _results())
    tuned = EvalResult(
        summary={**base.summary, **answers, "label": "tuned"}, problems=base.problems
    )
    rows = {
        line.split("  ")[0].strip(): line for line in comparison_table([base, tuned]).splitlines()
    }
    assert rows["baseline correct"].split()[-3:] == ["n/a", "0.575", "n/a"]
    assert rows["distinct answers"].split()[-2:] == ["1", "n/a"]
    assert rows["top answer"].split()[-2:] == ["n/a", "'no'"]
    assert rows["collapse"].split()[-2:] == ["n/a", "yes"]
    table = comparison_table([base, tuned])
    assert table.splitlines()[-1] == (
        "tuned: answers collapse: 100% of replies are 'no'; correct 0.575 does not beat the "
        "best trivial baseline 0.575 (constant 'no')"
    )
    line = metric_line(tuned.summary)
    assert line["eval/answers/collapse"] == 1.0 and line["eval/answers/top"] == "no"


def test_the_table_never_prints_a_negative_zero():
    """A mean reward of -0.0001 read 'mean reward -0.000'; it rounds to 0.000."""
    base = _eval("base", _results())
    tiny = EvalResult(summary={**base.summary, "mean_reward": -0.0001}, problems=base.problems)
    rows = {
        line.split("  ")[0].strip(): line for line in comparison_table([tiny, base]).splitlines()
    }
    assert rows["mean reward"].split()[2] == "0.000"
    same = EvalResult(summary={**tiny.summary, "label": "same"}, problems=base.problems)
    rows = {
        line.split("  ")[0].strip(): line for line in comparison_table([tiny, same]).splitlines()
    }
    assert "-0.000" not in comparison_table([tiny, same]) and rows["mean reward"].endswith("+0.000")
