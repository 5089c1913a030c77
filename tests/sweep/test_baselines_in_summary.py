"""The sweep's summary sets held-out correctness beside the best trivial baseline.

A yes/no env trained 10 steps went from 47.5% to 57.5% held-out correct while the
model answered "no" to every problem: 57.5% was the always-"no" baseline. The
summary's held-out table, ``summary.csv`` and ``summary.png`` must show it. The
sweep directories here are written by hand, in the format the loop writes: the
final evaluation's ``test_final/env/all/answers/*`` metrics on the last step's line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mint_envkit.sweep import load_summary
from mint_envkit.sweep._answers import HeldOutAnswers, held_out_answers

FINAL = "test_final/env/all/"


def answers(split: str, **figures) -> dict:
    """``answers(split, baseline_correct=0.5, ...)`` -> ``{split/env/all/answers/...: ...}``."""
    return {f"{split}/env/all/answers/{name}": value for name, value in figures.items()}


def run_lines(before: float | None, after: float | None, steps: int = 3, **final) -> list[dict]:
    """A run's metrics lines: held-out correct ``before`` at step 0, ``after`` on the last."""
    lines = [
        {"step": step, "env/all/reward/total": 0.1 * step, "env/all/correct": 0.5}
        for step in range(steps)
    ]
    if before is not None:
        lines[0]["test/env/all/correct"] = before
        lines[0]["test/env/all/reward/total"] = before
    if after is not None:
        lines[-1][f"{FINAL}correct"] = after
        lines[-1][f"{FINAL}reward/total"] = after
    lines[-1].update(final)
    return lines


COLLAPSED = run_lines(
    0.475,
    0.575,
    **answers(
        "test_final",
        baseline_correct=0.575,
        baseline_name="constant 'no'",
        distinct=1,
        entropy=0.0,
        top_share=1.0,
        truncated=0.0,
        concentrated=1.0,
        beats_baseline=0.0,
        collapse=1.0,
    ),
)
HEALTHY = run_lines(
    0.475,
    0.8,
    **answers(
        "test_final",
        baseline_correct=0.575,
        distinct=2,
        entropy=0.67,
        top_share=0.55,
        truncated=0.025,
        concentrated=0.0,
        beats_baseline=1.0,
        collapse=0.0,
    ),
)
OLD = run_lines(None, None)  # a run from before the answers/* metrics, without evals


def write_sweep(root: Path, runs: dict[str, list[dict]]) -> Path:
    """A sweep directory as the sweep writes it: sweep.json, results.jsonl, one run each."""
    root.mkdir(parents=True)
    configs = [
        {"name": name, "params": {"learning_rate": 1e-4}, "settings": {"temperature": 1.0}}
        for name in runs
    ]
    (root / "sweep.json").write_text(
        json.dumps({"format": 1, "grid": {"learning_rate": [1e-4]}, "configs": configs})
    )
    with open(root / "results.jsonl", "w") as fh:
        for name, lines in runs.items():
            (root / name).mkdir()
            (root / name / "metrics.jsonl").write_text(
                "".join(json.dumps(line) + "\n" for line in lines)
            )
            fh.write(json.dumps({"name": name, "status": "ok", "seconds": 1.0}) + "\n")
    return root


def held_out_rows(table: str) -> dict[str, list[str]]:
    """The held-out table's rows by config name, split on runs of 2+ spaces."""
    import re

    lines = table.split("\n\n", 1)[1].splitlines()
    assert lines[0].startswith("Held-out correct:")
    assert re.split(r"\s{2,}", lines[1]) == [
        "Config",
        "Corr before",
        "Corr after",
        "Baseline",
        "Trunc",
        "Distinct",
        "Flag",
    ]
    rows = [line for line in lines[2:] if not line.startswith("Best trivial baseline:")]
    return {cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", line) for line in rows)}


def test_a_collapsed_run_is_flagged_and_a_healthy_one_is_not(tmp_path):
    root = write_sweep(tmp_path / "yes-no", {"collapsed": COLLAPSED, "healthy": HEALTHY})
    table = load_summary(root).table()
    rows = held_out_rows(table)
    assert rows == {
        "collapsed": ["0.475", "0.575", "0.575", "0.00", "1", "COLLAPSE"],
        "healthy": ["0.475", "0.800", "0.575", "0.03", "2"],  # no flag
    }
    note = held_out_answers(COLLAPSED).collapse_note()
    assert "does not beat the best trivial baseline 0.575 (constant 'no')" in note
    # The last line names the best trivial policy the runs logged (one run did: COLLAPSED).
    assert table.splitlines()[-1] == "Best trivial baseline: constant 'no'"
    # Every line fits a 100-column terminal.
    held_out = table.split("\n\n", 1)[1]
    assert max(len(line) for line in held_out.splitlines()) <= 100


def test_the_csv_has_the_held_out_columns(tmp_path):
    root = write_sweep(
        tmp_path / "yes-no", {"collapsed": COLLAPSED, "healthy": HEALTHY, "old": OLD}
    )
    path = load_summary(root).write_csv()
    with open(path, newline="") as fh:
        rows = {row["Name"]: row for row in csv.DictReader(fh)}
    collapsed, healthy, old = rows["collapsed"], rows["healthy"], rows["old"]
    assert collapsed["Corr before"] == "0.475" and collapsed["Corr after"] == "0.575"
    assert collapsed["Baseline"] == "0.575" and collapsed["Trunc"] == "0.0"
    assert collapsed["Distinct"] == "1" and collapsed["Flag"] == "COLLAPSE"
    assert collapsed[f"{FINAL}answers/collapse"] == "1.0"  # the raw metric, as every metric
    assert healthy["Flag"] == "" and healthy["Baseline"] == "0.575"
    held_out = ("Corr before", "Corr after", "Baseline", "Trunc", "Distinct", "Flag")
    assert [old[key] for key in held_out] == [""] * 6
    header = next(csv.reader(path.open()))
    assert header.index("Corr before") == header.index("Log path") + 1
    assert header[header.index("Corr before") : header.index("Seconds")] == list(held_out)
    assert header[header.index("Error") + 1] == "Baseline name"
    assert (collapsed["Baseline name"], healthy["Baseline name"]) == ("constant 'no'", "")


def test_an_old_run_shows_dashes_and_an_old_sweep_no_held_out_table(tmp_path):
    mixed = write_sweep(tmp_path / "mixed", {"collapsed": COLLAPSED, "old": OLD})
    assert held_out_rows(load_summary(mixed).table())["old"] == ["-", "-", "-", "-", "-"]

    old = write_sweep(tmp_path / "old", {"a": OLD, "b": run_lines(None, None, steps=1)})
    summary = load_summary(old)
    assert summary.held_out_table() == ""
    assert "\n\n" not in summary.table() and "Baseline" not in summary.table()
    assert summary.rows[0].answers == HeldOutAnswers()


def test_a_run_with_evals_but_no_answer_metrics_shows_its_correctness(tmp_path):
    root = write_sweep(tmp_path / "s", {"evals": run_lines(0.25, 0.5)})
    assert held_out_rows(load_summary(root).table()) == {"evals": ["0.250", "0.500", "-", "-", "-"]}


def test_not_beating_the_baseline_is_flagged(tmp_path):
    logged = run_lines(0.5, 0.55, **answers("test_final", baseline_correct=0.575, beats_baseline=0))
    computed = run_lines(0.5, 0.575, **answers("test_final", baseline_correct=0.575))
    trusted = run_lines(0.5, 0.6, **answers("test_final", baseline_correct=0.6, beats_baseline=1))
    # above the baseline, but not beyond the paired test's noise: said in words
    noisy = run_lines(0.1, 0.281, **answers("test_final", baseline_correct=0.125, beats_baseline=0))
    runs = {"logged": logged, "computed": computed, "trusted": trusted, "noisy": noisy}
    root = write_sweep(tmp_path / "s", runs)
    flags = {name: cells[5:] for name, cells in held_out_rows(load_summary(root).table()).items()}
    assert flags == {
        "logged": ["<= baseline"],
        "computed": ["<= baseline"],
        "trusted": [],
        "noisy": ["not beyond noise"],
    }


@pytest.mark.parametrize(
    "odd",
    [None, "1.0", "n/a", float("nan"), float("inf"), [1], {"x": 1}, True, -0.5, 7.5],
)
def test_odd_values_show_as_dashes(tmp_path, odd):
    figures = {name: odd for name in ("baseline_correct", "distinct", "truncated", "top_share")}
    lines = run_lines(odd, odd, **answers("test_final", **figures, collapse=odd))
    root = write_sweep(tmp_path / "s", {"odd": lines, "ok": HEALTHY})
    summary = load_summary(root)
    row = held_out_rows(summary.table())["odd"]
    assert row[:4] == ["-", "-", "-", "-"]  # none is a rate in 0..1
    if odd is True:  # a boolean collapse flag reads as 1
        assert row[-1] == "COLLAPSE"
    summary.write_csv()


def test_held_out_answers_reads_the_final_eval_or_the_latest():
    history = [
        {"step": 0, "test/env/all/correct": 0.4, **answers("test", baseline_correct=0.6)},
        {"step": 1},
        {"step": 2, "test/env/all/correct": 0.6, **answers("test", collapse=1, top_share=1)},
    ]
    assert held_out_answers(history) == HeldOutAnswers(correct_before=0.4)
    latest = held_out_answers(history, latest=True)
    assert (latest.split, latest.step, latest.correct_after) == ("test", 2, 0.6)
    assert latest.collapse and latest.flag == "COLLAPSE" and latest.top_share == 1.0
    final = held_out_answers(COLLAPSED, latest=True)
    assert (final.split, final.step, final.distinct, final.concentrated) == (
        "test_final",
        2,
        1,
        True,
    )
    assert final.as_dict()["flag"] == "COLLAPSE"
    # The env's own truncated metric stands in for answers/truncated on older runs.
    older = held_out_answers(run_lines(0.1, 0.2, **{f"{FINAL}truncated": 0.25}))
    assert older.truncated == 0.25


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_png_adds_a_held_out_row_with_baselines(tmp_path):
    pytest.importorskip("matplotlib")
    with_answers = write_sweep(tmp_path / "a", {"collapsed": COLLAPSED, "healthy": HEALTHY})
    without = write_sweep(tmp_path / "b", {"x": OLD, "y": OLD})
    tall = load_summary(with_answers).write_png()
    short = load_summary(without).write_png()
    assert tall is not None and short is not None
    (tall_w, tall_h), (short_w, short_h) = _png_size(tall), _png_size(short)
    assert tall_w == short_w and tall_h > 1.8 * short_h
    # Odd values draw too.
    odd = run_lines("x", None, **answers("test_final", baseline_correct=None, collapse="yes"))
    assert load_summary(write_sweep(tmp_path / "c", {"odd": odd})).write_png() is not None
