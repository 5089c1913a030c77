"""A checkpoint store read against the runs that made it: log directories, prune, disk use.

The checkpoints are the SDK's listing (``tinker_path``, ``checkpoint_type``, ``time``,
``size_bytes``); a run's log directory is the one whose ``checkpoints.jsonl`` names it
(:func:`log_dirs`). :func:`prune_choice` picks what a prune deletes, :func:`usage` sums
the store run by run; ``mint-envkit checkpoints`` prints them.

Example::

    from mint_envkit.runs.checkpoints import parse_age, parse_size, size_text

    parse_size("2GB"), parse_age("12h").total_seconds()   # (2147483648, 43200.0)
    size_text(1536)   # '1.5 KB'
"""

from __future__ import annotations

import datetime as _dt
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mint_envkit.errors import MintEnvkitError
from mint_envkit.runs.files import read_jsonl

_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
_AGES = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def size_text(n: int | None) -> str:
    """A byte count as people read it (powers of 1024); ``?`` when unknown.

    Example::

        size_text(512), size_text(3 * 1024**3), size_text(None)   # ('512 B', '3.0 GB', '?')
    """
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def run_id(tinker_path: str) -> str:
    """The training run a ``tinker://`` path belongs to.

    Example::

        run_id("tinker://abc/weights/step-0010")   # 'abc'
    """
    return tinker_path.removeprefix("tinker://").split("/", 1)[0]


def log_dirs(root: Path) -> dict[str, Path]:
    """Run id -> the log directory whose ``checkpoints.jsonl`` names it, under ``root``.

    Example::

        log_dirs(Path("runs"))   # {'29468538-...': PosixPath('runs/demo')}
    """
    found: dict[str, Path] = {}
    for record_file in sorted(root.rglob("checkpoints.jsonl")) if root.is_dir() else []:
        for record in read_jsonl(record_file):
            for key in ("state_path", "sampler_path"):
                if isinstance(record.get(key), str):
                    found.setdefault(run_id(record[key]), record_file.parent)
    return found


def checkpoint_record(c: Any, logs: dict[str, Path]) -> dict[str, Any]:
    """One listed checkpoint as a JSON record, with its run's log directory (or None).

    Example::

        # not run: `c` is a checkpoint the SDK listed
        checkpoint_record(c, log_dirs(Path("runs")))["log_dir"]   # 'runs/demo'
    """
    log_dir = logs.get(run_id(c.tinker_path))
    return {
        "tinker_path": c.tinker_path,
        "checkpoint_type": c.checkpoint_type,
        "time": c.time.isoformat() if c.time else None,
        "size_bytes": c.size_bytes,
        "log_dir": None if log_dir is None else str(log_dir),
    }


def parse_size(text: str) -> int:
    """``2GB``, ``500MB``, ``1.5 GB`` or a number of bytes, as bytes (powers of 1024).

    Example::

        parse_size("2GB"), parse_size("512")   # (2147483648, 512)
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?b)?\s*", text, re.I)
    if not found:
        raise MintEnvkitError(f"--max-size {text!r} is not a size; write it as 2GB, 500MB or 1024")
    return int(float(found.group(1)) * _UNITS[(found.group(2) or "b").lower()])


def parse_age(text: str) -> _dt.timedelta:
    """``7d``, ``12h``, ``30m`` or ``2w`` as a time span.

    Example::

        parse_age("12h")   # datetime.timedelta(seconds=43200)
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*", text, re.I)
    if not found:
        raise MintEnvkitError(
            f"--older-than {text!r} is not an age; write it as 30m, 12h, 7d or 2w"
        )
    return _dt.timedelta(seconds=float(found.group(1)) * _AGES[found.group(2).lower()])


def saved_at(c: Any) -> _dt.datetime:
    """When a listed checkpoint was saved, in UTC (the earliest time when unknown).

    Example::

        # not run: `c` is a checkpoint the SDK listed
        saved_at(c).isoformat()[:19]   # '2026-12-07T10:00:00'
    """
    when = c.time or _dt.datetime.min.replace(tzinfo=_dt.UTC)
    return when if when.tzinfo else when.replace(tzinfo=_dt.UTC)


def orphaned_runs(checkpoints: Sequence[Any], logs: dict[str, Path]) -> set[str]:
    """The runs of ``checkpoints`` whose log directory (in ``logs``) is gone.

    Example::

        orphaned_runs([], {})   # set()
    """
    return {run_id(c.tinker_path) for c in checkpoints} - set(logs)


def prune_choice(
    checkpoints: Sequence[Any],
    *,
    runs: Sequence[str] = (),
    older_than: _dt.timedelta | None = None,
    max_size: int | None = None,
    orphaned: set[str] | None = None,
    now: _dt.datetime | None = None,
) -> list[Any]:
    """The checkpoints a prune deletes: of the given ``runs`` (all without), older than
    ``older_than``, of runs in ``orphaned``; then with ``max_size``, the oldest of those
    until the whole store (``checkpoints``) is within it.

    Example::

        # not run: `listed` is the SDK's listing of the store
        prune_choice(listed, older_than=datetime.timedelta(days=7))   # a week old and more
    """
    now = now or _dt.datetime.now(_dt.UTC)
    chosen = [
        c
        for c in checkpoints
        if (not runs or run_id(c.tinker_path) in runs)
        and (older_than is None or saved_at(c) < now - older_than)
        and (orphaned is None or run_id(c.tinker_path) in orphaned)
    ]
    if max_size is None:
        return chosen
    total = sum(c.size_bytes or 0 for c in checkpoints)
    out = []
    for c in sorted(chosen, key=saved_at):
        if total <= max_size:
            break
        out.append(c)
        total -= c.size_bytes or 0
    return out


def usage(
    checkpoints: Sequence[Any], logs: dict[str, Path], *, store: str, state_dir: Path | None
) -> dict[str, Any]:
    """The store's disk use, run by run (the biggest first): checkpoints, bytes, the
    newest save and the log directory; the free space of ``state_dir``'s disk when given.

    Example::

        usage([], {}, store="http://127.0.0.1:8765", state_dir=None)["size_bytes"]   # 0
    """
    runs: dict[str, dict[str, Any]] = {}
    for c in checkpoints:
        run = runs.setdefault(
            run_id(c.tinker_path), {"checkpoints": 0, "size_bytes": 0, "newest": None}
        )
        run["checkpoints"] += 1
        run["size_bytes"] += c.size_bytes or 0
        when = saved_at(c).isoformat() if c.time else None
        run["newest"] = max(filter(None, (run["newest"], when)), default=None)
    for name, run in runs.items():
        run["log_dir"] = None if name not in logs else str(logs[name])
    out: dict[str, Any] = {
        "store": store,
        "checkpoints": len(checkpoints),
        "size_bytes": sum(r["size_bytes"] for r in runs.values()),
        "runs": dict(sorted(runs.items(), key=lambda kv: -kv[1]["size_bytes"])),
    }
    if state_dir is not None and Path(state_dir).is_dir():
        out["disk_free_bytes"] = shutil.disk_usage(state_dir).free
    return out
