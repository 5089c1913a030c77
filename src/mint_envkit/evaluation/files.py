"""What an evaluation writes: ``results.jsonl``, ``summary.json``, and files the viewer reads.

An evaluation directory holds:

- ``results.jsonl``: one line per problem (the problem, its replies, rewards,
  parse statuses, correct flags, pass@k);
- ``summary.json``: the settings and the figures (mean reward, pass@k,
  parse-failure rate);
- ``rollouts.jsonl`` (every episode, split ``eval``), ``metrics.jsonl`` (one
  line, step 0) and ``config.json``: the run format, so
  ``mint-envkit view DIR`` (:func:`mint_envkit.view.write_report`) shows it.

Example::

    write_eval_dir("runs/eval/base", result, rollouts)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mint_envkit.evaluation.metrics import ProblemResult, pass_ks
from mint_envkit.rl.logs import append_jsonl, append_jsonl_lines, write_json_atomic
from mint_envkit.rl.records import rollout_records
from mint_envkit.rl.types import GroupRollout

__all__ = ["EVAL_FILES", "metric_line", "write_eval_dir"]

EVAL_FILES = ("results.jsonl", "summary.json", "rollouts.jsonl", "metrics.jsonl", "config.json")
"""The files of an evaluation directory (an earlier evaluation's are replaced).

Example::

    [(Path(out) / name).is_file() for name in EVAL_FILES]   # all True
"""


def metric_line(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metrics.jsonl`` line of an evaluation (step 0, ``eval/`` keys) for the viewer.

    Example::

        metric_line({"mean_reward": 0.5, "pass@": {"1": 0.25}})
        # {'step': 0, 'eval/mean_reward': 0.5, 'eval/pass@1': 0.25}
    """
    line: dict[str, Any] = {"step": 0}
    for key in ("mean_reward", "correct", "parse_failure_rate"):
        if summary.get(key) is not None:
            line[f"eval/{key}"] = summary[key]
    for k, value in (summary.get("pass@") or {}).items():
        if value is not None:
            line[f"eval/pass@{k}"] = value
    return line


def write_eval_dir(
    out_dir: str | os.PathLike[str],
    summary: Mapping[str, Any],
    results: Sequence[ProblemResult],
    rollouts: Sequence[GroupRollout],
) -> Path:
    """Write an evaluation's files into ``out_dir`` (created); return it.

    ``summary`` is written as ``summary.json`` and ``config.json`` (the
    settings the viewer shows); ``results`` and ``rollouts`` pair up by position.

    Example::

        write_eval_dir("runs/eval/base", result.summary, result.problems, rollouts)
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in EVAL_FILES:
        (out / name).unlink(missing_ok=True)
    samples = int(summary.get("samples") or 1)
    append_jsonl_lines(out / "results.jsonl", [r.record(pass_ks(samples)) for r in results])
    records: list[dict[str, Any]] = []
    split_names = {r.split for r in results}
    for result, rollout in zip(results, rollouts, strict=True):
        split = "eval" if len(split_names) == 1 else f"eval:{result.split}"
        records.extend(rollout_records(0, [rollout], {}, split))
    append_jsonl_lines(out / "rollouts.jsonl", records)
    append_jsonl(out / "metrics.jsonl", metric_line(summary))
    settings = {k: v for k, v in summary.items() if k != "pass@"}
    write_json_atomic(out / "config.json", settings)
    write_json_atomic(out / "summary.json", dict(summary))
    return out
