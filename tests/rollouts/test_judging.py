"""Issue 44: one rule decides "is this reply right" (rollouts/judging.py), and the
evaluation's baselines judge every guess through the env's whole scoring path.

Rollouts come from ScriptedPolicy (no model), read exactly as ``evaluate`` reads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mint_envkit import GroupBuilder, ScriptedPolicy
from mint_envkit.evaluation.figures import headline
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts.answers import answer_figures, collapse_note, rollout_answers
from mint_envkit.rollouts.judging import (
    ProblemJudge,
    ReplyScore,
    is_right,
    judged_answers,
    step_reply,
)
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.runs.record import Figures

sys.path.insert(0, str(Path(__file__).parents[1] / "auditing"))  # lenient_envs

import lenient_envs as envs


def _groups(builder):
    return [
        GroupBuilder(problem=p, env=builder.env, group_size=1, model_name=TINY_MODEL_NAME, index=i)
        for i, p in enumerate(builder.problems)
    ]


async def _figures(builder, reply):
    groups = _groups(builder)
    rollouts = await rollout_groups(groups, ScriptedPolicy(reply))
    return answer_figures(await judged_answers(rollouts, groups)), rollouts, groups


def test_the_one_rule():
    assert is_right(ReplyScore("5", 1.0, correct=True), None) is True
    assert is_right(ReplyScore("5", 1.0, correct=False), 1.0) is False  # the env said so
    assert is_right(ReplyScore("5", 0.7), 0.7) is True  # no `correct`: earns the right reward
    assert is_right(ReplyScore("6", 0.2), 0.7) is False
    assert is_right(ReplyScore.failed("x", ValueError("bad")), 0.7) is None
    assert is_right(ReplyScore("5", 0.7), None) is None


@pytest.mark.parametrize(
    ("builder", "constant"),
    [(envs.lower_capital_builder, "Paris"), (envs.word_number_builder, "three")],
    ids=["lower-case", "words-to-digits"],
)
async def test_an_evaluation_baseline_goes_through_the_env_parser(builder, constant):
    figures, rollouts, groups = await _figures(builder, lambda m: "nowhere")
    assert figures.baseline_correct == 0.5
    assert figures.baseline_name == f"constant {constant!r}"
    assert figures.judged_by == "correct"
    # the env's check alone on the raw guess (what the figures read before) says 0%
    assert answer_figures(rollout_answers(rollouts, groups)).baseline_correct == 0.0


async def test_a_plain_function_reward_keeps_baseline_and_collapse_figures():
    # always "no": right on 6 of 10 problems, exactly the constant 'no' baseline
    figures, _rollouts, _groups = await _figures(envs.plain_reward_builder, lambda m: "no")
    assert figures.judged_by == "reward"
    assert figures.reward_correct == 0.6
    assert figures.baseline_correct == 0.6
    assert figures.baseline_name == "constant 'no'"
    assert figures.beats_baseline is False and figures.collapse is True
    note = collapse_note(figures, None)
    assert "earning the correct reply's reward 0.600 does not beat" in note
    line = headline(Figures(correct=None, answers=figures))
    assert line.startswith("earning the correct reply's reward 60.0% (best trivial baseline 60.0%")


async def test_a_problem_judge_finds_the_form_and_caches_its_scores():
    group = _groups(envs.lower_capital_builder)[0]
    scored: list[str] = []

    async def scorer(reply):
        scored.append(reply)
        return await step_reply(group.make_message_env, reply)

    judge = await ProblemJudge.prepare(group, scorer)
    assert judge.basis == "correct" and judge.template == "{}"
    assert scored == ["Paris"]  # the first usual form is scored correct
    assert await judge.right("PARIS") and not await judge.right("Lyon")
    await judge.right("PARIS")
    assert scored == ["Paris", "PARIS", "Lyon"]  # each distinct reply scored once
    raised = await step_reply(_groups(envs.raising_builder)[0].make_message_env, "x y")
    assert raised.error.startswith("ValueError") and raised.reward is None
