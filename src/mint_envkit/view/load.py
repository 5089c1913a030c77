"""Reading a run or a sweep directory into the data the viewer embeds.

A *run* directory holds ``metrics.jsonl``, ``rollouts.jsonl``,
``config.json`` and ``checkpoints.jsonl`` (see :mod:`mint_envkit.runs.files`);
a *sweep* directory holds ``sweep.json`` and ``results.jsonl`` and one run
directory per config (see ``docs/sweep.md``). A directory with neither but
with run directories inside is read as a sweep of those runs. An evaluation's
folder (``mint-envkit eval --out DIR``) is such a sweep, one run per checkpoint; its
episodes get their problems from ``results.jsonl`` (see :mod:`mint_envkit.view.evals`).

The result is one :class:`ReportData`: ``index`` (small: runs, metric
curves and the text figures beside them (``answers/baseline_name``), a summary per
step, each run's held-out answers beside the best trivial baseline, see
:func:`~mint_envkit.sweep.held_out_answers`) and ``chunks`` (one list of rollout
records per run and step, see :mod:`mint_envkit.view.chunks`), which the page parses
only when that step is shown.

Example::

    # not run: reads files of your own run or data set
    from mint_envkit.view.load import load_report_data

    data = load_report_data("runs/rl_hyperparameters-local")
    data.index["kind"]          # "sweep"
    len(data.chunks)            # one per run and step with rollouts
    data.notes                  # warnings, e.g. a torn last line that was skipped
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.claims import run_claim_of
from mint_envkit.runs.files import read_jsonl
from mint_envkit.runs.record import DERIVED, EVAL, FINAL_UNCUT, Figures, find_eval, is_text_figure
from mint_envkit.sweep import HeldOutAnswers, held_out_answers
from mint_envkit.view.chunks import finite_number, step_chunks, step_of
from mint_envkit.view.evals import is_eval_line, problem_of, problems_by_label

RUN_FILES = ("metrics.jsonl", "rollouts.jsonl", "config.json")
"""The files whose presence marks a directory as a run directory.

Example::

    # not run: `path` comes from your own code
    any((path / name).is_file() for name in RUN_FILES)
"""

TEXT_LIMIT = 200
"""The most characters of a text figure (``answers/baseline_name``) the page embeds.

Example::

    name = "constant 'no'"[:TEXT_LIMIT]
"""


@attrs.frozen
class ReportData:
    """What a report embeds: the index, the rollout chunks and the notes.

    Attributes:
        index: runs, their config, metric curves and per-step summaries.
        chunks: chunk id -> ``{"msgs": [...], "records": [...]}``, one per
            run and step; a record's ``prompt`` and ``messages`` are lists of
            indices into ``msgs``.
        notes: warnings about the files (skipped lines, empty runs).

    Example::

        # not run: reads files of your own run or data set
        data = load_report_data("runs/demo")
        data.index["runs"][0]["metrics"]["steps"]   # [0, 1, ...]
    """

    index: dict[str, Any]
    chunks: dict[str, dict[str, Any]]
    notes: list[str]


def _is_run_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in RUN_FILES)


def find_runs(path: str | os.PathLike[str]) -> tuple[str, list[Path]]:
    """Whether ``path`` is a ``"run"`` or a ``"sweep"``, and its run directories.

    A sweep's runs come in the order of ``sweep.json``, then any other run
    directory inside it, by name. Raises :class:`~mint_envkit.errors.ConfigError`
    when ``path`` is neither.

    Example::

        # not run: reads files of your own run or data set
        kind, runs = find_runs("runs/rl_hyperparameters-local")   # ("sweep", [...])
    """
    root = Path(path)
    if not root.exists():
        raise ConfigError(
            f"{str(root)!r} does not exist; pass a run directory (it holds metrics.jsonl) "
            "or a sweep directory (it holds sweep.json)"
        )
    if not root.is_dir():
        raise ConfigError(
            f"{str(root)!r} is a file, not a directory; pass the run directory that holds "
            "metrics.jsonl and rollouts.jsonl (or a sweep directory)"
        )
    is_sweep = (root / "sweep.json").is_file() or (root / "results.jsonl").is_file()
    if not is_sweep and _is_run_dir(root):
        return "run", [root]
    listed: list[Path] = []
    manifest = _read_json(root / "sweep.json")
    configs = manifest.get("configs") if isinstance(manifest, dict) else None
    for config in configs if isinstance(configs, list) else []:
        name = config.get("name") if isinstance(config, dict) else None
        if isinstance(name, str) and (root / name).is_dir():
            listed.append(root / name)
    others = sorted(p for p in root.iterdir() if p.is_dir() and p not in listed and _is_run_dir(p))
    runs = listed + others
    if not runs and not is_sweep:
        raise ConfigError(
            f"{str(root)!r} is not a run directory (no {', '.join(RUN_FILES)}) nor a sweep "
            "directory (no sweep.json and no run directories inside); pass the log_path of "
            "a run or the root of a sweep"
        )
    return "sweep", runs


def _read_json(path: Path) -> Any:
    """The JSON in ``path``, or None: missing, a folder, not UTF-8, not JSON, nested too deep."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def read_lines(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The JSON objects of a ``.jsonl`` file; a line that is not one is skipped and noted.

    A missing file has no lines. ``notes`` gets one warning per file with skipped lines
    (e.g. the torn last line of a run that was killed).

    Example::

        # not run: reads files of your own run or data set
        notes = []
        lines = read_lines(Path("runs/demo/metrics.jsonl"), notes)
    """
    unreadable: list[str] = []
    lines = read_jsonl(path, unreadable=unreadable)
    bad = len(unreadable)
    if bad:
        notes.append(
            f"{path}: skipped {bad} unreadable line{'s' if bad != 1 else ''} "
            "(not a JSON object; e.g. the torn last line of a run that was killed)"
        )
    return lines


def _by_step(lines: Iterable[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Metric lines merged per step (a later line wins), in step order."""
    by_step: dict[int, dict[str, Any]] = {}
    for line in lines:
        step = step_of(line)
        if step is not None:
            by_step.setdefault(step, {}).update(line)
    return dict(sorted(by_step.items()))


def _text(value: Any) -> str | None:
    """A text figure (``answers/baseline_name``) as shown: at most TEXT_LIMIT characters."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= TEXT_LIMIT else value[: TEXT_LIMIT - 1] + "…"


def _curves(by_step: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Merged metric lines (see :func:`_by_step`) as one series per numeric key."""
    steps = list(by_step)
    keys = sorted(
        {k for row in by_step.values() for k, v in row.items() if finite_number(v) is not None}
    )
    series = {
        key: [finite_number(by_step[s].get(key)) for s in steps] for key in keys if key != "step"
    }
    # the text figures (the baseline's name, the most common answer): for the tooltips
    named = sorted(
        {k for row in by_step.values() for k, v in row.items() if is_text_figure(k) and v}
    )
    texts = {key: [_text(by_step[s].get(key)) for s in steps] for key in named}
    derived: dict[str, str] = {}
    for key, (source, label) in DERIVED.items():
        if source in series and key not in series:
            series[key] = [None if v is None else 1 - v for v in series[source]]
            derived[key] = label
    return {"steps": steps, "series": series, "derived": derived, "texts": texts}


def _eval_texts(merged: dict[int, dict[str, Any]], config: Any) -> None:
    """An evaluation written before its line carried the text figures (the baseline's
    name): they are taken from its ``config.json`` (its summary)."""
    if not isinstance(config, dict):
        return
    named = Figures.from_summary(config)
    for line in merged.values():
        figures = Figures.from_metrics(line, EVAL)
        if figures is not None:
            line.update(figures.with_texts_of(named).metrics(EVAL))


def _answers(merged: dict[int, dict[str, Any]], is_eval: bool) -> dict[str, Any]:
    """The run's held-out answers (an evaluation's: its figures), with the baseline's name
    shortened to :data:`TEXT_LIMIT`.

    Values no float can hold (10**400) are left out first.
    """
    lines = [
        {k: v for k, v in line.items() if not isinstance(v, int) or finite_number(v) is not None}
        for line in merged.values()
    ]
    if is_eval:
        figures = Figures.from_metrics(lines[-1], EVAL) if lines else None
        answers = HeldOutAnswers.from_figures(None, figures, split=EVAL, step=0).as_dict()
        answers["baseline_name"] = _text(answers["baseline_name"])
        return answers
    answers = held_out_answers(lines, latest=True).as_dict()
    claim = run_claim_of(lines)
    if claim is not None and claim.cut_off:
        # the headline is the pair measured where nothing is cut off; the cut-off one beside
        cut = {
            "before": claim.before.correct,
            "after": claim.after.correct,
            "truncated": claim.before.truncated_rate,
            "max_tokens": claim.before.max_tokens,
            "line": claim.line(),
        }
        if claim.uncut_before is not None and claim.uncut_after is not None:
            final = find_eval(lines, FINAL_UNCUT, last=True)
            step = None if final is None else final[0].get("step")
            answers = HeldOutAnswers.from_figures(
                claim.uncut_before, claim.uncut_after, split=FINAL_UNCUT, step=step
            ).as_dict()
            answers["max_tokens"] = claim.uncut_before.max_tokens
        answers["cut_off"] = cut
    answers["baseline_name"] = _text(answers["baseline_name"])
    return answers


def _with_problems(lines: list[dict[str, Any]], problems: dict[Any, Any]) -> list[dict[str, Any]]:
    """An evaluation's rollout records, each with its problem from ``results.jsonl``."""
    if not problems:
        return lines
    out = []
    for line in lines:
        problem = None if line.get("problem") is not None else problem_of(line, problems)
        out.append(line if problem is None else {**line, "problem": problem})
    return out


def load_report_data(path: str | os.PathLike[str]) -> ReportData:
    """Read a run or sweep directory (see :func:`find_runs`) into a :class:`ReportData`.

    Unreadable lines are skipped and noted. Raises
    :class:`~mint_envkit.errors.ConfigError` for a directory that is neither
    a run nor a sweep, for a run with no steps yet, and for a sweep none of
    whose runs has any.

    Example::

        # not run: reads files of your own run or data set
        data = load_report_data("runs/demo")
        for note in data.notes:
            print("warning:", note)
    """
    root = Path(path)
    kind, run_dirs = find_runs(root)
    notes: list[str] = []
    results_lines = read_lines(root / "results.jsonl", notes) if kind == "sweep" else []
    results = {line["name"]: line for line in results_lines if isinstance(line.get("name"), str)}
    problems = problems_by_label(results_lines)
    runs: list[dict[str, Any]] = []
    chunks: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        name = run_dir.name if kind == "sweep" else (root.resolve().name or str(root))
        metric_lines = read_lines(run_dir / "metrics.jsonl", notes)
        rollout_lines = read_lines(run_dir / "rollouts.jsonl", notes)
        result = results.get(run_dir.name, {})
        if not metric_lines and not rollout_lines:
            if kind == "run":
                raise ConfigError(
                    f"{str(run_dir)!r} is an empty run: metrics.jsonl and rollouts.jsonl hold "
                    "no records yet; view it after its first step has finished"
                )
            notes.append(f"{name}: no steps recorded (status {result.get('status', 'missing')})")
            continue
        merged = _by_step(metric_lines)
        config = _read_json(run_dir / "config.json")
        is_eval = bool(merged) and all(is_eval_line(line) for line in merged.values())
        if is_eval:  # an evaluation's checkpoint folder: its problems are in results.jsonl
            _eval_texts(merged, config)
            if kind == "run" and (run_dir.parent / "results.jsonl").is_file():
                problems = problems_by_label(read_lines(run_dir.parent / "results.jsonl", notes))
            rollout_lines = _with_problems(rollout_lines, problems.get(run_dir.name, {}))
        summaries, run_chunks = step_chunks(len(runs), rollout_lines)
        chunks.update(run_chunks)
        error_file = run_dir / "sweep_error.txt"
        runs.append(
            {
                "name": name,
                "path": str(run_dir),
                "status": result.get("status"),
                "error": result.get("error"),
                "traceback": error_file.read_text(errors="replace")
                if result.get("status") == "failed" and error_file.is_file()
                else None,
                "params": result.get("params") or {},
                "seconds": result.get("seconds"),
                "config": config,
                "eval": is_eval,
                "checkpoints": read_lines(run_dir / "checkpoints.jsonl", notes),
                "metrics": _curves(merged),
                "answers": _answers(merged, is_eval),
                "steps": summaries,
            }
        )
    if not runs:
        raise ConfigError(
            f"{str(root)!r} is a sweep whose runs have no steps recorded yet; view it after "
            "a config has finished its first step"
        )
    index = {
        "format": 1,
        "kind": "eval" if all(run["eval"] for run in runs) else kind,
        "title": root.resolve().name or str(root),
        "source": str(root),
        "runs": runs,
        "notes": notes,
    }
    return ReportData(index=index, chunks=chunks, notes=notes)
