"""The sweep manifest (``sweep.json``): what a root was written for, and its lock.

A root holds one grid over one base config. Running a sweep again on a root
checks that it is the same experiment before anything runs.

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(dataset_builder=builder, log_path="unused")

    from mint_envkit.sweep import Sweep
    from mint_envkit.runs.store import read_manifest

    sweep = Sweep(base=config, grid={"temperature": [0.7, 1.0]}, root="runs/sweep")
    root = Path(sweep.root)
    root.mkdir(parents=True)
    # one entry per config (Sweep.run writes its params and settings too)
    entries = [{"name": p.name, "config_sha": config_sha(p.config)} for p in sweep.points]
    with exclusive(root):  # what Sweep.run does first
        check_or_write_manifest(root, sweep.grid, sweep.base, entries)
    assert read_manifest(root)["grid"] == {"temperature": [0.7, 1.0]}
    with exclusive(root):  # again, the same experiment: nothing to do
        check_or_write_manifest(root, sweep.grid, sweep.base, entries)
    try:  # another grid in the same root
        check_or_write_manifest(root, {"temperature": [0.5]}, sweep.base, entries)
    except ConfigError as err:
        assert "holds a different grid" in str(err)
    else:
        raise AssertionError("a different grid was accepted")
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError
from mint_envkit.rl.config import Config
from mint_envkit.runs.files import write_json_atomic
from mint_envkit.runs.names import jsonable
from mint_envkit.runs.store import MANIFEST, read_manifest, utc_now

_MANIFEST_FORMAT = 1

OPERATIONAL_FIELDS = (
    "log_path",
    "base_url",
    "preflight_timeout_s",
    "local_latency_ms",
    "local_batch_invariant",
    "local_threads",
    "loggers",
)
"""Config fields that do not change what a run computes (beyond float rounding); a
resumed sweep may differ in them (an embedded server on another port, a longer
preflight, batches of one prompt length, experiment trackers added)."""


def _version() -> str:
    try:
        return importlib.metadata.version("mint-envkit")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
        return "unknown"


def _canonical(data: Any) -> str:
    text = json.dumps(jsonable(data), sort_keys=True, separators=(",", ":"), default=repr)
    # Reprs of functions and objects carry memory addresses that change per process.
    return re.sub(r" at 0x[0-9A-Fa-f]+", " at 0x", text)


def _comparable(config: Config) -> dict[str, Any]:
    data = config.public_dict()
    for field in OPERATIONAL_FIELDS:
        data.pop(field, None)
    return json.loads(_canonical(data))


def config_sha(config: Config) -> str:
    """A hash of what ``config`` computes (its public dict without the operational fields)."""
    return hashlib.sha256(_canonical(_comparable(config)).encode()).hexdigest()[:16]


def _grid_signature(grid: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
    return {key: sorted(_canonical(v) for v in values) for key, values in grid.items()}


@contextlib.contextmanager
def exclusive(root: Path) -> Iterator[None]:
    """Hold the root's lock file while a sweep runs in it (POSIX; a no-op elsewhere).

    Raises:
        ConfigError: another sweep holds the lock.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        yield
        return
    fd = os.open(root / ".sweep.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"another sweep is running in {root}; wait for it to finish, or use a new "
                "sweep root (MINT_LOG_ROOT)"
            ) from None
        yield
    finally:
        os.close(fd)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _changes(key: str, before: Any, after: Any) -> list[str]:
    """``key: old -> new`` for each differing value, nested dicts by their dotted keys
    (a builder's ``dataset_builder.model_name``), each value cut short: never a dump."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        return [
            line
            for name in sorted(set(before) | set(after))
            for line in _changes(f"{key}.{name}", before.get(name), after.get(name))
        ]
    return [f"{key}: {_short(before)} -> {_short(after)}"]


def check_or_write_manifest(
    root: Path,
    grid: Mapping[str, Sequence[Any]],
    base: Config,
    entries: Sequence[Mapping[str, Any]],
) -> None:
    """Write ``sweep.json`` for a new root; check an existing one holds the same experiment.

    Raises:
        ConfigError: the root was written for another grid or base config.
    """
    manifest = {
        "format": _MANIFEST_FORMAT,
        "grid": jsonable(dict(grid)),
        "base_config": json.loads(_canonical(base.public_dict())),
        "configs": list(entries),
        "created_at": utc_now(),
        "mint_envkit_version": _version(),
    }
    existing = read_manifest(root)
    if existing is None:
        write_json_atomic(root / MANIFEST, manifest)
        return
    where = root / MANIFEST
    if _grid_signature(existing.get("grid") or {}) != _grid_signature(manifest["grid"]):
        raise ConfigError(
            f"{where} holds a different grid ({json.dumps(existing.get('grid'))}) than this "
            f"sweep ({json.dumps(manifest['grid'])}); results of different grids are not "
            "mixed: use a new sweep root (e.g. another MINT_LOG_ROOT)"
        )
    old = {e.get("name"): e.get("config_sha") for e in existing["configs"]}
    new = {e["name"]: e["config_sha"] for e in manifest["configs"]}
    if old != new:
        before = existing.get("base_config") or {}
        after = manifest["base_config"]
        changed = [
            line
            for key in sorted(set(before) | set(after))
            if key not in OPERATIONAL_FIELDS
            for line in _changes(key, before.get(key), after.get(key))
        ]
        detail = "; ".join(changed[:6]) if changed else "the configs differ"
        detail += f"; and {len(changed) - 6} more" if len(changed) > 6 else ""
        raise ConfigError(
            f"{where} was written for a different base config ({detail}); results of "
            "different configs are not mixed: use a new sweep root (e.g. another "
            "MINT_LOG_ROOT)"
        )
