"""What an evaluation writes: ``results.jsonl``, ``summary.json``, and a run folder per checkpoint.

An evaluation directory holds:

- ``results.jsonl``: one line per checkpoint and problem (``label``,
  ``checkpoint``, the problem, its replies, rewards, parse statuses, correct
  flags, pass@k);
- ``summary.json``: the settings and figures (mean reward, pass@k,
  parse-failure rate); for a comparison, ``{"runs": [...], "per_problem": ...}``;
- ``<label>/`` per checkpoint (``base`` for the base model): ``rollouts.jsonl``
  (every episode, split ``eval``), ``metrics.jsonl`` (one line, step 0) and
  ``config.json``, the run format, so ``mint-envkit view DIR``
  (:func:`mint_envkit.view.write_report`) shows every checkpoint as a run.

Example::

    # not run: `summary` is an eval summary, built elsewhere
    write_run_folder("runs/eval/base", summary, rollouts)
    write_results("runs/eval", [result], summary)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mint_envkit.evaluation.metrics import ProblemResult, pass_ks
from mint_envkit.rollouts.records import rollout_records
from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.files import append_jsonl, append_jsonl_lines, write_json_atomic
from mint_envkit.runs.record import EVAL, Figures

RUN_FOLDER_FILES = ("rollouts.jsonl", "metrics.jsonl", "config.json")
"""The files of a checkpoint's folder (the run format the viewer reads).

Example::

    # not run: `out` comes from your own code
    [(Path(out) / "base" / name).is_file() for name in RUN_FOLDER_FILES]   # all True
"""


def metric_line(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metrics.jsonl`` line of an evaluation for the viewer and the trackers: step 0
    and its figures (:meth:`Figures.metrics <mint_envkit.runs.record.Figures.metrics>`
    of split ``eval``); a figure that is None is left out.

    Example::

        metric_line({"mean_reward": 0.5, "pass@": {"1": 0.25}})
        # {'step': 0, 'eval/mean_reward': 0.5, 'eval/pass@1': 0.25}
    """
    return {"step": 0, **Figures.from_summary(summary).metrics(EVAL)}


def _fresh(path: Path) -> Path:
    path.unlink(missing_ok=True)
    return path


def write_run_folder(
    folder: str | os.PathLike[str],
    summary: Mapping[str, Any],
    results: Sequence[ProblemResult],
    rollouts: Sequence[GroupRollout],
) -> Path:
    """Write one checkpoint's run folder (created; earlier files replaced); return it.

    ``results`` and ``rollouts`` pair up by position; an episode's split is
    ``eval`` (``eval:train`` / ``eval:test`` when both splits ran).

    Example::

        # not run: `summary` is an eval summary, built elsewhere
        write_run_folder("runs/eval/base", summary, problem_results, rollouts)
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    both = len({r.split for r in results}) > 1
    limit = Figures.from_summary(summary).max_tokens
    records: list[dict[str, Any]] = []
    for result, rollout in zip(results, rollouts, strict=True):
        split = f"eval:{result.split}" if both else "eval"
        records.extend(rollout_records(0, [rollout], {}, split, max_tokens=limit))
    append_jsonl_lines(_fresh(out / "rollouts.jsonl"), records)
    append_jsonl(_fresh(out / "metrics.jsonl"), metric_line(summary))
    write_json_atomic(out / "config.json", {k: v for k, v in summary.items() if k != "pass@"})
    return out


def write_results(
    out_dir: str | os.PathLike[str],
    runs: Sequence[tuple[Mapping[str, Any], Sequence[ProblemResult]]],
    summary: Mapping[str, Any],
) -> Path:
    """Write ``results.jsonl`` (every run's problems) and ``summary.json`` into ``out_dir``.

    ``runs`` holds each checkpoint's summary (for its ``label`` and
    ``checkpoint``) and problem results.

    Example::

        # not run: `result` is an EvalResult, built elsewhere
        write_results("runs/eval", [(result.summary, result.problems)], result.summary)
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for run, results in runs:
        ks = pass_ks(int(run["samples"]))
        tag = {"label": run["label"], "checkpoint": run["checkpoint"]}
        lines.extend({**tag, **result.record(ks)} for result in results)
    append_jsonl_lines(_fresh(out / "results.jsonl"), lines)
    write_json_atomic(out / "summary.json", dict(summary))
    return out
