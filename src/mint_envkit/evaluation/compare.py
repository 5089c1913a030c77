"""Side by side: the figures of several evaluations, and per-problem wins, losses and ties.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    from mint_envkit.evaluation import evaluate_many

    results = await evaluate_many(builder, model_name=model, checkpoints=[None, path])
    print(comparison_table(results))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mint_envkit.evaluation.metrics import ProblemResult
from mint_envkit.evaluation.run import EvalResult
from mint_envkit.progress import text_table
from mint_envkit.rollouts.answers import collapse_note

BY = ("correct", "reward")
"""What problems are compared by: the share of correct samples, or the mean reward."""


def _score(result: ProblemResult, by: str) -> float | None:
    c = result.c
    if by == "correct" and c is not None and result.n:
        return c / result.n
    return result.mean_reward()


def per_problem(base: EvalResult, other: EvalResult, by: str = "correct") -> dict[str, int]:
    """How often ``other`` beats ``base`` on a problem: ``better``, ``worse``, ``tied``.

    ``by="correct"`` scores a problem by its share of correct samples (its
    mean reward when the env reports no ``correct``); ``by="reward"`` by its
    mean reward. Problems that failed on either side are ``skipped``. Plain
    counts, not a significance test.

    Example::

        # not run: `base` is an EvalResult, built elsewhere
        per_problem(base, tuned)   # {'better': 3, 'worse': 1, 'tied': 4, 'skipped': 0}
    """
    counts = {"better": 0, "worse": 0, "tied": 0, "skipped": 0}
    theirs = {(r.split, r.index): _score(r, by) for r in other.problems}
    for result in base.problems:
        a, b = _score(result, by), theirs.get((result.split, result.index))
        if a is None or b is None:
            counts["skipped"] += 1
        else:
            counts["better" if b > a else "worse" if b < a else "tied"] += 1
    return counts


# kind: "rate" (3 decimals, a difference), "count" (an integer, a difference),
# "flag" (yes/no), "text" (quoted, shortened; None is unparsed), "unknown" (n/a)
def _rows(result: EvalResult) -> list[tuple[str, Any, str]]:
    figures = result.figures
    answers, permuted = figures.answers, figures.counterfactual
    # the top answer is None for unparsed replies, and when it was not computed
    text = "text" if answers.top_share is not None else "unknown"
    rows = [("mean reward", figures.mean_reward, "rate")]
    rows += [(f"pass@{k}", value, "rate") for k, value in figures.pass_at.items()]
    rows += [
        ("correct", figures.correct, "rate"),
        ("baseline correct", answers.baseline_correct, "rate"),
        ("best baseline", answers.baseline_name, text),
        ("beats baseline", answers.beats_baseline, "flag"),
        ("distinct answers", answers.distinct, "count"),
        ("answer entropy", answers.entropy, "rate"),
        ("top answer share", answers.top_share, "rate"),
        ("top answer", answers.top, text),
        ("answer position", answers.position, "text"),
        ("position share", answers.position_share, "rate"),
        ("parse failures", figures.parse_failure_rate, "rate"),
        ("truncated", figures.truncated_rate, "rate"),
        ("collapse", answers.collapse, "flag"),
    ]
    if answers.success_metric is not None:  # a game: its success metric
        rows.insert(1 + len(figures.pass_at), (answers.success_metric, answers.success, "rate"))
    tools = figures.tools
    if tools.calls_per_episode is not None:  # an env with tools: how the episodes used them
        rows.append(("tool calls/episode", tools.calls_per_episode, "rate"))
        rows.append(("episodes calling", tools.calling, "rate"))
        rows.append(("valid calls", tools.valid, "rate"))
        rows.append(("tool errors", tools.errors, "rate"))
        rows.append(("tool timeouts", tools.timeouts, "rate"))
    if permuted.pairs:
        rows.append(("permuted: correct", permuted.correct, "rate"))
        rows.append(("permuted: content", permuted.same_content, "rate"))
        rows.append(("permuted: position", permuted.same_position, "rate"))
    return rows


def _cell(value: Any, kind: str = "rate", signed: bool = False) -> str:
    if kind == "unknown" or (value is None and kind != "text"):
        return "n/a"
    if value is None:
        return "(unparsed)"
    if kind == "flag":
        return "yes" if value else "no"
    if kind == "text":
        text = " ".join(str(value).split())
        return repr(text if len(text) <= 16 else text[:13] + "...")
    if kind == "count":
        return f"{value:+d}" if signed else str(value)
    value = round(value, 3) + 0.0  # -0.0001 rounds to -0.0; + 0.0 makes it 0.0
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _difference(value: Any, first: Any, kind: str) -> str:
    if kind in ("flag", "text", "unknown"):
        return ""
    return _cell(None if value is None or first is None else value - first, kind, signed=True)


def comparison_table(results: Sequence[EvalResult]) -> str:
    """The figures of ``results`` side by side; with two or more, each one minus the first.

    Rows: mean reward, pass@k, correct beside the best trivial baseline and the
    answer diversity (see :mod:`mint_envkit.rollouts.answers`), parse failures,
    truncation, the collapse flag. Below the table, per problem: how many the later
    ones win, lose and tie against the first (see :func:`per_problem`), then a line
    per evaluation whose answers collapse.

    Example::

        # not run: `base` is an EvalResult, built elsewhere
        print(comparison_table([base, tuned]))
        # metric          base    final   final-base ...
    """
    names = [str(r.summary.get("label", i)) for i, r in enumerate(results)]
    header = ["metric", *names, *(f"{n}-{names[0]}" for n in names[1:])]
    body: list[list[str]] = []
    columns = [_rows(r) for r in results]
    for position, (metric, first, kind) in enumerate(columns[0]):
        cells = [col[position][1:] for col in columns]  # (value, kind) per evaluation
        diffs = [_difference(v, first, k if k == kind else "unknown") for v, k in cells[1:]]
        body.append([metric, *(_cell(v, k) for v, k in cells), *diffs])
    errors = [str(r.summary["errors"]) for r in results]
    body.append(["failed problems", *errors, *([""] * (len(results) - 1))])
    lines = text_table([header, *body], right=range(1, len(header))).splitlines()
    first = results[0].summary
    for name, other in zip(names[1:], results[1:], strict=True):
        for by, words in zip(BY, ("share correct", "mean reward"), strict=True):
            c = per_problem(results[0], other, by)
            lines.append(
                f"per problem ({first['problems']} problems x {first['samples']} samples, "
                f"{words}): {name} better on {c['better']}, worse on {c['worse']}, tied on "
                f"{c['tied']}" + (f", skipped {c['skipped']}" if c["skipped"] else "")
            )
    if len(results) > 1:
        lines.append(
            "these are plain counts on the same problems and seeds, not a significance test"
        )
    for name, result in zip(names, results, strict=True):
        note = collapse_note(result.figures.answers, result.figures.correct)
        if note:
            lines.append(f"{name}: {note}")
    return "\n".join(lines)


def comparison_record(results: Sequence[EvalResult]) -> dict[str, Any]:
    """The ``comparison.json`` of a comparison: each summary, and per-problem counts vs the first.

    Example::

        # not run: `base` is an EvalResult, built elsewhere
        comparison_record([base, tuned])["per_problem"]["final"]["correct"]["better"]   # 3
    """
    return {
        "runs": [r.summary for r in results],
        "per_problem": {
            str(r.summary.get("label", i)): {by: per_problem(results[0], r, by) for by in BY}
            for i, r in enumerate(results[1:], start=1)
        },
    }
