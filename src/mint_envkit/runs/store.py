"""The files of a sweep directory: the manifest, results.jsonl and runs' metrics.

Layout::

    ROOT/
      sweep.json        manifest: grid, base config, config names, created_at, version
      results.jsonl     one line per finished config attempt (appended atomically)
      summary.csv       written by the summary
      summary.png       written by the summary when matplotlib is installed
      <config name>/    one run: config.json, metrics.jsonl, checkpoints.jsonl, rollouts.jsonl

A :class:`~mint_envkit.sweep.Sweep` writes them; an interpolation sweep
(:mod:`mint_envkit.interpolation`) writes its ``results.jsonl`` the same way.

Example::

    import json
    from pathlib import Path

    from mint_envkit.runs.files import append_jsonl
    from mint_envkit.runs.store import MANIFEST, RESULTS, latest_results

    def tried_twice(root):  # what a sweep of one config, tried twice, leaves behind
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        (root / MANIFEST).write_text(json.dumps({"grid": {"temperature": [0.7]},
                                                 "configs": [{"name": "t0p7"}]}))
        append_jsonl(root / RESULTS, {"name": "t0p7", "status": "failed"})
        append_jsonl(root / RESULTS, {"name": "t0p7", "status": "ok"})
        return root

    root = tried_twice("runs/sweep")  # each example makes it again, in its own folder
    assert latest_results(root)["t0p7"]["status"] == "ok"
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError
from mint_envkit.runs.files import read_jsonl

MANIFEST = "sweep.json"
"""File name of the sweep manifest in the sweep root.

Example::

    root = tried_twice("runs/sweep")  # the module example's
    assert json.loads((root / MANIFEST).read_text())["grid"] == {"temperature": [0.7]}
"""
RESULTS = "results.jsonl"
"""File name of the per-attempt results log in the sweep root.

Example::

    root = tried_twice("runs/sweep")  # the module example's
    assert [r["status"] for r in read_jsonl(root / RESULTS)] == ["failed", "ok"]
"""
METRICS = "metrics.jsonl"
"""File name of a run's per-step metrics in its log_path.

Example::

    (Path("runs/sweep/t0p7")).mkdir(parents=True)
    append_jsonl(Path("runs/sweep/t0p7") / METRICS, {"step": 0, "env/all/reward/total": -0.1})
"""
SUMMARY_CSV = "summary.csv"
"""File name of the summary table (CSV) in the sweep root.

Example::

    # not run: needs a finished sweep (load_summary writes the table)
    assert load_summary("runs/sweep").write_csv() == Path("runs/sweep") / SUMMARY_CSV
"""
SUMMARY_PNG = "summary.png"
"""File name of the mean-reward plot in the sweep root.

Example::

    # not run: needs a finished sweep (its summary draws the plot)
    assert (Path("runs/sweep") / SUMMARY_PNG).is_file()  # with matplotlib installed
"""


def utc_now() -> str:
    """The current UTC time as ISO 8601 text, to the second.

    Example::

        import datetime

        now = utc_now()  # e.g. '2026-11-29T09:17:03+00:00'
        assert datetime.datetime.fromisoformat(now).utcoffset() == datetime.timedelta(0)
    """
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def latest_results(root: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The latest ``results.jsonl`` record of each config name in a sweep root.

    Example::

        root = tried_twice("runs/sweep")  # the module example's
        assert latest_results(root).get("t0p7", {}).get("status") == "ok"
        assert latest_results("runs/no-sweep-here") == {}
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

        root = tried_twice("runs/sweep")  # the module example's
        assert read_manifest(root)["configs"][0]["name"] == "t0p7"
        assert read_manifest("runs/no-sweep-here") is None
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
