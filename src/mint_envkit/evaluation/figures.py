"""An evaluation's figures, computed once: means, pass@k, answers, baselines, and its line.

:func:`evaluation_figures` is the summary of one evaluation (what ``summary.json``
holds beside the settings): the per-problem figures of
:mod:`mint_envkit.evaluation.metrics` and the answer figures of
:mod:`mint_envkit.rollouts.answers` (the best trivial baseline, diversity, positions,
collapse). :func:`headline` says it in one line, the same wherever it is printed.

Example::

    from mint_envkit.evaluation.figures import headline

    headline({"correct": 0.45, "parse_failure_rate": 0.0, "truncated_rate": 0.05,
              "answers/baseline_correct": 0.05, "answers/baseline_name": "constant '31'",
              "answers/beats_baseline": 1.0, "answers/distinct": 30})
    # "correct 45.0% (best trivial baseline 5.0%, constant '31': beats it), parsed 100.0%, ..."
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.evaluation.counterfactual import KEYS as COUNTERFACTUAL_KEYS
from mint_envkit.evaluation.metrics import ProblemResult, summarize
from mint_envkit.rollouts.answers import (
    ANSWER_KEYS,
    answer_figures,
    answer_metrics,
    collapse_note,
)
from mint_envkit.rollouts.judging import judged_answers
from mint_envkit.rollouts.types import GroupRollout

NUMERIC = (
    "mean_reward",
    "correct",
    "parse_failure_rate",
    "truncated_rate",
    *ANSWER_KEYS,
    *COUNTERFACTUAL_KEYS,
)
"""The numeric figures of a summary besides pass@k (what the viewer and the loop plot).

Example::

    "truncated_rate" in NUMERIC   # True
"""


async def evaluation_figures(
    results: Sequence[ProblemResult],
    rollouts: Sequence[GroupRollout],
    groups: Sequence[Any],
    samples: int,
) -> dict[str, Any]:
    """The figures of one evaluation: :func:`~mint_envkit.evaluation.metrics.summarize`
    and :func:`~mint_envkit.rollouts.answers.answer_figures` (the baselines' guesses
    judged through the env, :func:`~mint_envkit.rollouts.judging.judged_answers`), in
    one dict.

    Example::

        # not run: needs an evaluation's results and rollouts
        (await evaluation_figures(results, rollouts, groups, samples=4))["answers/baseline_name"]
    """
    return {
        **summarize(results, samples),
        **answer_figures(await judged_answers(rollouts, groups)),
    }


def figure_metrics(summary: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The answer and counterfactual figures of ``summary`` as the loop's metrics,
    ``<prefix>/all/answers/...`` and ``<prefix>/all/counterfactual/...``.

    Example::

        figure_metrics({"answers/baseline_correct": 0.5}, "test/env")
        # {'test/env/all/answers/baseline_correct': 0.5}
    """
    out = answer_metrics(summary, prefix)
    for key in COUNTERFACTUAL_KEYS:
        if summary.get(key) is not None:
            out[f"{prefix}/all/{key}"] = summary[key]
    return out


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def headline(summary: Mapping[str, Any]) -> str:
    """An evaluation in one line: correctness beside the best trivial baseline (and
    whether it beats it beyond noise), parse and truncation rates, distinct answers,
    then the collapse note when there is one.

    Example::

        headline({"correct": 0.525, "answers/baseline_correct": 0.5,
                  "answers/baseline_name": "second quoted", "answers/beats_baseline": 0.0})
        # 'correct 52.5% (best trivial baseline 50.0%, second quoted: does not beat it), ...'
    """
    correct = summary.get("correct")
    baseline = summary.get("answers/baseline_correct")
    text = f"correct {_pct(correct)}"
    if correct is None and summary.get("answers/reward_correct") is not None:
        # a plain-function reward reports no `correct`: right is earning its reward
        text = f"earning the correct reply's reward {_pct(summary['answers/reward_correct'])}"
    if baseline is not None:
        beats = summary.get("answers/beats_baseline")
        verdict = {1.0: "beats it", 0.0: "does not beat it"}.get(beats, "not compared")
        name = summary.get("answers/baseline_name") or "trivial policy"
        text += f" (best trivial baseline {_pct(baseline)}, {name}: {verdict})"
    failures = summary.get("parse_failure_rate")
    parsed = None if failures is None else 1.0 - failures
    text += f", parsed {_pct(parsed)}, truncated {_pct(summary.get('truncated_rate'))}"
    if summary.get("answers/distinct") is not None:
        text += f", {summary['answers/distinct']} distinct answers"
    if summary.get("counterfactual/pairs"):
        text += (
            f"; with the offered candidates permuted: correct "
            f"{_pct(summary.get('counterfactual/correct'))}, the answers follow the content "
            f"{_pct(summary.get('counterfactual/same_content'))}, the position "
            f"{_pct(summary.get('counterfactual/same_position'))}"
        )
        if summary.get("counterfactual/position_following") == 1.0:
            text += " (POSITION-FOLLOWING)"
    note = collapse_note(summary, correct)
    return text + (f"; {note}" if note else "")
