"""What a run's held-out evaluations say about its answers: correctness beside the baseline.

Correctness alone cannot tell learning from majority-class collapse: on a yes/no env
whose test answers are 57.5% "no", a model that answers "no" to everything is 57.5%
correct. Each held-out evaluation of a run therefore logs, beside its correctness, the
answer figures of the run record (:class:`~mint_envkit.runs.record.AnswerFigures`: the
best trivial policy's correctness and name, distinct answers, entropy, top share,
truncation, concentration, whether correctness beats the baseline, collapse).
:func:`held_out_answers` reads them from a run's metrics, one evaluation's worth; runs
written before these figures existed give None for each.

Example::

    from mint_envkit.sweep import held_out_answers

    history = [
        {"step": 0, "test/env/all/correct": 0.475},
        {"step": 9, "test_final/env/all/correct": 0.575,
         "test_final/env/all/answers/baseline_correct": 0.575,
         "test_final/env/all/answers/top_share": 1.0,
         "test_final/env/all/answers/distinct": 1,
         "test_final/env/all/answers/collapse": 1.0},
    ]  # a run's metrics, one merged line per step (RunMetrics.history)
    answers = held_out_answers(history)
    assert (answers.correct_after, answers.baseline, answers.flag) == (0.575, 0.575, "COLLAPSE")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.checks import is_integer, is_number
from mint_envkit.runs.record import FINAL, TEST, Figures, find_eval


def _number(value: Any) -> float | None:
    """A finite number, else None (strings, nulls, booleans, NaN: an odd value is no value)."""
    if not is_number(value):
        return None
    return float(value) if math.isfinite(value) else None


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@attrs.frozen
class HeldOutAnswers:
    """Held-out correctness before and after training, beside the best trivial baseline.

    Every figure is None when the run did not log it (an env without ``correct``,
    no evaluation, or a run older than the answer figures) or logged an odd
    value (a string, a null, a number out of range).

    Attributes:
        split: the evaluation read: ``"test_final"`` (after the last update),
            ``"test"`` (the latest periodic evaluation, only with ``latest=True``),
            ``"eval"`` (an evaluation's folder) or None (no evaluation).
        step: the step whose metrics line holds that evaluation.
        correct_before: correctness of the first step's held-out eval (before any update).
        correct_after: correctness of that evaluation.
        baseline: the best trivial policy's correctness (of those that do not read the
            question's meaning: a constant answer, the candidate the prompt offers at a
            position, a uniform pick among them).
        baseline_name: that policy, in words (``constant '28'``, ``second quoted``).
        distinct: how many distinct parsed answers.
        entropy: their entropy, in nats.
        top_share: the share of replies giving the most common answer.
        truncated: the share of replies cut off at the token limit.
        concentrated, beats_baseline, collapse: the answer figures of those names.
        top: the most common answer, when the run logged it.

    Example::

        answers = held_out_answers(history)  # the module example's run
        assert (answers.collapse, answers.top_share, answers.distinct) == (True, 1.0, 1)
    """

    split: str | None = None
    step: int | None = None
    correct_before: float | None = None
    correct_after: float | None = None
    baseline: float | None = None
    baseline_name: str | None = None
    distinct: int | None = None
    entropy: float | None = None
    top_share: float | None = None
    truncated: float | None = None
    concentrated: bool | None = None
    beats_baseline: bool | None = None
    collapse: bool | None = None
    top: str | None = None

    @classmethod
    def from_figures(
        cls,
        before: Figures | None,
        after: Figures | None,
        *,
        split: str | None = None,
        step: int | None = None,
    ) -> HeldOutAnswers:
        """The held-out answers of two evaluations' figures (the run record's): the first,
        before any update, and the one read (``split`` at ``step``).

        Example::

            from mint_envkit.runs.record import AnswerFigures, Figures

            after = Figures(correct=0.5, answers=AnswerFigures(baseline_correct=0.5))
            HeldOutAnswers.from_figures(None, after, split="eval").flag   # '<= baseline'
        """
        correct_before = None if before is None else before.correct
        if after is None:
            return cls(correct_before=correct_before)
        answers = after.answers
        truncated = answers.truncated if answers.truncated is not None else after.truncated_rate
        return cls(
            split=split,
            step=step,
            correct_before=correct_before,
            correct_after=after.correct,
            baseline=answers.baseline_correct,
            baseline_name=answers.baseline_name,
            distinct=answers.distinct,
            entropy=answers.entropy,
            top_share=answers.top_share,
            truncated=truncated,
            concentrated=answers.concentrated,
            beats_baseline=answers.beats_baseline,
            collapse=answers.collapse,
            top=answers.top,
        )

    @property
    def at_or_below_baseline(self) -> bool:
        """Whether correctness does not beat the best trivial baseline.

        ``beats_baseline`` decides when it was logged; else
        ``correct_after <= baseline``. False when either is unknown.

        Example::

            assert HeldOutAnswers(correct_after=0.5, baseline=0.575).at_or_below_baseline
        """
        if self.beats_baseline is not None:
            return not self.beats_baseline
        if self.correct_after is None or self.baseline is None:
            return False
        return self.correct_after <= self.baseline

    @property
    def flag(self) -> str:
        """What the sweep table's Flag column and the viewer say: ``"COLLAPSE"``,
        ``"<= baseline"``, ``"not beyond noise"`` or ``""``.

        ``COLLAPSE`` when the answers collapse; else, when correctness does not beat the
        baseline (see :attr:`at_or_below_baseline`), ``<= baseline`` if it is at or below
        it and ``not beyond noise`` if it is above it but not by more than the paired
        test's noise.

        Example::

            assert HeldOutAnswers(collapse=True).flag == "COLLAPSE"
            assert HeldOutAnswers(correct_after=0.6, baseline=0.575).flag == ""
            above = HeldOutAnswers(correct_after=0.281, baseline=0.125, beats_baseline=False)
            assert above.flag == "not beyond noise"
        """
        if self.collapse:
            return "COLLAPSE"
        if not self.at_or_below_baseline:
            return ""
        above = (
            self.correct_after is not None
            and self.baseline is not None
            and self.correct_after > self.baseline
        )
        return "not beyond noise" if above else "<= baseline"

    @property
    def known(self) -> bool:
        """Whether any held-out figure was logged (else every display shows ``-``).

        Example::

            assert not held_out_answers([{"step": 0, "env/all/correct": 0.5}]).known
        """
        return any(
            value is not None
            for value in attrs.astuple(self, filter=lambda a, _: a.name not in ("split", "step"))
        )

    def collapse_note(self) -> str | None:
        """Why this evaluation counts as a collapse, in a sentence; None when it does not.

        Example::

            print(held_out_answers(history).collapse_note())  # the module example's run
            # the final evaluation: 100% of its replies give one answer, 1 distinct; held-out
            # correct 0.475 -> 0.575 does not beat the best trivial baseline 0.575 (always
            # giving the most common answer), so the rise is no evidence of learning
            assert held_out_answers(history[:1]).collapse_note() is None
        """
        if not self.collapse:
            return None
        where = f"evaluation at step {self.step}" if self.split == "test" else "final evaluation"
        parts = []
        if self.distinct == 0:
            parts.append("none of its replies parse to an answer")
        elif self.top_share is not None:
            top = "" if self.top is None else f" ({self.top!r})"
            distinct = "" if self.distinct is None else f", {self.distinct} distinct"
            parts.append(f"{self.top_share:.0%} of its replies give one answer{top}{distinct}")
        if self.correct_after is not None and self.at_or_below_baseline:
            before = "" if self.correct_before is None else f"{self.correct_before:.3f} -> "
            rise = self.correct_before is not None and self.correct_after > self.correct_before
            policy = self.baseline_name or "always giving the most common answer"
            parts.append(
                f"held-out correct {before}{self.correct_after:.3f} does not beat the "
                f"best trivial baseline {_fixed(self.baseline)} ({policy})"
                + (", so the rise is no evidence of learning" if rise else "")
            )
        return f"the {where}: " + ("; ".join(parts) or "the answers collapse")

    def as_dict(self) -> dict[str, Any]:
        """The figures with ``flag``, ``known`` and ``note`` (:meth:`collapse_note`), JSON-ready.

        What the viewer embeds for each run.

        Example::

            assert HeldOutAnswers(collapse=True).as_dict()["flag"] == "COLLAPSE"
        """
        extra = {"flag": self.flag, "known": self.known, "note": self.collapse_note()}
        return {**attrs.asdict(self), **extra}


def held_out_answers(
    history: Sequence[Mapping[str, Any]], *, latest: bool = False
) -> HeldOutAnswers:
    """Read the held-out figures from a run's metrics, one merged line per step.

    ``history`` is :attr:`RunMetrics.history <mint_envkit.sweep._rows.RunMetrics>` (or
    any list of metrics lines). The evaluation read is the final one (after the last
    update); with ``latest=True`` a run without one (still running, or stopped early)
    gives its latest periodic evaluation instead. ``correct_before`` is always the
    first line's held-out correctness.

    Example::

        assert held_out_answers(history).flag == "COLLAPSE"  # the module example's run
        assert held_out_answers(history[:1]).split is None  # no evaluation after the updates
    """
    lines = [line for line in history if isinstance(line, Mapping)]
    before = Figures.from_metrics(lines[0], TEST) if lines else None
    for split in (FINAL, TEST) if latest else (FINAL,):
        found = find_eval(lines, split, last=True)
        if found is not None:
            step = found[0].get("step")
            return HeldOutAnswers.from_figures(
                before, found[1], split=split, step=step if is_integer(step) else None
            )
    return HeldOutAnswers.from_figures(before, None)
