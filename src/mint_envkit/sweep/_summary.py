"""The summary of a sweep: the console table, ``summary.csv`` and ``summary.png``.

Everything is read from what the runs wrote: each config's
``metrics.jsonl`` (one JSON object per step) and the sweep's
``results.jsonl``; nothing is recomputed.

Example::

    # `runner`, `config` and `Sweep` as in the mint_envkit.sweep example
    from mint_envkit.sweep import load_summary
    from mint_envkit.sweep._rows import RunMetrics

    sweep = Sweep(base=config, grid={"temperature": [0.7, 1.0]}, root="runs/sweep",
                  runner=runner, quiet=True)
    await sweep.run()

    summary = load_summary("runs/sweep")
    print(summary.report(summary.write_files()))
    # KL    Temperature  Group size  Steps  Mean reward  Correct  Eval before  Eval after  ...
    # 0.00  0.7          2           2      -0.100       0.00     -0.250       0.100       ...
    # 0.00  1.0          2           2      -0.100       0.00     -0.250       0.100       ...
    #
    # wrote runs/sweep/summary.csv
    # wrote runs/sweep/summary.png
    assert [row.mean_reward for row in summary.rows] == [-0.1, -0.1]

    # the other examples run the sweep again (each in its own folder), or show this
    # summary of one config, built from its fields:
    step = {"step": 0, "env/all/reward/total": -0.1, "env/all/correct": 0.0, "train/datums": 8}
    row = SummaryRow(name="t0p7", params={"temperature": 0.7}, status="ok",
                     settings={"kl_penalty_coef": 0.0, "temperature": 0.7, "group_size": 2},
                     metrics=RunMetrics(exists=True, steps=1, final=step, history=(step,)),
                     log_path="runs/sweep/t0p7")
    summary = SweepSummary(root=".", rows=(row,))
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.progress import text_table
from mint_envkit.runs.files import write_text_atomic
from mint_envkit.runs.store import (
    MANIFEST,
    METRICS,
    SUMMARY_CSV,
    SUMMARY_PNG,
    latest_results,
    read_manifest,
)
from mint_envkit.sweep._answers import _number
from mint_envkit.sweep._format import (
    HELD_OUT_HEADERS,
    HELD_OUT_TITLE,
    baseline_footnote,
    fmt_fixed,
    fmt_kl,
    fmt_value,
    held_out_cells,
)
from mint_envkit.sweep._rows import (
    SummaryRow,
    read_run_metrics,
)

COLUMN_LABELS: Mapping[str, str] = {
    "kl_penalty_coef": "KL",
    "temperature": "Temperature",
    "group_size": "Group size",
    "batch_size": "Batch size",
    "learning_rate": "LR",
    "lora_rank": "LoRA rank",
    "max_tokens": "Max tokens",
    "seed": "Data seed",
    "sampling_seed": "Sampling seed",
    "max_steps": "Max steps",
}
"""Table headers of grid fields; a field not listed is headed by its own name.

Example::

    assert COLUMN_LABELS["group_size"] == "Group size"
"""

_FIXED = ("kl_penalty_coef", "temperature", "group_size")


def _measured(row: SummaryRow) -> list[tuple[Any, int]]:
    """The measured cells of a row, each with its decimals (0: an integer), in header order."""
    return [
        (row.metrics.steps, 0),
        (row.mean_reward, 3),
        (row.correct, 2),
        (row.eval_before, 3),
        (row.eval_after, 3),
        (row.datums, 0),
        (row.kl, 4),
    ]


@attrs.frozen
class SweepSummary:
    """The rows of a sweep and how to show them.

    Attributes:
        root: the sweep directory.
        rows: one row per config, in grid order.
        extra_columns: grid fields shown besides KL, temperature and group size.
        notes: remarks about the files (unreadable lines, configs not in the grid).

    Example::

        await sweep.run()  # the module example's sweep
        summary = load_summary("runs/sweep")
        print(summary.table())
        assert [row.name for row in summary.rows] == ["t0p7", "t1p0"]
        assert summary.write_csv().name == "summary.csv"
    """

    root: str
    rows: tuple[SummaryRow, ...]
    extra_columns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def _headers(self) -> list[str]:
        params = [COLUMN_LABELS.get(key, key) for key in (*_FIXED, *self.extra_columns)]
        measured = ["Steps", "Mean reward", "Correct", "Eval before", "Eval after", "Datums"]
        return [*params, *measured, "KL to base", "Status", "Log path"]

    def table(self) -> str:
        """The console table, one row per config; then the held-out table, when any run has one.

        The held-out table (see :meth:`held_out_table`) follows a blank line.

        Example::

            await sweep.run()  # the module example's sweep
            print(load_summary("runs/sweep").table())
            # KL    Temperature  Group size  Steps  Mean reward  Correct  Eval before  Eval after  ...
            # 0.00  0.7          2           2      -0.100       0.00     -0.250       0.100       ...
            # 0.00  1.0          2           2      -0.100       0.00     -0.250       0.100       ...
            header = load_summary("runs/sweep").table().splitlines()[0]
            assert header.startswith("KL    Temperature  Group size  Steps  Mean reward")
        """
        body = []
        for row in self.rows:
            body.append(
                [
                    fmt_kl(row.settings.get("kl_penalty_coef")),
                    fmt_value(row.settings.get("temperature")),
                    fmt_value(row.settings.get("group_size")),
                    *(fmt_value(row.params.get(key)) for key in self.extra_columns),
                    *(
                        fmt_fixed(value, digits) if digits else str(value)
                        for value, digits in _measured(row)
                    ),
                    row.status,
                    row.log_path,
                ]
            )
        main = text_table([self._headers(), *body])
        held_out = self.held_out_table()
        return f"{main}\n\n{held_out}" if held_out else main

    def held_out_table(self) -> str:
        """Held-out correctness per config beside the best trivial baseline; "" when no run has it.

        One row per config: ``Corr before`` (``test/env/all/correct`` of step 0),
        ``Corr after`` (``test_final/env/all/correct``), ``Baseline`` (the final
        eval's ``answers/baseline_correct``), ``Trunc`` (its ``answers/truncated``),
        ``Distinct`` (its ``answers/distinct``) and ``Flag`` (``COLLAPSE`` or
        ``<= baseline``, see :attr:`HeldOutAnswers.flag
        <mint_envkit.sweep.HeldOutAnswers.flag>`); ``-`` where a run did not log it.

        Example::

            def row(name, after, distinct, collapse):  # what a run's metrics.jsonl would say
                first = {"step": 0, "test/env/all/correct": 0.475}
                last = {"step": 9, "test_final/env/all/correct": after,
                        "test_final/env/all/answers/baseline_correct": 0.575,
                        "test_final/env/all/answers/distinct": distinct,
                        "test_final/env/all/answers/collapse": collapse}
                return SummaryRow(name=name, params={}, settings={}, status="ok", log_path=name,
                                  metrics=RunMetrics(exists=True, steps=2, final=last, history=(first, last)))

            summary = SweepSummary(root=".", rows=(row("lr1em04", 0.575, 1, 1.0), row("lr3em05", 0.8, 2, 0.0)))
            print(summary.held_out_table())
            # Held-out correct: before the first update, after the last, vs the best trivial baseline
            # Config   Corr before  Corr after  Baseline  Trunc  Distinct  Flag
            # lr1em04  0.475        0.575       0.575     -      1         COLLAPSE
            # lr3em05  0.475        0.800       0.575     -      2
            assert summary.held_out_table().splitlines()[2].endswith("COLLAPSE")
        """
        answers = [row.answers for row in self.rows]
        if not any(a.known for a in answers):
            return ""
        body = [
            [
                row.name,
                *(
                    fmt_fixed(v, digits) if digits else fmt_value(v)
                    for v, digits in held_out_cells(a)
                ),
                a.flag,
            ]
            for row, a in zip(self.rows, answers, strict=True)
        ]
        grid = text_table([["Config", *HELD_OUT_HEADERS], *body])
        footnote = baseline_footnote(answers)
        return f"{HELD_OUT_TITLE}\n{grid}" + (f"\n{footnote}" if footnote else "")

    def trained(self, width: int = 96) -> str:
        """What each config trained, in words: one paragraph per config.

        Steps, datums and reply tokens trained (and how many datums had every advantage
        0, so no backward pass), the KL penalty and its reference model, held-out
        correct before and after beside the best trivial baseline (where the config
        evaluates), and its last checkpoint; read from each run's ``metrics.jsonl``,
        ``config.json`` and ``checkpoints.jsonl``.

        Example::

            await sweep.run()  # the module example's sweep
            print(load_summary("runs/sweep").trained())
            # What each config trained
            # t0p7: 2 steps, 0 datums trained; no KL penalty; held-out correct - -> -;
            #   no checkpoint recorded
            # t1p0: ...
            assert load_summary("runs/sweep").trained().splitlines()[1].startswith("t0p7: 2 steps")
        """
        from mint_envkit.sweep._trained import trained_section

        return trained_section(self.rows, width)

    def metric_keys(self) -> list[str]:
        """Every final-step metric key of any config, sorted.

        Example::

            # summary: the module example's, of one config
            assert summary.metric_keys() == ["env/all/correct", "env/all/reward/total", "step",
                                             "train/datums"]
        """
        return sorted({key for row in self.rows for key in row.metrics.final})

    def _csv_header(self, keys: list[str]) -> list[str]:
        fixed = ["Name", *self._headers(), *HELD_OUT_HEADERS, "Seconds", "Error", "Baseline name"]
        return [*fixed, *keys]

    def csv_rows(self) -> list[dict[str, Any]]:
        """The rows of ``summary.csv`` (raw values), one dict per config, column -> value.

        Columns: ``Name``, the table's columns, the held-out table's columns
        (``Corr before`` ... ``Flag``, raw values; empty for a run that did not log them),
        ``Seconds``, ``Error``, ``Baseline name`` (the best trivial baseline's), then one
        column per final-step metric key. ``mint-envkit summary --json`` prints them.

        Example::

            # summary: the module example's, of one config
            assert summary.csv_rows()[0]["Name"] == "t0p7"
        """
        keys = self.metric_keys()
        header = self._csv_header(keys)
        out = []
        for row in self.rows:
            answers = row.answers
            values = [
                row.name,
                *(row.settings.get(key, "") for key in _FIXED),
                *(row.params.get(key, "") for key in self.extra_columns),
                *("" if value is None else value for value, _ in _measured(row)),
                row.status,
                row.log_path,
                *("" if value is None else value for value, _ in held_out_cells(answers)),
                answers.flag,
                "" if row.seconds is None else row.seconds,
                row.error or "",
                answers.baseline_name or "",
                *(row.metrics.final.get(key, "") for key in keys),
            ]
            out.append(dict(zip(header, values, strict=True)))
        return out

    def write_csv(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write :meth:`csv_rows` as CSV (whole or not at all). Default path:
        ``ROOT/summary.csv``.

        Example::

            # summary: the module example's, of one config
            assert summary.write_csv() == Path("summary.csv")  # in the summary's root
        """
        path = Path(self.root) / SUMMARY_CSV if path is None else Path(path)
        rows = self.csv_rows()
        header = self._csv_header(self.metric_keys())
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(header)
        writer.writerows([list(row.values()) for row in rows])
        write_text_atomic(path, text.getvalue())
        return path

    def write_png(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        """Plot mean reward per config as a bar chart; None when matplotlib is missing.

        Uses matplotlib's Agg canvas directly (no pyplot, no global backend
        change). Bars are coloured by status; a config with no reward is
        marked ``n/a``. Default path: ``ROOT/summary.png``.

        Example::

            # summary: the module example's, of one config
            assert summary.write_png() == Path("summary.png")  # None without matplotlib
        """
        from mint_envkit.sweep._plot import plot_rewards

        path = Path(self.root) / SUMMARY_PNG if path is None else Path(path)
        return plot_rewards(self, path)

    def write_files(self) -> list[str]:
        """Write ``summary.csv`` and ``summary.png``; return one line per file (or why not).

        Never raises for the plot: a missing matplotlib or a plotting error is
        reported in the returned lines instead.

        Example::

            # summary: the module example's, of one config
            assert summary.write_files() == ["wrote summary.csv", "wrote summary.png"]
        """
        lines = [f"wrote {self.write_csv()}"]
        try:
            png = self.write_png()
        except Exception as err:
            lines.append(f"{SUMMARY_PNG} not written: {type(err).__name__}: {err}")
        else:
            if png is None:
                lines.append(
                    f"{SUMMARY_PNG} skipped: matplotlib is not installed "
                    "(pip install 'mint-envkit[plot]')"
                )
            else:
                lines.append(f"wrote {png}")
        return lines

    def report(self, file_lines: Sequence[str] = ()) -> str:
        """The table, then the error of each failed config, the notes and ``file_lines``.

        What ``mint-envkit summary`` prints.

        Example::

            # summary: the module example's, of one config
            print(summary.report(summary.write_files()))
            assert summary.report(["wrote summary.csv"]).endswith("\\n\\nwrote summary.csv")
        """
        lines = [self.table()]
        failed = [row for row in self.rows if row.status == "failed"]
        if failed:
            lines.append("")
            lines.extend(f"failed {row.name}: {row.error}" for row in failed)
        if self.notes or file_lines:
            lines.append("")
        lines.extend(self.notes)
        lines.extend(file_lines)
        return "\n".join(lines)


def build_summary(
    root: str | os.PathLike[str],
    configs: Sequence[Mapping[str, Any]],
    extra_columns: Sequence[str] = (),
) -> SweepSummary:
    """The summary of ``configs`` (``{"name", "params", "settings"}`` each) under ``root``.

    Reads ``ROOT/results.jsonl`` and each ``ROOT/<name>/metrics.jsonl``.
    Configs that ``results.jsonl`` mentions but ``configs`` does not are left
    out and noted.

    Example::

        await sweep.run()  # the module example's sweep
        summary = build_summary("runs/sweep", read_manifest("runs/sweep")["configs"])
        assert [row.status for row in summary.rows] == ["ok", "ok"]
    """
    root_text = os.fspath(root)
    latest = latest_results(root)
    rows = []
    notes = []
    for entry in configs:
        name = str(entry["name"])
        log_path = os.path.join(root_text, name)
        metrics = read_run_metrics(log_path)
        if metrics.unreadable:
            notes.append(
                f"note: skipped {metrics.unreadable} unreadable line(s) in "
                f"{os.path.join(log_path, METRICS)}"
            )
        record = latest.get(name)
        if record is not None and record.get("status") == "failed":
            status = "failed"
        elif record is not None and record.get("status") == "ok" and metrics.exists:
            status = "ok"
        else:
            status = "missing"
        seconds = _number(record.get("seconds")) if record else None
        rows.append(
            SummaryRow(
                name=name,
                params=dict(entry.get("params") or {}),
                settings=dict(entry.get("settings") or {}),
                status=status,
                metrics=metrics,
                log_path=log_path,
                error=(record or {}).get("error") if status == "failed" else None,
                seconds=seconds,
            )
        )
    unknown = sorted(set(latest) - {row.name for row in rows})
    if unknown:
        notes.append(f"note: results.jsonl also has configs not in this grid: {', '.join(unknown)}")
    extra = tuple(key for key in extra_columns if key not in _FIXED)
    return SweepSummary(root=root_text, rows=tuple(rows), extra_columns=extra, notes=tuple(notes))


def load_summary(sweep_dir: str | os.PathLike[str]) -> SweepSummary:
    """The summary of a sweep directory, from its ``sweep.json`` and the runs' files.

    Raises :class:`~mint_envkit.errors.ConfigError` when ``sweep_dir`` has no
    ``sweep.json``.

    Example::

        await sweep.run()  # the module example's sweep
        assert load_summary("runs/sweep").rows[0].status == "ok"
    """
    manifest = read_manifest(sweep_dir)
    if manifest is None:
        raise ConfigError(
            f"{os.path.join(os.fspath(sweep_dir), MANIFEST)} not found; pass the sweep root "
            "(the directory given as root= or MINT_LOG_ROOT, which holds sweep.json)"
        )
    grid = manifest.get("grid") or {}
    return build_summary(sweep_dir, manifest["configs"], extra_columns=list(grid))
