"""The files of a sweep directory: the manifest, results.jsonl and runs' metrics.

Layout::

    ROOT/
      sweep.json        manifest: grid, base config, config names, created_at, version
      results.jsonl     one line per finished config attempt (appended atomically)
      summary.csv       written by the summary
      summary.png       written by the summary when matplotlib is installed
      <config name>/    one run: config.json, metrics.jsonl, checkpoints.jsonl, rollouts.jsonl

Example::

    from mint_envkit.sweep._store import latest_results

    latest_results("runs/arithmetic-sweep")["kl0p0-t0p7-g2"]["status"]  # 'ok'
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError
from mint_envkit.rl.logs import read_jsonl

__all__ = [
    "MANIFEST",
    "METRICS",
    "RESULTS",
    "SUMMARY_CSV",
    "SUMMARY_PNG",
    "latest_results",
    "read_manifest",
    "utc_now",
]

MANIFEST = "sweep.json"
"""File name of the sweep manifest in the sweep root.

Example::

    json.loads((Path(root) / MANIFEST).read_text())["grid"]
"""
RESULTS = "results.jsonl"
"""File name of the per-attempt results log in the sweep root.

Example::

    read_jsonl(Path(root) / RESULTS)
"""
METRICS = "metrics.jsonl"
"""File name of a run's per-step metrics in its log_path.

Example::

    read_jsonl(Path(config.log_path) / METRICS)
"""
SUMMARY_CSV = "summary.csv"
"""File name of the summary table (CSV) in the sweep root.

Example::

    Path(root) / SUMMARY_CSV
"""
SUMMARY_PNG = "summary.png"
"""File name of the mean-reward plot in the sweep root.

Example::

    Path(root) / SUMMARY_PNG
"""


def utc_now() -> str:
    """The current UTC time as ISO 8601 text, to the second.

    Example::

        utc_now()  # '2026-11-29T09:17:03+00:00'
    """
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def latest_results(root: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The latest ``results.jsonl`` record of each config name in a sweep root.

    Example::

        latest_results("runs/sweep").get("kl0p0-t0p7-g2", {}).get("status")  # 'ok'
    """
    records = read_jsonl(Path(root) / RESULTS)
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        name = record.get("name")
        if isinstance(name, str):
            latest[name] = record
    return latest


def read_manifest(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``sweep.json`` of a sweep root, or None when there is none.

    Raises :class:`~mint_envkit.errors.ConfigError` when the file exists but is
    not a readable manifest.

    Example::

        read_manifest("runs/arithmetic-sweep")["configs"][0]["name"]  # 'kl0p0-t0p7-g2'
    """
    path = Path(root) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path} is not valid JSON ({err}); use a new sweep root (MINT_LOG_ROOT) "
            "or delete the damaged file"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("configs"), list):
        raise ConfigError(
            f"{path} is not a sweep manifest (no 'configs' list); use a new sweep root "
            "(MINT_LOG_ROOT)"
        )
    return data
