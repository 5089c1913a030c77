"""load.py on odd files: whatever a run wrote is read, never a crash.

Huge integers, NaN, numbers written as strings, unhashable group ids, a
``config.json`` that is a folder, lines that are not objects: each is
skipped or kept as data, and the report is still written.
"""

from __future__ import annotations

import json
from pathlib import Path

from mint_envkit.view import write_report
from mint_envkit.view.load import load_report_data

HUGE = 10**400  # valid JSON, and too big for a float


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_huge_integers_and_non_finite_values_are_skipped(tmp_path):
    run = tmp_path / "huge"
    run.mkdir()
    _write(
        run / "metrics.jsonl",
        [
            json.dumps({"step": 0, "a": 1.0, "b": HUGE, "c": "0.5"}),
            '{"step": 1, "a": NaN, "b": 2.0, "c": Infinity}',
            json.dumps({"step": HUGE, "a": 3.0}),
            json.dumps({"step": "2", "a": 4.0}),
        ],
    )
    _write(
        run / "rollouts.jsonl",
        [json.dumps({"step": 0, "group": 0, "reward": HUGE, "replies": ["hi"]})],
    )
    data = load_report_data(run)
    metrics = data.index["runs"][0]["metrics"]
    assert metrics["steps"] == [0, 1]  # a step too big for a float or a string: not a step
    assert metrics["series"]["a"] == [1.0, None]
    assert metrics["series"]["b"] == [None, 2.0]
    assert "c" not in metrics["series"]  # a string and an infinity are no values
    assert data.index["runs"][0]["steps"][0]["mean_reward"] is None
    write_report(run)  # the page is written too


def test_unhashable_group_ids_and_odd_record_fields(tmp_path):
    run = tmp_path / "odd"
    run.mkdir()
    _write(run / "metrics.jsonl", [json.dumps({"step": 0, "a": 1})])
    records = [
        {"step": 0, "group": [1, 2], "split": {"x": 1}, "replies": "x", "stop_reasons": "length"},
        {"step": 0, "group": {"g": 1}, "messages": "not a list", "reward": "0.5"},
        {"step": 0, "group": 3, "prompt": "a string prompt", "logs": 5, "metrics": "abc"},
    ]
    _write(run / "rollouts.jsonl", [json.dumps(r) for r in records])
    data = load_report_data(run)
    (summary,) = data.index["runs"][0]["steps"]
    assert summary["groups"] == 3 and summary["episodes"] == 3
    assert summary["mean_reward"] is None  # "0.5" is text, not a reward
    (chunk,) = data.chunks.values()
    assert chunk["records"][0]["replies"] == "x"  # kept for the page to show
    write_report(run)


def test_a_config_that_is_a_folder_or_not_json(tmp_path):
    run = tmp_path / "cfg"
    run.mkdir()
    _write(run / "metrics.jsonl", [json.dumps({"step": 0, "a": 1})])
    (run / "config.json").mkdir()
    assert load_report_data(run).index["runs"][0]["config"] is None
    (run / "config.json").rmdir()
    (run / "config.json").write_text("[" * 100_000)  # deeper than json can nest
    assert load_report_data(run).index["runs"][0]["config"] is None
    (run / "config.json").write_bytes(b"\xff\xfe not utf-8")
    assert load_report_data(run).index["runs"][0]["config"] is None


def test_lines_that_are_not_objects_are_noted(tmp_path):
    run = tmp_path / "lines"
    run.mkdir()
    _write(
        run / "metrics.jsonl", ["[1, 2]", "3", '"text"', "null", json.dumps({"step": 0, "a": 1})]
    )
    data = load_report_data(run)
    assert data.index["runs"][0]["metrics"]["series"]["a"] == [1.0]
    assert any("skipped 4 unreadable lines" in note for note in data.notes)


def test_odd_sweep_results_are_kept_as_data(tmp_path):
    sweep = tmp_path / "sweep"
    run = sweep / "one"
    run.mkdir(parents=True)
    _write(run / "metrics.jsonl", [json.dumps({"step": 0, "a": 1})])
    (sweep / "sweep.json").write_text(json.dumps({"configs": "not a list"}))
    _write(
        sweep / "results.jsonl",
        [json.dumps({"name": "one", "params": "x", "status": {"odd": 1}, "error": [1]})],
    )
    data = load_report_data(sweep)
    assert [r["name"] for r in data.index["runs"]] == ["one"]
    write_report(sweep)


def test_lines_json_cannot_take_are_skipped(tmp_path):
    run = tmp_path / "deep"
    run.mkdir()
    _write(
        run / "metrics.jsonl",
        [
            json.dumps({"step": 0, "a": 1}),
            '{"step": 1, "a": ' + "[" * 100_000 + "}",  # nested deeper than json can go
            '{"step": 2, "a": ' + "9" * 5000 + "}",  # more digits than Python converts
            json.dumps({"step": 3, "a": 2}),
        ],
    )
    data = load_report_data(run)
    assert data.index["runs"][0]["metrics"]["series"]["a"] == [1.0, 2.0]
    assert any("skipped 2 unreadable lines" in note for note in data.notes)
