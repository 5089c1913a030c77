"""Verdicts on envs the figures were not built for: a position at chance does not "beat"
the baseline and is flagged, and a before/after is measured where nothing is cut off.

The model is a stand-in client (tests/shared_envs.py ``TextClient``) that answers from
the prompt's text, through the real evaluation path (samplers, envs, figures).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "auditing"))  # audit_envs

import audit_envs as envs

from mint_envkit import evaluate
from mint_envkit.evaluation import learning_claim
from mint_envkit.rollouts import SamplingSettings
from shared_envs import TextClient

WORDS = re.compile(r"'(\w+)' or '(\w+)'")


def _second_word(prompt: str, _limit: int) -> str:
    return WORDS.findall(prompt)[-1][1]


def _the_answer(prompt: str, _limit: int) -> str:
    return min(WORDS.findall(prompt)[-1])


async def test_a_position_at_chance_does_not_beat_the_prompt_aware_baseline():
    builder = attrs.evolve(envs.first_word_builder, test_problems=envs.first_word_problems(40, 1))
    result = await evaluate(builder, client=TextClient(_second_word), samples=1, quiet=True)
    summary = result.summary
    assert 0.3 <= result.correct <= 0.7
    assert summary["answers/baseline_correct"] >= 0.5
    assert summary["answers/baseline_name"].split()[0] in ("first", "second", "uniform", "constant")
    assert summary["answers/beats_baseline"] == 0.0
    # collapsed onto a position, not onto one answer string: flagged all the same
    assert summary["answers/concentrated"] == 0.0 and summary["answers/distinct"] > 5
    assert summary["answers/position"] == "second quoted"
    assert summary["answers/position_concentrated"] == 1.0 and summary["answers/collapse"] == 1.0
    # the counterfactual: with the two words swapped every answer keeps its position
    assert summary["counterfactual/problems"] == 40
    assert summary["counterfactual/same_position"] == 1.0
    assert summary["counterfactual/position_following"] == 1.0
    assert "POSITION-FOLLOWING" in result.headline()


async def test_a_model_that_reads_the_words_beats_it_and_follows_the_content():
    builder = attrs.evolve(envs.first_word_builder, test_problems=envs.first_word_problems(40, 1))
    result = await evaluate(builder, client=TextClient(_the_answer), samples=1, quiet=True)
    summary = result.summary
    assert result.correct == 1.0 and summary["answers/beats_baseline"] == 1.0
    assert summary["counterfactual/same_content"] == 1.0
    assert summary["counterfactual/position_following"] == 0.0
    assert summary["answers/collapse"] == 0.0


def _rambles_below(words: int):
    """A reply that gives the sum after ``words`` words of preamble."""

    def reply(prompt: str, _limit: int) -> str:
        a, b = map(int, re.findall(r"What is (\d+) \+ (\d+)", prompt)[-1])
        return "let me add these " * words + str(a + b)

    return reply


async def test_a_before_after_at_a_cutting_limit_says_so_and_gives_the_uncut_figure():
    builder = attrs.evolve(envs.add_builder, test_problems=envs.ADD_PROBLEMS)
    # "before" rambles past 16 tokens (cut off, unparsed); "after" answers at once
    cut = SamplingSettings(max_tokens=16)
    before = await evaluate(builder, client=TextClient(_rambles_below(6)), sampling=cut, quiet=True)
    after = await evaluate(builder, client=TextClient(_rambles_below(0)), sampling=cut, quiet=True)
    assert before.truncated_rate == 1.0 and after.truncated_rate == 0.0
    claim = learning_claim(before.summary, after.summary)
    assert claim.cut_off and claim.gain is None  # nothing honest to say at 16 tokens
    assert "BASE TRUNCATED 100.0%: this compares reply lengths, not the task" in claim.line()
    wide = SamplingSettings(max_tokens=64)
    uncut = [
        (await evaluate(builder, client=TextClient(r), sampling=wide, quiet=True)).summary
        for r in (_rambles_below(6), _rambles_below(0))
    ]
    claim = learning_claim(before.summary, after.summary, uncut=(uncut[0], uncut[1]))
    assert uncut[0]["truncated_rate"] == 0.0 and claim.gain == 0.0  # both right at 64 tokens
    assert claim.format_gain == 0.0 and claim.content_gain == 0.0
    assert "where it is not cut off: correct 100.0% -> 100.0%" in claim.line()
