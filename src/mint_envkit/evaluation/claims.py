"""Before/after claims: a learning gain measured where nothing is cut off, split in two.

A before/after comparison at a reply limit that cuts the base model off compares reply
lengths, not the task: at 16 tokens a base model cut off on 77% of the problems reads
10% correct, at 48 tokens the same model reads 45%. So a claim is measured where the
*before* model's truncation is at most :data:`TRUNCATION_OK` (5%), or its line says it
is not and gives the figures at a reply limit where it is (:func:`uncut_budget` finds
one by doubling the limit). The gain is split into **format** (the parse rate) and
**content** (correct among parsed replies), and the *after* model is compared with the
best trivial baseline.

:func:`learning_claim` works on evaluation summaries (:attr:`EvalResult.summary`, or a
training run's eval metrics read back with :func:`summary_from_metrics`); the audit's
learning check, ``mint-envkit eval --compare``, the training loop's first and final
evals and the demo all print its :meth:`LearningClaim.line`.

Example::

    from mint_envkit.evaluation.claims import learning_claim

    before = {"correct": 0.10, "parse_failure_rate": 0.775, "truncated_rate": 0.775,
              "max_tokens": 16}
    after = {"correct": 0.775, "parse_failure_rate": 0.0, "truncated_rate": 0.0,
             "max_tokens": 16, "answers/baseline_correct": 0.05,
             "answers/baseline_name": "constant '31'", "answers/beats_baseline": 1.0}
    claim = learning_claim(before, after)
    claim.cut_off   # True: the base model was cut off on 77.5% of its replies
    print(claim.line())
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

TRUNCATION_OK = 0.05
"""The largest share of cut-off base-model replies at which a before/after claim holds.

Example::

    {"truncated_rate": 0.025}["truncated_rate"] <= TRUNCATION_OK   # True: it compares the task
"""

BUDGET_GROWTH = (2, 4, 8)
"""The multiples of the reply limit :func:`uncut_budget` tries, in order.

Example::

    [16 * m for m in BUDGET_GROWTH]   # [32, 64, 128]
"""


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _points(before: Any, after: Any) -> str:
    if before is None or after is None:
        return "n/a"
    return f"{100 * (after - before):+.1f} points"


def parsed_rate(summary: Mapping[str, Any]) -> float | None:
    """The share of replies that parsed (1 - ``parse_failure_rate``).

    Example::

        parsed_rate({"parse_failure_rate": 0.25})   # 0.75
    """
    failures = summary.get("parse_failure_rate")
    return None if failures is None else 1.0 - failures


def content_rate(summary: Mapping[str, Any]) -> float | None:
    """Correct among the parsed replies: ``correct / parsed`` (None when nothing parsed).

    Example::

        content_rate({"correct": 0.3, "parse_failure_rate": 0.4})   # 0.5
    """
    parsed, correct = parsed_rate(summary), summary.get("correct")
    if parsed is None or correct is None or parsed <= 0:
        return None
    return min(1.0, correct / parsed)


@attrs.frozen
class LearningClaim:
    """A before/after comparison of two evaluations on the same problems and seeds.

    Attributes:
        before, after: the two summaries at the asked reply limit.
        uncut_before, uncut_after: the same at a reply limit where the before model is
            not cut off (None when the asked limit already is such, or none was measured).

    Example::

        # claim: the module example's
        claim.gain, claim.format_gain, claim.content_gain
    """

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    uncut_before: Mapping[str, Any] | None = None
    uncut_after: Mapping[str, Any] | None = None

    @property
    def cut_off(self) -> bool:
        """Whether the before model was cut off on more than :data:`TRUNCATION_OK` of replies."""
        truncated = self.before.get("truncated_rate")
        return truncated is not None and truncated > TRUNCATION_OK

    @property
    def honest(self) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """The (before, after) pair measured where nothing is cut off, or None."""
        if not self.cut_off:
            return self.before, self.after
        if self.uncut_before is not None and self.uncut_after is not None:
            return self.uncut_before, self.uncut_after
        return None

    @property
    def gain(self) -> float | None:
        """The correctness gain where nothing is cut off (None when not measured there)."""
        pair = self.honest
        if pair is None or pair[0].get("correct") is None or pair[1].get("correct") is None:
            return None
        return pair[1]["correct"] - pair[0]["correct"]

    @property
    def format_gain(self) -> float | None:
        """The parse-rate gain where nothing is cut off."""
        pair = self.honest
        if pair is None:
            return None
        before, after = parsed_rate(pair[0]), parsed_rate(pair[1])
        return None if before is None or after is None else after - before

    @property
    def content_gain(self) -> float | None:
        """The gain in correct-among-parsed where nothing is cut off."""
        pair = self.honest
        if pair is None:
            return None
        before, after = content_rate(pair[0]), content_rate(pair[1])
        return None if before is None or after is None else after - before

    @property
    def beats_baseline(self) -> bool | None:
        """Whether the after model beats the best trivial baseline beyond noise, where
        nothing is cut off (None when not known)."""
        pair = self.honest
        flag = None if pair is None else pair[1].get("answers/beats_baseline")
        return None if flag is None else flag == 1.0

    def _part(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
        text = (
            f"correct {_pct(before.get('correct'))} -> {_pct(after.get('correct'))} "
            f"({_points(before.get('correct'), after.get('correct'))}: format, parsed "
            f"{_pct(parsed_rate(before))} -> {_pct(parsed_rate(after))}; content, correct "
            f"among parsed {_pct(content_rate(before))} -> {_pct(content_rate(after))}) at "
            f"{before.get('max_tokens', '?')} tokens (base truncated "
            f"{_pct(before.get('truncated_rate'))})"
        )
        baseline = after.get("answers/baseline_correct")
        if baseline is not None:
            verdict = {1.0: "beats", 0.0: "does not beat"}.get(
                after.get("answers/beats_baseline"), "is not compared with"
            )
            name = after.get("answers/baseline_name") or "trivial policy"
            text += f"; after {verdict} the best trivial baseline {_pct(baseline)} ({name})"
        return text

    def line(self) -> str:
        """The claim in words: the gain, split in format and content, the truncation of the
        base model, the baseline; and, when the base was cut off, a warning and the
        figures at a reply limit where it is not.

        Example::

            print(claim.line())   # claim: the module example's
        """
        text = "held-out " + self._part(self.before, self.after)
        if not self.cut_off:
            return text
        text += (
            f"; BASE TRUNCATED {_pct(self.before.get('truncated_rate'))}: this compares reply "
            "lengths, not the task"
        )
        if self.uncut_before is not None and self.uncut_after is not None:
            text += "; where it is not cut off: " + self._part(self.uncut_before, self.uncut_after)
        else:
            text += "; no reply limit where it is not cut off was measured"
        return text

    def record(self) -> dict[str, Any]:
        """The claim as JSON-ready data (``curve.json``, ``audit.json``).

        Example::

            claim.record()["cut_off"]   # True (claim: the module example's)
        """

        def part(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
            if summary is None:
                return None
            keys = ("correct", "truncated_rate", "max_tokens", "answers/baseline_correct")
            out = {k: summary.get(k) for k in keys}
            out["parsed"] = parsed_rate(summary)
            out["baseline_name"] = summary.get("answers/baseline_name")
            return out

        return {
            "before": part(self.before),
            "after": part(self.after),
            "uncut_before": part(self.uncut_before),
            "uncut_after": part(self.uncut_after),
            "cut_off": self.cut_off,
            "gain": self.gain,
            "format_gain": self.format_gain,
            "content_gain": self.content_gain,
            "beats_baseline": self.beats_baseline,
            "line": self.line(),
        }


def learning_claim(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    uncut: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> LearningClaim:
    """The :class:`LearningClaim` of two summaries, with the uncut pair when measured.

    Example::

        learning_claim({"correct": 0.4, "truncated_rate": 0.0},
                       {"correct": 0.7, "truncated_rate": 0.0}).gain   # 0.3 (about)
    """
    return LearningClaim(
        before=before,
        after=after,
        uncut_before=None if uncut is None else uncut[0],
        uncut_after=None if uncut is None else uncut[1],
    )


async def uncut_budget(
    measure: Callable[[int], Awaitable[Mapping[str, Any]]],
    limit: int,
    ceiling: int,
    first_rate: float | None = None,
) -> tuple[int, Mapping[str, Any]] | None:
    """The smallest of ``limit`` x :data:`BUDGET_GROWTH` (at most ``ceiling``) at which
    ``measure(max_tokens)`` (an evaluation of the before model) is cut off on at most
    :data:`TRUNCATION_OK` of its replies, with that summary; None when none is.

    It stops early when a larger limit cuts off as large a share as the limit before it
    (``first_rate`` is the share at ``limit``): those replies do not end with more room
    (a model repeating itself), and every doubling would double the evaluation's cost for
    nothing (SmolLM2 on reasoning-gym's leg_counting: 10% cut off at 96 tokens, 7.5% at
    192 and at 384, the loop "15 crickets, 12 crickets, ..." never ending).

    Example::

        async def looping(max_tokens):  # 3 of 40 replies never end
            return {"truncated_rate": 0.075, "max_tokens": max_tokens}

        assert await uncut_budget(looping, limit=96, ceiling=2048, first_rate=0.1) is None
        # not run: needs a sampling client (a running backend)
        # found = await uncut_budget(lambda n: evaluate_at(base, n), limit=16, ceiling=512)
    """
    previous = first_rate
    for growth in BUDGET_GROWTH:
        budget = limit * growth
        if budget > ceiling:
            return None
        summary = await measure(budget)
        truncated = summary.get("truncated_rate")
        if truncated is not None and truncated <= TRUNCATION_OK:
            return budget, summary
        if truncated is not None and previous is not None and truncated >= previous:
            return None  # more room did not end more replies
        previous = truncated
    return None


def summary_from_metrics(row: Mapping[str, Any], prefix: str, max_tokens: int) -> dict[str, Any]:
    """An eval summary read back from a training run's metrics line (``<prefix>/all/...``).

    Example::

        summary_from_metrics({"test/env/all/correct": 0.5, "test/env/all/parsed": 0.75,
                              "test/env/all/truncated": 0.25}, "test/env", 16)
        # {'correct': 0.5, 'parse_failure_rate': 0.25, 'truncated_rate': 0.25, 'max_tokens': 16}
    """
    head = f"{prefix}/all/"
    parsed = row.get(head + "parsed")
    out: dict[str, Any] = {
        "correct": row.get(head + "correct"),
        "parse_failure_rate": None if parsed is None else 1.0 - parsed,
        "truncated_rate": row.get(head + "truncated"),
        "max_tokens": max_tokens,
    }
    for key in ("baseline_correct", "baseline_name", "beats_baseline"):
        if head + "answers/" + key in row:
            out["answers/" + key] = row[head + "answers/" + key]
    return out
