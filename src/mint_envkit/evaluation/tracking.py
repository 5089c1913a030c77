"""An evaluation in the experiment trackers: its summary figures as one row.

``evaluate(..., loggers=("wandb",), out_dir=...)`` logs each evaluated checkpoint as
one tracker run in its run folder (``out_dir/<label>``, see
:mod:`mint_envkit.evaluation.files`), grouped by ``out_dir``: the figures of its
``metrics.jsonl`` line (``eval/mean_reward``, ``eval/pass@k``, the numeric answer
figures) and the text answer figures (``eval/answers/baseline_name``) at step 0, its
settings (model, checkpoint, samples, seed, temperature, ...) as the config. The
trackers and their rules are :mod:`mint_envkit.runs.trackers`'.

Example::

    eval_loggers((), None)   # (): no trackers, no folder needed
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.files import metric_line
from mint_envkit.runs.trackers import TrackingGroup, open_trackers, tracker_names

SETTINGS = (
    "env",
    "model",
    "checkpoint",
    "backend",
    "label",
    "split",
    "samples",
    "seed",
    "temperature",
    "max_tokens",
)
"""The summary's settings an evaluation's trackers get as its config.

Example::

    "temperature" in SETTINGS   # True
"""


def eval_loggers(loggers: Any, out_dir: str | None) -> tuple[str, ...]:
    """``evaluate``'s ``loggers``, checked before anything is sampled.

    Raises:
        ConfigError: an unknown tracker, or trackers without ``out_dir`` (their
            files go in the evaluation's folder).
        MissingExtraError: a tracker's extra is not installed.

    Example::

        eval_loggers(["tensorboard"], "runs/ev")   # ('tensorboard',)
    """
    names = tracker_names(loggers, field="evaluate(loggers=...)")
    if names and out_dir is None:
        raise ConfigError(
            f"evaluate(loggers={names!r}) writes the trackers' files in the evaluation's "
            "folder; pass out_dir=... too"
        )
    return names


def log_summary(
    loggers: Sequence[str], folder: str, summary: Mapping[str, Any], out_dir: str
) -> None:
    """Log one evaluated checkpoint to the trackers: its ``metrics.jsonl`` line
    (:func:`~mint_envkit.evaluation.files.metric_line`, the text figures with it) at step 0.

    A new tracker run each time (a folder written again is a new evaluation), named
    by the summary's label, in the group named after ``out_dir``.

    Example::

        # not run: writes TensorBoard event files (needs the tensorboard extra)
        log_summary(("tensorboard",), "runs/ev/base", result.summary, "runs/ev")
    """
    if not loggers:
        return
    settings = {key: summary[key] for key in SETTINGS if key in summary}
    group = TrackingGroup(name=Path(out_dir).resolve().name, root=out_dir)
    name = str(summary.get("label") or Path(folder).name)
    trackers = open_trackers(loggers, folder, settings, name=name, group=group, fresh=True)
    try:
        trackers.log(metric_line(summary), step=0)
    finally:
        trackers.close()
