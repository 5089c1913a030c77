"""Issue 44, round 2: the data gives the answer away. A trivial policy far above the
prompt's chance is a ``shortcut``, the answer written in the prompt outside the question a
``leak``; each caught on envs other than the reward zoo's (tests/auditing/rule_envs.py),
each quiet on a clean twin, each ``declared`` (no failure) where the env says the
shortcut is its task.

The generated search is off (``search=0``) where the rule under test does not need it:
the listed probes and the baselines are what these rules read.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # rule_envs

import rule_envs as envs

from mint_envkit.auditing import audit
from mint_envkit.auditing.shortcuts import context_of, leak, shortcuts, tail_probability
from mint_envkit.rollouts.baselines import Baseline


def failing(report) -> list[tuple[str, str]]:
    return sorted((f.kind, f.probe) for f in report.findings if f.fails)


async def test_an_option_picked_by_its_length_is_a_shortcut_and_a_varied_length_is_not():
    planted = await audit(envs.definitions_builder(planted=True), quiet=True, search=0)
    assert failing(planted) == [("shortcut", "shortest quoted")], planted.table()
    message = next(f.message for f in planted.findings if f.kind == "shortcut")
    assert "right on 8 of 8 problems" in message and "right on 25.0%" in message
    clean = await audit(envs.definitions_builder(planted=False), quiet=True, search=0)
    assert clean.ok, clean.table()  # the shortest is right on 3 of 8: chance, not a shortcut
    assert not [f for f in clean.findings if f.kind in ("shortcut", "declared")]


async def test_a_label_set_collapsed_to_one_value_is_a_shortcut_unless_declared():
    collapsed = await audit(envs.reviews_builder(collapsed=True), quiet=True, search=0)
    assert failing(collapsed) == [("shortcut", "constant 'positive'")], collapsed.table()
    balanced = await audit(envs.reviews_builder(collapsed=False), quiet=True, search=0)
    assert balanced.ok and balanced.baseline_correct == 0.5, balanced.table()
    declared = await audit(envs.copy_builder(), quiet=True, search=0)
    assert declared.ok, declared.table()
    (shown,) = [f for f in declared.findings if f.kind == "declared"]
    assert "CopyEnv.audit_shortcut: the task is to reply 'positive'" in shown.message


async def test_an_earlier_turn_holding_the_answer_is_a_leak_and_a_neutral_one_is_not():
    leaked = await audit(envs.chat_builder(leaked=True), quiet=True, search=0)
    assert failing(leaked) == [("leak", "prompt")], leaked.table()
    message = next(f.message for f in leaked.findings if f.kind == "leak")
    assert "8 of 8 problems" in message and "an earlier assistant turn" in message
    clean = await audit(envs.chat_builder(leaked=False), quiet=True, search=0)
    assert clean.ok and not [f for f in clean.findings if f.kind == "leak"], clean.table()


async def test_a_reward_that_pays_every_answer_is_said_once_not_as_a_shortcut_too():
    # every review 'positive' (a shortcut of the data) and a check that accepts anything:
    # the finding is that the reward does not tell right from wrong (and what it accepts),
    # not that a constant is "right": under such a reward every policy is
    report = await audit(
        envs.reviews_builder(collapsed=True, env=envs.PaysAnythingEnv), quiet=True, search=0
    )
    kinds = failing(report)
    assert ("exploit", "wrong") in kinds and {k for k, _ in kinds} == {"exploit", "lenient"}
    assert report.baseline_correct == 1.0  # the constant is right on every problem, unflagged


def test_the_exact_test_against_chance():
    assert round(tail_probability([0.25] * 10, 7), 4) == 0.0035
    assert tail_probability([0.5] * 4, 0) == 1.0 and tail_probability([0.5, 0.5], 3) == 0.0

    def baseline(hits: int, n: int, chance: float) -> Baseline:
        per = (1.0,) * hits + (0.0,) * (n - hits)
        return Baseline("third option", hits / n, per, "option", (chance,) * n, ("C",) * n)

    assert [s.name for s in shortcuts([baseline(7, 10, 0.25)])] == ["third option"]
    assert shortcuts([baseline(4, 10, 0.25)]) == []  # 40% of 10 against 25%: not far enough
    assert shortcuts([baseline(4, 4, 0.25)]) == []  # too few problems to call
    assert shortcuts([baseline(13, 20, 0.5)]) == []  # 65% of yes/no: p = 0.13


@pytest.mark.parametrize(
    ("context", "found"),
    [
        ("Hint: the result is {a}.", True),
        ("Be brief.", False),
        ("Examples: 2 + 2 = 4, 3 + 3 = 6.", False),  # fixed examples hold few answers
    ],
)
def test_a_leak_is_the_own_answer_far_more_often_than_another_problems(context, found):
    answers = ["7", "42", "90", "6", "100", "5", "4"]
    contexts = [
        context_of(
            [{"role": "system", "content": context.format(a=a)}, {"role": "user", "content": "?"}]
        )
        for a in answers
    ]
    assert (leak(answers, contexts) is not None) is found
