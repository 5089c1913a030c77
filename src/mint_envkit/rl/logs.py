"""The files a run writes, and reading them back.

A run directory holds ``config.json``, ``metrics.jsonl`` (one line per
step), ``checkpoints.jsonl`` (one line per checkpoint) and
``rollouts.jsonl`` (one line per sampled episode). Lines are appended whole
(one ``write`` of the full line, then ``fsync``), so a crash never leaves
half a line behind a finished step.

Example::

    from mint_envkit.rl.logs import RunFiles

    files = RunFiles("runs/demo")
    files.metrics()          # list of per-step dicts
    files.last_checkpoint()  # dict or None
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["RunFiles", "append_jsonl", "read_jsonl"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _ends_mid_line(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one JSON line atomically (one write, then fsync).

    Example::

        append_jsonl("runs/demo/metrics.jsonl", {"step": 0, "env/all/reward/total": 0.5})
    """
    line = (json.dumps(_jsonable(record), sort_keys=False) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if _ends_mid_line(fd):
            line = b"\n" + line  # end a line a crash cut off, so this record stays whole
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete JSON line of a file ([] when it does not exist).

    A last line cut off by a crash (no newline, not valid JSON) is skipped.
    """
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _rewrite(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as handle:
        for record in records:
            handle.write(json.dumps(_jsonable(record)) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class RunFiles:
    """Paths and readers for one run directory.

    Example::

        files = RunFiles(config.log_path)
        files.ensure()
        files.append_metrics({"step": 0, ...})
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.config = self.root / "config.json"
        self.metrics_path = self.root / "metrics.jsonl"
        self.checkpoints_path = self.root / "checkpoints.jsonl"
        self.rollouts_path = self.root / "rollouts.jsonl"

    def ensure(self) -> None:
        """Create the run directory."""
        self.root.mkdir(parents=True, exist_ok=True)

    def write_config(self, data: dict[str, Any]) -> None:
        """Write ``config.json`` (atomically)."""
        tmp = self.config.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(_jsonable(data), indent=2) + "\n")
        os.replace(tmp, self.config)

    def metrics(self) -> list[dict[str, Any]]:
        """Every step's metrics."""
        return read_jsonl(self.metrics_path)

    def checkpoints(self) -> list[dict[str, Any]]:
        """Every checkpoint record."""
        return read_jsonl(self.checkpoints_path)

    def last_checkpoint(self) -> dict[str, Any] | None:
        """The newest checkpoint record with a state path, or None."""
        records = [c for c in self.checkpoints() if c.get("state_path")]
        return records[-1] if records else None

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one step's metrics."""
        append_jsonl(self.metrics_path, record)

    def append_checkpoint(self, record: dict[str, Any]) -> None:
        """Append one checkpoint record."""
        append_jsonl(self.checkpoints_path, record)

    def append_rollouts(self, records: list[dict[str, Any]]) -> None:
        """Append one step's rollouts (one line each, in one write)."""
        if not records:
            return
        data = "".join(json.dumps(_jsonable(r)) + "\n" for r in records).encode()
        fd = os.open(self.rollouts_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if _ends_mid_line(fd):
                data = b"\n" + data
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def forget_after(self, step: int) -> None:
        """Drop metrics and rollouts of steps >= ``step`` (they are redone on resume)."""
        for path in (self.metrics_path, self.rollouts_path):
            if path.is_file():
                kept = [r for r in read_jsonl(path) if int(r.get("step", -1)) < step]
                _rewrite(path, kept)
