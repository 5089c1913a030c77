"""The sweep summary: read from the runs' metrics.jsonl, never recomputed."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import attrs
import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.rl.config import Config
from mint_envkit.sweep import Sweep, SweepSummary, load_summary
from mint_envkit.sweep._rows import RunMetrics, read_run_metrics


def step(n: int, reward: float, correct: float | None = None, **more) -> dict:
    line = {"step": n, "env/all/reward/total": reward, "optim/lr": 1e-4, **more}
    if correct is not None:
        line["env/all/correct"] = correct
    return line


class MetricsRunner:
    """A real runner: writes the given metrics lines for each config, or raises."""

    def __init__(self, lines: dict[str, list[dict] | Exception]):
        self.lines = lines

    async def __call__(self, config: Config) -> None:
        todo = self.lines[Path(config.log_path).name]
        if isinstance(todo, Exception):
            raise todo
        with open(Path(config.log_path) / "metrics.jsonl", "w") as fh:
            for line in todo:
                fh.write(json.dumps(line) + "\n")


GRID = {"kl_penalty_coef": [0.0, 0.02], "group_size": [2, 4]}


async def make_sweep(make_config, root: Path) -> Sweep:
    """Four configs: ok, ok without a correct metric, failed, and missing (crashed)."""
    runner = MetricsRunner(
        {
            "kl0p0-g2": [
                step(0, -0.25, 0.0, **{"test/env/all/reward/total": -0.2, "train/datums": 4}),
                step(1, -0.1, 0.25, **{"test_final/env/all/reward/total": 0.3, "train/datums": 2}),
            ],
            "kl0p0-g4": [step(0, 0.5), step(1, 0.75)],
            "kl0p02-g2": RuntimeError("reward function raised"),
            "kl0p02-g4": [step(0, 1.0, 1.0, kl_policy_base=0.00125)],
        }
    )
    sweep = Sweep(
        base=make_config(temperature=0.7), grid=GRID, root=root, runner=runner, quiet=True
    )
    await sweep.run()
    # kl0p02-g4 "crashed": its metrics were written but its result never was.
    results = root / "results.jsonl"
    lines = results.read_text().splitlines()
    assert json.loads(lines[-1])["name"] == "kl0p02-g4"
    results.write_text("\n".join(lines[:-1]) + "\n")
    return sweep


async def test_table_from_the_runs_metrics(make_config, tmp_path):
    root = tmp_path / "sweep"
    sweep = await make_sweep(make_config, root)
    expected = "\n".join(
        [
            "KL    Temperature  Group size  Steps  Mean reward  Correct  Eval before  Eval after"
            "  Datums  KL to base  Status   Log path",
            "0.00  0.7          2           2      -0.100       0.25     -0.200       0.300     "
            f"  6       -           ok       {root}/kl0p0-g2",
            "0.00  0.7          4           2      0.750        -        -            -         "
            f"  0       -           ok       {root}/kl0p0-g4",
            "0.02  0.7          2           0      -            -        -            -         "
            f"  0       -           failed   {root}/kl0p02-g2",
            "0.02  0.7          4           1      1.000        1.00     -            -         "
            f"  0       0.0013      missing  {root}/kl0p02-g4",
        ]
    )
    assert sweep.table() == expected
    assert load_summary(root).table() == expected


async def test_table_shape_matches_the_issue(make_config, tmp_path):
    runner = MetricsRunner({"kl0p0-t0p7-g2": [step(0, -0.1, 0.0)]})
    sweep = Sweep(
        base=make_config(temperature=0.7),
        grid={"kl_penalty_coef": [0.0], "temperature": [0.7], "group_size": [2]},
        root=tmp_path,
        runner=runner,
        quiet=True,
    )
    await sweep.run()
    header, row = sweep.table().splitlines()
    assert header.startswith("KL    Temperature  Group size  Steps  Mean reward  Correct  Eval")
    assert (
        row == "0.00  0.7          2           1      -0.100       0.00     -            -         "
        f"  0       -           ok      {tmp_path}/kl0p0-t0p7-g2"
    )


async def test_other_grid_fields_get_columns(make_config, tmp_path):
    runner = MetricsRunner(
        {
            "lr0p001-loss_fn_importance_sampling": [step(0, 0.1)],
            "lr0p001-loss_fn_ppo": [step(0, 0.2)],
            "lr3em04-loss_fn_importance_sampling": [step(0, 0.3)],
            "lr3em04-loss_fn_ppo": [step(0, 0.4)],
        }
    )
    sweep = Sweep(
        base=make_config(temperature=0.7),
        grid={"loss_fn": ["importance_sampling", "ppo"], "learning_rate": [1e-3, 3e-4]},
        root=tmp_path,
        runner=runner,
        quiet=True,
    )
    await sweep.run()
    lines = sweep.table().splitlines()
    assert lines[0].split() == [
        "KL",
        "Temperature",
        "Group",
        "size",
        "LR",
        "loss_fn",
        "Steps",
        "Mean",
        "reward",
        "Correct",
        "Eval",
        "before",
        "Eval",
        "after",
        "Datums",
        "KL",
        "to",
        "base",
        "Status",
        "Log",
        "path",
    ]
    assert lines[4].split()[:8] == ["0.00", "0.7", "2", "0.0003", "ppo", "1", "0.400", "-"]


async def test_kl_keeps_its_digits(make_config, tmp_path):
    runner = MetricsRunner({})
    grid = {"kl_penalty_coef": [0.0, 0.02, 0.005, 1]}
    sweep = Sweep(
        base=make_config(temperature=0.7), grid=grid, root=tmp_path, runner=runner, quiet=True
    )
    runner.lines = {name: [step(0, 0.0)] for name in sweep.names}
    await sweep.run()
    kl_column = [line.split()[0] for line in sweep.table().splitlines()[1:]]
    assert kl_column == ["0.00", "0.02", "0.005", "1.00"]


# ------------------------------------------------------------ metrics files


def test_read_run_metrics(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        "\n".join(
            [
                json.dumps(step(0, 0.1, 0.0)),
                json.dumps(step(1, 0.2, 0.5)),
                "",
                json.dumps(step(1, 0.3, 0.5)),  # step 1 logged again after a resume
                json.dumps({"step": 1, "test/env/all/correct": 0.75}),  # eval line
                '{"step": 2, "env/all/rew',  # torn last line of a crash
            ]
        )
    )
    metrics = read_run_metrics(tmp_path)
    assert metrics.exists and metrics.steps == 2 and metrics.unreadable == 1
    assert metrics.final["env/all/reward/total"] == 0.3
    assert metrics.final["test/env/all/correct"] == 0.75
    missing = read_run_metrics(tmp_path / "nowhere")
    assert missing == RunMetrics(exists=False, steps=0, final={}, unreadable=0, history=())


def test_lines_without_step_count_one_each(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"env/all/reward/total": 1}) + "\n" + json.dumps({"env/all/reward/total": 2})
    )
    metrics = read_run_metrics(tmp_path)
    assert metrics.steps == 2 and metrics.final == {"env/all/reward/total": 2}


async def test_ok_without_metrics_is_missing(make_config, tmp_path):
    await make_sweep(make_config, tmp_path)
    (tmp_path / "kl0p0-g2" / "metrics.jsonl").unlink()
    row = load_summary(tmp_path).rows[0]
    assert (row.name, row.status, row.metrics.steps) == ("kl0p0-g2", "missing", 0)


async def test_unreadable_lines_and_unknown_results_are_noted(make_config, tmp_path):
    await make_sweep(make_config, tmp_path)
    with open(tmp_path / "kl0p0-g4" / "metrics.jsonl", "a") as fh:
        fh.write("not json\n")
    with open(tmp_path / "results.jsonl", "a") as fh:
        fh.write(json.dumps({"name": "elsewhere", "status": "ok"}) + "\n")
    summary = load_summary(tmp_path)
    assert any("1 unreadable line(s)" in note for note in summary.notes)
    assert any("elsewhere" in note for note in summary.notes)
    assert summary.rows[1].mean_reward == 0.75


# ----------------------------------------------------- files and the CLI


def report(root) -> str:
    """What ``mint-envkit summary ROOT`` prints: the one public way to a summary."""
    summary = load_summary(root)
    return summary.report(summary.write_files())


def test_history_holds_every_step_merged(tmp_path):
    lines = [step(0, -0.25), {"step": 0, "train/datums": 4}, step(1, 0.5)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    history = read_run_metrics(tmp_path).history
    assert [m["step"] for m in history] == [0, 1]
    assert history[0]["train/datums"] == 4 and history[0]["env/all/reward/total"] == -0.25


def _png_width(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:20], "big")


async def test_the_png_adds_step_curves_only_with_more_than_one_step(make_config, tmp_path):
    pytest.importorskip("matplotlib")
    one = await make_sweep(make_config, tmp_path / "one")  # has a 2-step run
    summary = load_summary(tmp_path / "one")
    single = attrs.evolve(summary, rows=tuple(r for r in summary.rows if r.metrics.steps <= 1))
    assert one.table()
    wide = summary.write_png(tmp_path / "wide.png")
    narrow = single.write_png(tmp_path / "narrow.png")
    assert _png_width(wide) > 1.5 * _png_width(narrow)


async def test_the_summary_writes_csv_and_png_from_the_directory_alone(make_config, tmp_path):
    root = tmp_path / "sweep"
    await make_sweep(make_config, root)
    for name in ("summary.csv", "summary.png"):
        (root / name).unlink()

    out = report(root)
    assert out.splitlines()[0].startswith("KL    Temperature")
    assert "failed kl0p02-g2: RuntimeError: reward function raised" in out
    assert f"wrote {root}/summary.csv" in out and f"wrote {root}/summary.png" in out
    assert (root / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    with open(root / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["Name"] for r in rows] == ["kl0p0-g2", "kl0p0-g4", "kl0p02-g2", "kl0p02-g4"]
    first = rows[0]
    assert first["KL"] == "0.0" and first["Temperature"] == "0.7" and first["Group size"] == "2"
    assert first["Steps"] == "2" and first["Mean reward"] == "-0.1" and first["Correct"] == "0.25"
    assert first["Status"] == "ok" and first["Log path"] == f"{root}/kl0p0-g2"
    assert first["env/all/reward/total"] == "-0.1" and first["optim/lr"] == "0.0001"
    assert first["step"] == "1"
    assert rows[1]["Correct"] == "" and rows[1]["env/all/correct"] == ""
    assert rows[2]["Status"] == "failed"
    assert rows[2]["Error"] == "RuntimeError: reward function raised"
    assert rows[3]["Status"] == "missing" and rows[3]["Mean reward"] == "1.0"


async def test_missing_matplotlib_skips_the_png(make_config, tmp_path, monkeypatch):
    root = tmp_path / "sweep"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    await make_sweep(make_config, root)
    out = report(root)
    assert "summary.png skipped: matplotlib is not installed" in out
    assert not (root / "summary.png").exists()
    assert (root / "summary.csv").exists()


async def test_a_plotting_error_does_not_crash(make_config, tmp_path, monkeypatch):
    await make_sweep(make_config, tmp_path)

    def broken(self, path=None):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(SweepSummary, "write_png", broken)
    assert "summary.png not written: RuntimeError: no fonts" in report(tmp_path)


async def test_sweep_run_writes_the_summary_files(make_config, tmp_path):
    await make_sweep(make_config, tmp_path)
    assert (tmp_path / "summary.csv").exists()
    assert (tmp_path / "summary.png").read_bytes()[:4] == b"\x89PNG"


def test_load_summary_needs_a_sweep_directory(tmp_path):
    with pytest.raises(ConfigError, match=r"sweep\.json not found"):
        load_summary(tmp_path)
    (tmp_path / "sweep.json").write_text(json.dumps({"grid": {}}))
    with pytest.raises(ConfigError, match="not a sweep manifest"):
        load_summary(tmp_path)
