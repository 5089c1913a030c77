"""The answer figures: the best trivial baseline, answer diversity and the collapse flag.

Envs beyond arithmetic (yes/no with a majority class, multiple choice A-D, free text),
driven end to end by ScriptedPolicy (no model): the figures are read from the rollouts
exactly as the loop's evals and ``evaluate`` read them.
"""

from __future__ import annotations

import math

import pytest

from mint_envkit import (
    GroupBuilder,
    MessageStepResult,
    ScriptedPolicy,
    SingleTurnEnv,
    choice,
    exact,
)
from mint_envkit.errors import ConfigError
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts.answers import (
    AnswerGroup,
    answer_figures,
    answer_key,
    collapse_note,
    rollout_answers,
)
from mint_envkit.rollouts.records import rollout_metrics
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.runs.record import FINAL, TEST, AnswerFigures, Figures
from shared_envs import YesNoEnv, yes_no_problems


class ChoiceEnv(SingleTurnEnv):
    """A multiple-choice question, options A-D."""

    parser = choice("ABCD")


class CapitalEnv(SingleTurnEnv):
    """Free text: the capital of a country, the whole reply."""

    parser = exact()


class AnyCaseEnv(SingleTurnEnv):
    """A check that ignores case: 'YES' is right when the reference is 'yes'."""

    parser = exact()

    def check(self, parsed, answer):
        return parsed.strip().lower() == str(answer).strip().lower()


class SilentEnv(SingleTurnEnv):
    """Scores without logging a parsed answer (a custom score)."""

    def score(self, message):
        hit = float((message.get("content") or "").strip() == self.answer)
        return MessageStepResult(reward=hit, episode_done=True, metrics={"correct": hit})


def _groups(env, problems, group_size=1):
    return [
        GroupBuilder(problem=p, env=env, group_size=group_size, model_name=TINY_MODEL_NAME, index=i)
        for i, p in enumerate(problems)
    ]


async def _figures(env, problems, reply, *, group_size=1, end_with_stop=True):
    """Roll ``problems`` out with a scripted reply function; the figures and the correctness."""
    groups = _groups(env, problems, group_size)
    policy = ScriptedPolicy(reply, end_with_stop=end_with_stop)
    rollouts = await rollout_groups(groups, policy)
    correct = rollout_metrics(rollouts, "test/env").get("test/env/all/correct")
    return answer_figures(rollout_answers(rollouts, groups)), correct


def _question(messages):
    return messages[-1]["content"]


async def test_the_measured_case_always_no_on_a_575_percent_no_set_is_a_collapse():
    figures, correct = await _figures(YesNoEnv, yes_no_problems(), lambda m: "no")
    assert correct == 0.575
    assert figures.baseline_correct == 0.575
    assert figures.distinct == 1 and figures.entropy == 0.0
    assert figures.top == "no" and figures.top_share == 1.0
    assert figures.truncated == 0.0
    assert figures.concentrated == 1.0
    assert figures.beats_baseline == 0.0
    assert figures.collapse == 1.0
    note = collapse_note(figures, correct)
    assert note == (
        "answers collapse: 100% of replies are 'no'; correct 0.575 does not beat the "
        "best trivial baseline 0.575 (constant 'no')"
    )


def _greater(messages) -> bool:
    words = _question(messages).split()
    return int(words[1]) > int(words[4].rstrip("?"))


async def test_diverse_partly_right_answers_beat_the_baseline_and_do_not_collapse():
    calls = {"n": 0}

    def reply(messages):  # right on 3 of 4 problems, wrong on the 4th
        calls["n"] += 1
        right = "yes" if _greater(messages) else "no"
        return right if calls["n"] % 4 else {"yes": "no", "no": "yes"}[right]

    figures, correct = await _figures(YesNoEnv, yes_no_problems(), reply)
    assert correct == 0.75 and figures.baseline_correct == 0.575
    assert figures.distinct == 2
    assert 0.6 < figures.entropy <= math.log(2)
    assert figures.top_share < 0.8
    assert figures.concentrated == 0.0
    assert figures.beats_baseline == 1.0
    assert figures.collapse == 0.0
    assert collapse_note(figures, correct) is None


async def test_diverse_answers_no_better_than_the_constant_answer_are_flagged():
    # "yes" and "no" on every problem: diverse, 50% right, below the always-"no" baseline
    figures, correct = await _figures(YesNoEnv, yes_no_problems(), ["yes", "no"], group_size=2)
    assert correct == 0.5 and figures.baseline_correct == 0.575
    assert figures.concentrated == 0.0 and figures.top_share == 0.5
    assert figures.collapse == 1.0
    assert collapse_note(figures, correct) == (
        "answers collapse: correct 0.500 does not beat the best trivial baseline 0.575 "
        "(constant 'no')"
    )


def _choice_problems() -> list[dict[str, str]]:
    letters = "ABCD" * 10  # 25% each: no majority class
    return [
        {"question": f"Question {i}? A, B, C or D.", "answer": c} for i, c in enumerate(letters)
    ]


async def test_multiple_choice_always_c_is_concentrated_at_the_25_percent_baseline():
    figures, correct = await _figures(ChoiceEnv, _choice_problems(), lambda m: "The answer is (C)")
    assert correct == 0.25 and figures.baseline_correct == 0.25
    assert figures.top == "C" and figures.distinct == 1
    assert figures.concentrated == 1.0 and figures.collapse == 1.0


async def test_multiple_choice_mostly_right_does_not_collapse():
    problems = _choice_problems()
    answers = {p["question"]: p["answer"] for p in problems}

    def reply(messages):
        right = answers[_question(messages)]
        return right if int(_question(messages).split()[1].rstrip("?")) % 5 else "A"

    figures, correct = await _figures(ChoiceEnv, problems, reply)
    assert correct > 0.7 and figures.baseline_correct == 0.25
    assert figures.distinct == 4 and figures.top == "A"
    assert figures.entropy > 1.0
    assert (figures.concentrated, figures.collapse) == (0.0, 0.0)


CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima"}


async def test_free_text_with_unique_references_and_unparsed_replies():
    problems = [{"question": f"The capital of {c}?", "answer": a} for c, a in CAPITALS.items()]

    def reply(messages):  # right on France and Japan; an empty (unparsed) reply otherwise
        country = _question(messages).split()[-1].rstrip("?")
        return CAPITALS[country] if country in ("France", "Japan") else "   "

    figures, correct = await _figures(CapitalEnv, problems, reply)
    assert correct == 0.5 and figures.baseline_correct == 0.25
    assert figures.distinct == 2  # Paris, Tokyo; the unparsed are no answer
    assert figures.entropy == pytest.approx(math.log(2))
    # the unparsed replies are one value (None) of the top share
    assert figures.top_share == 0.5 and figures.top is None
    # above the baseline, but on 4 problems that is within noise: no "beats"; no collapse
    assert figures.beats_baseline == 0.0 and figures.collapse == 0.0


async def test_replies_cut_off_at_the_token_limit_count_as_truncated_and_unparsed():
    figures, correct = await _figures(
        YesNoEnv, yes_no_problems()[18:28], lambda m: "no", end_with_stop=False
    )
    assert correct == 0.0 and figures.truncated == 1.0
    assert figures.distinct == 0 and figures.top is None
    assert figures.top_share == 1.0
    # every reply unparsed is a format failure (parse and truncation rates show it), not
    # a collapse onto one answer: no flag, and no collapse note
    assert figures.concentrated == 0.0 and figures.collapse == 0.0
    assert collapse_note(figures, correct) is None


async def test_the_baseline_uses_the_env_check_where_there_is_one():
    problems = [
        {"question": f"q{i}", "answer": answer}
        for i, answer in enumerate(["Yes", "yes", "YES", "no"])
    ]
    figures, _ = await _figures(AnyCaseEnv, problems, lambda m: "yes")
    assert figures.baseline_correct == 0.75  # "Yes" is right on three, by its check
    groups = [AnswerGroup(reference=p["answer"], parsed=["yes"], correct=[True]) for p in problems]
    assert answer_figures(groups).baseline_correct == 0.25  # no check: the keys


def test_a_failing_or_odd_check_falls_back_to_the_answer_keys():
    def broken(parsed, answer):
        raise ValueError("no")

    async def asynchronous(parsed, answer):
        return True

    for check in (broken, asynchronous, lambda p, a: "yes"):
        groups = [
            AnswerGroup(reference=r, parsed=["x"], correct=[False], check=check)
            for r in ("a", "a", "b")
        ]
        assert answer_figures(groups).baseline_correct == pytest.approx(2 / 3)


async def test_an_env_without_parsed_logs_has_no_diversity_figures():
    figures, correct = await _figures(SilentEnv, yes_no_problems(), lambda m: "yes")
    assert correct == 0.425 and figures.baseline_correct == 0.575
    for key in ("distinct", "entropy", "top_share", "top", "concentrated"):
        assert getattr(figures, key) is None
    assert figures.beats_baseline == 0.0 and figures.collapse == 1.0


def test_without_references_or_replies_the_figures_are_none_and_metrics_left_out():
    groups = [AnswerGroup(reference=None, parsed=["a", "b"], correct=[True, False])]
    figures = answer_figures(groups)
    assert figures.baseline_correct is None
    assert figures.beats_baseline is None
    assert figures.concentrated == 0.0 and figures.collapse == 0.0
    metrics = Figures(answers=figures).metrics(TEST)
    assert "test/env/all/answers/baseline_correct" not in metrics
    assert metrics["test/env/all/answers/distinct"] == 2
    assert answer_figures([]) == AnswerFigures()
    assert Figures(answers=answer_figures([])).metrics(TEST) == {}


def test_metrics_carry_the_loop_prefix_and_the_text_figures():
    groups = [
        AnswerGroup(reference=r, parsed=["no"], correct=[r == "no"]) for r in "no no yes".split()
    ]
    metrics = Figures(answers=answer_figures(groups)).metrics(FINAL)
    # too few replies name a candidate of the (empty) prompts: no position figures
    assert not any("position" in key for key in metrics)
    # the env's own `correct` judged them: no reward-based correctness
    assert not any("reward_correct" in key for key in metrics)
    assert metrics["test_final/env/all/answers/baseline_name"] == "constant 'no'"
    text = {k for k, v in metrics.items() if isinstance(v, str)}
    assert text == {"test_final/env/all/answers/baseline_name", "test_final/env/all/answers/top"}
    assert metrics["test_final/env/all/answers/collapse"] == 1.0


def test_a_majority_class_above_the_share_is_not_concentrated():
    # 90% of the references are "no": answering "no" everywhere is not concentrated,
    # but correctness equal to the baseline still flags a collapse
    groups = [
        AnswerGroup(reference=r, parsed=["no"], correct=[r == "no"]) for r in ["no"] * 9 + ["yes"]
    ]
    figures = answer_figures(groups)
    assert figures.concentrated == 0.0
    assert figures.baseline_correct == 0.9 and figures.collapse == 1.0


def test_zero_correct_is_not_explained_by_a_constant_answer():
    groups = [
        AnswerGroup(reference=r, parsed=[f"x{i}"], correct=[False]) for i, r in enumerate("ab")
    ]
    figures = answer_figures(groups)
    assert figures.beats_baseline == 0.0 and figures.collapse == 0.0


def test_answer_keys_group_numbers_by_value_and_text_by_words():
    assert answer_key(" 1,000 ") == answer_key(1000) == "1000"
    assert answer_key("5.0") == answer_key("5")
    assert answer_key("no  way ") == "no way" != answer_key("No way")
    assert answer_key(None) is None


def test_an_answer_group_needs_one_flag_per_reply():
    with pytest.raises(ConfigError, match="2 entries for 3 replies"):
        AnswerGroup(reference="a", parsed=["a", "b", "c"], correct=[True, False])
    with pytest.raises(ConfigError, match="truncated has 1 entries"):
        AnswerGroup(reference="a", parsed=["a", "b"], truncated=[True])
