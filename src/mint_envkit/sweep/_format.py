"""How the sweep's text tables write their cells: fixed decimals, ``-`` for no value.

Example::

    assert [fmt_kl(0.02), fmt_fixed(None, 3)] == ["0.02", "-"]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mint_envkit.sweep._answers import HeldOutAnswers, _number


def fmt_kl(value: Any) -> str:
    """A KL coefficient with 2 decimals, or every digit it needs (``0.005``)."""
    number = _number(value)
    if number is None:
        return "-" if value is None else str(value)
    text = f"{number:.2f}"
    return text if float(text) == number else f"{number:g}"


def fmt_value(value: Any) -> str:
    """A grid value as written (a tiny float in short form); ``-`` for None."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}" if (value != 0 and abs(value) < 1e-3) else repr(value)
    return str(value)


def fmt_fixed(value: float | None, digits: int) -> str:
    """``value`` with ``digits`` decimals (never ``-0.000``); ``-`` for None."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text  # no "-0.000"


HELD_OUT_HEADERS = ("Corr before", "Corr after", "Baseline", "Trunc", "Distinct", "Flag")
"""Columns of the held-out table (and of ``summary.csv``): the final eval beside its baseline.

Example::

    assert HELD_OUT_HEADERS[2] == "Baseline"
"""

HELD_OUT_TITLE = (
    "Held-out correct: before the first update, after the last, vs the best trivial baseline"
)


def baseline_names(answers: Sequence[HeldOutAnswers]) -> str:
    """The runs' best trivial baselines by name, each once, joined with `` / ``; "" if none.

    Example::

        from mint_envkit.sweep import HeldOutAnswers

        runs = [HeldOutAnswers(baseline_name="constant '28'")] * 2 + [HeldOutAnswers()]
        assert baseline_names(runs) == "constant '28'"
    """
    return " / ".join(dict.fromkeys(a.baseline_name for a in answers if a.baseline_name))


def baseline_footnote(answers: Sequence[HeldOutAnswers]) -> str:
    """The line under the held-out table naming the baseline policy; "" when no run logged it.

    Example::

        from mint_envkit.sweep import HeldOutAnswers

        line = baseline_footnote([HeldOutAnswers(baseline_name="second quoted")])
        assert line == "Best trivial baseline: second quoted"
    """
    names = baseline_names(answers)
    return f"Best trivial baseline: {names}" if names else ""


def held_out_cells(answers: HeldOutAnswers) -> list[tuple[Any, int]]:
    """The held-out cells of a row, each with its decimals (0: an integer), in header order."""
    return [
        (answers.correct_before, 3),
        (answers.correct_after, 3),
        (answers.baseline, 3),
        (answers.truncated, 2),
        (answers.distinct, 0),
    ]
