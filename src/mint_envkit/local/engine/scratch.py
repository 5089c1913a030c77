"""The scratch folders of checkpoint writes: named for their owner, swept at start-up.

A save writes the new checkpoint into ``.tmp-<host>-<pid>.<start>-<random>`` beside its
target (``<start>``: when the process started, in clock ticks since boot, so a later
process that gets the same pid, such as a restarted pid 1 of a container, is not
taken for the owner) and renames it into place; replacing or deleting a checkpoint first moves
the old folder into ``.old-...`` / ``.del-...`` (:data:`SCRATCH_KINDS`). A process
killed in between (``kill -9``, a power cut) leaves that folder behind: issue 33's
probe found 15.5 MB of ``.tmp-*`` after one killed save, which no restart removed.
:func:`sweep` runs when a :class:`~mint_envkit.local.engine.checkpoints.CheckpointStore`
opens a state directory (every server start) and removes the scratch folders no
live process owns:

- tagged with this host and a pid that no running process has, or that a process
  started at another time has (a live owner keeps its folders: it may be saving;
  before the start time was in the tag, a server that is pid 1 of its container
  counted itself as the owner of its dead predecessor's folders, which stayed for good);
- tagged with this host and this process's pid but no start time (a version before
  the start time: never this process's, which writes it);
- untagged (written by a version before the tag) and untouched for
  :data:`STALE_UNTAGGED_S`;
- never another host's (a state directory on a shared disk): that host sweeps its own.

An ``.old-`` folder whose checkpoint was not put back (the kill came between
the two renames of a replacing save) is renamed back into place instead: the
checkpoint is then as it was before that save. Symlinks and folders that lead
out of the state directory are never followed.

Example::

    import os
    import tempfile
    from pathlib import Path

    from mint_envkit.local.engine.scratch import scratch_prefix, sweep

    state_dir = Path(tempfile.mkdtemp()).resolve()
    kind_dir = state_dir / "run-1" / "sampler_weights"
    kind_dir.mkdir(parents=True)
    dead = kind_dir / (scratch_prefix(".tmp-").replace(f"-{os.getpid()}.", "-999999999.") + "x")
    dead.mkdir()                                  # a save whose process is gone
    mine = Path(tempfile.mkdtemp(prefix=scratch_prefix(".tmp-"), dir=kind_dir))  # a save running
    assert sweep(state_dir) == [dead] and mine.is_dir() and not dead.exists()
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import time
from pathlib import Path

logger = logging.getLogger("mint_envkit.local.engine")

SCRATCH_KINDS = (".tmp-", ".old-", ".del-")
"""The prefixes of a write's new folder, a replaced checkpoint and a deleted one."""

STALE_UNTAGGED_S = 3600.0
"""An untagged scratch folder (from a version before the owner tag) untouched this long is
removed: no save takes an hour, so no process still writes it."""

_KIND_DIRS = ("weights", "sampler_weights")
_TAGGED_RE = re.compile(
    r"\.(?:tmp|old|del)-(?P<host>[A-Za-z0-9._]+)-(?P<pid>\d+)(?:\.(?P<start>\d+))?-[A-Za-z0-9_]+"
)
_UNTAGGED_RE = re.compile(r"\.(?:tmp|old|del)-[a-z0-9_]{8}")
_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"


def start_ticks(pid: int | None = None) -> int | None:
    """When process ``pid`` (default: this one) started, in clock ticks since boot
    (``/proc/<pid>/stat``), or None where it cannot be read.

    Example::

        assert start_ticks() == start_ticks() is not None
    """
    try:
        with open(f"/proc/{'self' if pid is None else pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def scratch_prefix(kind: str) -> str:
    """The ``tempfile.mkdtemp`` prefix of a scratch folder of this process: kind, host, pid, start.

    Example::

        prefix = scratch_prefix(".tmp-")   # '.tmp-<host>-<pid>.<start ticks>-'
        assert prefix.startswith(".tmp-") and f"-{os.getpid()}." in prefix
    """
    if kind not in SCRATCH_KINDS:
        raise ValueError(f"kind must be one of {SCRATCH_KINDS}, got {kind!r}")
    start = start_ticks()
    return f"{kind}{_host()}-{os.getpid()}{'' if start is None else f'.{start}'}-"


def _alive(pid: int, start: int | None) -> bool:
    if pid == os.getpid():  # this process, or an earlier one with its pid
        return start is not None and start == start_ticks()
    if start is not None:
        ticks = start_ticks(pid)
        if ticks is not None:
            return ticks == start
    if pid <= 0:
        return False  # not a process id (0 and -1 would signal process groups)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # PermissionError: another user's process; anything else: keep it
        return True
    return True


def _newest_mtime(folder: Path) -> float:
    newest = folder.lstat().st_mtime
    for entry in folder.rglob("*"):
        try:
            newest = max(newest, entry.lstat().st_mtime)
        except OSError:
            continue
    return newest


def _stale(entry: Path, now: float) -> bool:
    tagged = _TAGGED_RE.fullmatch(entry.name)
    if tagged is not None:
        start = int(tagged["start"]) if tagged["start"] is not None else None
        return tagged["host"] == _host() and not _alive(int(tagged["pid"]), start)
    if _UNTAGGED_RE.fullmatch(entry.name) is not None:
        return now - _newest_mtime(entry) > STALE_UNTAGGED_S
    return False


def _restore(trash: Path) -> Path | None:
    """Put an ``.old-`` folder's checkpoint back where it was, when nothing took its place."""
    old = trash / "x"
    try:
        name = json.loads((old / "meta.json").read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        return None
    target = trash.parent / name
    if target.exists() or target.is_symlink() or old.is_symlink() or not old.is_dir():
        return None
    old.rename(target)
    return target


def sweep(state_dir: Path) -> list[Path]:
    """Remove the stale scratch folders under ``state_dir`` (see the module docstring).

    Returns the folders removed (an ``.old-`` one whose checkpoint was put back counts).

    Example::

        assert sweep(state_dir) == []   # nothing stale is left
    """
    if not state_dir.is_dir():
        return []
    now = time.time()
    removed: list[Path] = []
    for run in sorted(state_dir.iterdir()):
        for kind in _KIND_DIRS:
            folder = run / kind
            if run.is_symlink() or folder.is_symlink() or not folder.is_dir():
                continue
            for entry in sorted(folder.iterdir()):
                if not entry.name.startswith(SCRATCH_KINDS) or entry.is_symlink():
                    continue
                if not entry.is_dir() or not _stale(entry, now):
                    continue
                restored = _restore(entry) if entry.name.startswith(".old-") else None
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
                if restored is not None:
                    logger.warning("restored checkpoint %s from an interrupted save", restored)
    if removed:
        logger.info("removed %d stale scratch folders under %s", len(removed), state_dir)
    return removed
