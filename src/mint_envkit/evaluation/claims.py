"""Before/after claims: a learning gain measured where nothing is cut off, split in two.

A before/after comparison at a reply limit that cuts the base model off compares reply
lengths, not the task: at 16 tokens a base model cut off on 77% of the problems reads
10% correct, at 48 tokens the same model reads 45%. So a claim is measured where the
*before* model's truncation is at most :data:`TRUNCATION_OK` (5%), or its line says it
is not and gives the figures at a reply limit where it is (:func:`uncut_budget` finds
one by doubling the limit). The gain is split into **format** (the parse rate) and
**content** (correct among parsed replies), and the *after* model is compared with the
best trivial baseline.

:func:`learning_claim` works on evaluations' figures
(:class:`~mint_envkit.runs.record.Figures`: :attr:`EvalResult.figures`, a training run's
eval metrics read back with :meth:`Figures.from_metrics`, or a summary dict); the
audit's learning check, ``mint-envkit eval --compare``, the training loop's first and
final evals and the demo all print its :meth:`LearningClaim.line`.

Example::

    from mint_envkit.evaluation.claims import learning_claim
    from mint_envkit.runs.record import AnswerFigures, Figures

    before = Figures(correct=0.10, parse_failure_rate=0.775, truncated_rate=0.775,
                     max_tokens=16)
    after = Figures(correct=0.775, parse_failure_rate=0.0, truncated_rate=0.0,
                    max_tokens=16, answers=AnswerFigures(
                        baseline_correct=0.05, baseline_name="constant '31'",
                        beats_baseline=True))
    claim = learning_claim(before, after)
    claim.cut_off   # True: the base model was cut off on 77.5% of its replies
    print(claim.line())
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.progress import say
from mint_envkit.runs.record import FINAL, FINAL_UNCUT, TEST, UNCUT, Figures, find_eval

TRUNCATION_OK = 0.05
"""The largest share of cut-off base-model replies at which a before/after claim holds.

Example::

    0.025 <= TRUNCATION_OK   # True: 2.5% cut off, the claim compares the task
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


def content_rate(figures: Figures) -> float | None:
    """Correct among the parsed replies: ``correct / parsed`` (None when nothing parsed).

    Example::

        content_rate(Figures(correct=0.3, parse_failure_rate=0.4))   # 0.5
    """
    parsed, correct = figures.parsed, figures.correct
    if parsed is None or correct is None or parsed <= 0:
        return None
    return min(1.0, correct / parsed)


def _reward(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _success(figures: Figures) -> float | None:
    """What a claim's gain compares: a game's success, else correctness."""
    if figures.answers.success_metric is not None:
        return figures.answers.success
    return figures.correct


def _figures(value: Figures | Mapping[str, Any]) -> Figures:
    return value if isinstance(value, Figures) else Figures.from_summary(value)


def _maybe_figures(value: Figures | Mapping[str, Any] | None) -> Figures | None:
    return None if value is None else _figures(value)


@attrs.frozen
class LearningClaim:
    """A before/after comparison of two evaluations on the same problems and seeds.

    Attributes:
        before, after: the two evaluations' figures at the asked reply limit (a summary
            dict is read as :meth:`Figures.from_summary`).
        uncut_before, uncut_after: the same at a reply limit where the before model is
            not cut off (None when the asked limit already is such, or none was measured).

    Example::

        # claim: the module example's
        claim.gain, claim.format_gain, claim.content_gain
    """

    before: Figures = attrs.field(converter=_figures)
    after: Figures = attrs.field(converter=_figures)
    uncut_before: Figures | None = attrs.field(default=None, converter=_maybe_figures)
    uncut_after: Figures | None = attrs.field(default=None, converter=_maybe_figures)

    @property
    def cut_off(self) -> bool:
        """Whether the before model was cut off on more than :data:`TRUNCATION_OK` of replies."""
        truncated = self.before.truncated_rate
        return truncated is not None and truncated > TRUNCATION_OK

    @property
    def honest(self) -> tuple[Figures, Figures] | None:
        """The (before, after) pair measured where nothing is cut off, or None."""
        if not self.cut_off:
            return self.before, self.after
        if self.uncut_before is not None and self.uncut_after is not None:
            return self.uncut_before, self.uncut_after
        return None

    @property
    def gain(self) -> float | None:
        """The correctness gain (a game's: its success metric's) where nothing is cut off
        (None when not measured there)."""
        pair = self.honest
        if pair is None:
            return None
        before, after = (_success(f) for f in pair)
        return None if before is None or after is None else after - before

    @property
    def format_gain(self) -> float | None:
        """The parse-rate gain where nothing is cut off."""
        pair = self.honest
        if pair is None:
            return None
        before, after = pair[0].parsed, pair[1].parsed
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
        return None if pair is None else pair[1].answers.beats_baseline

    def _part(self, before: Figures, after: Figures) -> str:
        limit = "?" if before.max_tokens is None else before.max_tokens
        metric = after.answers.success_metric or before.answers.success_metric
        if metric is not None:  # a game: its success metric, beside the reward
            return self._game_part(before, after, metric, limit)
        text = (
            f"correct {_pct(before.correct)} -> {_pct(after.correct)} "
            f"({_points(before.correct, after.correct)}: format, parsed "
            f"{_pct(before.parsed)} -> {_pct(after.parsed)}; content, correct "
            f"among parsed {_pct(content_rate(before))} -> {_pct(content_rate(after))}) at "
            f"{limit} tokens (base truncated {_pct(before.truncated_rate)})"
        )
        return text + _baseline_clause(after, "trivial policy", "baseline")

    def _game_part(self, before: Figures, after: Figures, metric: str, limit: Any) -> str:
        b, a = before.answers.success, after.answers.success
        text = (
            f"{metric} {_pct(b)} -> {_pct(a)} ({_points(b, a)}), mean reward "
            f"{_reward(before.mean_reward)} -> {_reward(after.mean_reward)} at {limit} tokens "
            f"(base truncated {_pct(before.truncated_rate)})"
        )
        return text + _baseline_clause(after, "trivial game policy", "game policy")

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
            f"; BASE TRUNCATED {_pct(self.before.truncated_rate)}: this compares reply "
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

        def part(figures: Figures | None) -> dict[str, Any] | None:
            if figures is None:
                return None
            return {
                **figures.summary(),
                "parsed": figures.parsed,
                "baseline_name": figures.answers.baseline_name,
            }

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
    before: Figures | Mapping[str, Any],
    after: Figures | Mapping[str, Any],
    uncut: tuple[Figures | Mapping[str, Any], Figures | Mapping[str, Any]] | None = None,
) -> LearningClaim:
    """The :class:`LearningClaim` of two evaluations' figures (or summaries), with the
    uncut pair when measured.

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
    measure: Callable[[int], Awaitable[Figures]],
    limit: int,
    ceiling: int,
    first_rate: float | None = None,
) -> tuple[int, Figures] | None:
    """The smallest of ``limit`` x :data:`BUDGET_GROWTH` (at most ``ceiling``) at which
    ``measure(max_tokens)`` (an evaluation of the before model) is cut off on at most
    :data:`TRUNCATION_OK` of its replies, with its figures; None when none is.

    It stops early when a larger limit cuts off as large a share as the limit before it
    (``first_rate`` is the share at ``limit``): those replies do not end with more room
    (a model repeating itself), and every doubling would double the evaluation's cost for
    nothing (SmolLM2 on reasoning-gym's leg_counting: 10% cut off at 96 tokens, 7.5% at
    192 and at 384, the loop "15 crickets, 12 crickets, ..." never ending).

    Example::

        async def looping(max_tokens):  # 3 of 40 replies never end
            return Figures(truncated_rate=0.075, max_tokens=max_tokens)

        assert await uncut_budget(looping, limit=96, ceiling=2048, first_rate=0.1) is None
        # not run: needs a sampling client (a running backend)
        # found = await uncut_budget(lambda n: evaluate_at(base, n), limit=16, ceiling=512)
    """
    previous = first_rate
    for growth in BUDGET_GROWTH:
        budget = limit * growth
        if budget > ceiling:
            return None
        figures = await measure(budget)
        truncated = figures.truncated_rate
        if truncated is not None and truncated <= TRUNCATION_OK:
            return budget, figures
        if truncated is not None and previous is not None and truncated >= previous:
            return None  # more room did not end more replies
        previous = truncated
    return None


async def claims_against_base(
    results: Sequence[Any],
    evaluate_at: Callable[[int, list[str | None]], Awaitable[list[Any]]],
    ceiling: int = 2048,
) -> list[tuple[str, LearningClaim]]:
    """Each checkpoint's evaluation (``results[1:]``) against the base model's
    (``results[0]``), by label, measured where the base is not cut off: when it is at
    its reply limit, ``evaluate_at(max_tokens, checkpoints)`` evaluates the base (a
    checkpoint of None) and the checkpoints again at a limit where it is not
    (:func:`uncut_budget`, the training loop's ladder), and each re-run says so first.

    Example::

        # not run: `results` are EvalResults of the base and a checkpoint (evaluate_many)
        for label, claim in await claims_against_base(results, evaluate_at):
            print(f"{label} vs base: {claim.line()}")
    """
    base = results[0].figures
    uncut: list[Figures] = []
    limit = base.max_tokens or 0
    if (base.truncated_rate or 0.0) > TRUNCATION_OK:

        async def measure(max_tokens: int) -> Figures:
            say(
                f"the base model is cut off on {base.truncated_rate:.0%} of its replies at "
                f"{limit} tokens: evaluating it again at {max_tokens} tokens"
            )
            return (await evaluate_at(max_tokens, [None]))[0].figures

        found = await uncut_budget(measure, limit, ceiling=ceiling, first_rate=base.truncated_rate)
        if found is not None:
            others = [r.summary["checkpoint"] for r in results[1:]]
            say(
                f"evaluating the {len(others)} checkpoint(s) again at {found[0]} tokens, "
                "where the base model is not cut off"
            )
            uncut = [found[1], *(r.figures for r in await evaluate_at(found[0], others))]
    claims = []
    for position, result in enumerate(results[1:], start=1):
        pair = (uncut[0], uncut[position]) if uncut else None
        claims.append(
            (str(result.summary.get("label")), learning_claim(base, result.figures, pair))
        )
    return claims


def run_claim_of(
    rows: Sequence[Mapping[str, Any]], max_tokens: int | None = None
) -> LearningClaim | None:
    """A training run's before/after claim from its metrics rows: its first held-out eval
    against its final one, with their uncut evals when it ran them (None when the run
    has not logged both). ``max_tokens`` is the reply limit of a run written before
    its figures carried it.

    Example::

        rows = [{"step": 0, "test/env/all/correct": 0.25, "test/max_tokens": 16},
                {"step": 9, "test_final/env/all/correct": 0.5, "test_final/max_tokens": 16}]
        run_claim_of(rows).gain   # 0.25
    """
    first, last = find_eval(rows, TEST), find_eval(rows, FINAL, last=True)
    if first is None or last is None:
        return None
    before, after = (
        f
        if f.max_tokens is not None or max_tokens is None
        else attrs.evolve(f, max_tokens=max_tokens)
        for f in (first[1], last[1])
    )
    uncut_before = Figures.from_metrics(first[0], UNCUT)
    uncut_after = Figures.from_metrics(last[0], FINAL_UNCUT)
    pair = None if uncut_before is None or uncut_after is None else (uncut_before, uncut_after)
    return learning_claim(before, after, pair)


def _baseline_clause(after: Figures, unnamed: str, what: str) -> str:
    """ "; after beats the best trivial <what> 57.5% (<name>)", or "" without a baseline."""
    baseline = after.answers.baseline_correct
    if baseline is None:
        return ""
    verdict = {True: "beats", False: "does not beat"}.get(
        after.answers.beats_baseline, "is not compared with"
    )
    name = after.answers.baseline_name or unnamed
    return f"; after {verdict} the best trivial {what} {_pct(baseline)} ({name})"
