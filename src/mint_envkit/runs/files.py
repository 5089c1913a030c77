"""The files a run writes, and reading them back.

A run directory holds ``config.json``, ``metrics.jsonl`` (one line per
step), ``checkpoints.jsonl`` (one line per checkpoint) and
``rollouts.jsonl`` (one line per sampled episode); a run started inside a git
repository also ``git.json`` (the commit, the branch, whether the tree was clean) and
``code.diff`` (the uncommitted changes, as tinker-cookbook keeps them). Lines are appended whole
(one ``write`` of the full line, then ``fsync``), so a crash never leaves
half a line behind a finished step; a write that fails (disk full,
read-only) is cut back to the file's old end and raises an error naming the
directory.

Example::

    from mint_envkit.runs.files import RunFiles

    files = RunFiles("runs/demo")
    files.metrics()          # list of per-step dicts
    files.last_checkpoint()  # dict or None
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mint_envkit.errors import ConfigError, MintEnvkitError

if TYPE_CHECKING:
    from mint_envkit.runs.trackers import Trackers

MIN_FREE_BYTES = 64 * 1024 * 1024
"""The free space a log or state directory needs before a run starts (64 MiB).

Example::

    check_writable("runs/demo", what="the run's log directory", min_free_bytes=MIN_FREE_BYTES)
"""


def check_writable(
    directory: str | os.PathLike[str], *, what: str, min_free_bytes: int = MIN_FREE_BYTES
) -> None:
    """Check, before any work, that ``directory`` can be created, written and has free space.

    Raises:
        ConfigError: the directory cannot be created or written (read-only,
            a file in the way, no permission) or has less than
            ``min_free_bytes`` free; the message names the directory.

    Example::

        check_writable("runs/demo", what="the run's log directory (Config.log_path)")
    """
    path = Path(directory)
    probe = path / f".write-check-{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"ok\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)
        free = shutil.disk_usage(path).free
    except OSError as err:
        raise ConfigError(
            f"{what} {path} is not writable ({_reason(err)}); choose another directory "
            "or fix its permissions and free space before starting"
        ) from None
    if free < min_free_bytes:
        raise ConfigError(
            f"{what} {path} has only {free / 2**20:.1f} MiB free (needs at least "
            f"{min_free_bytes / 2**20:.0f} MiB); free some space or choose another directory"
        )


def _reason(err: OSError) -> str:
    name = errno.errorcode.get(err.errno or 0, "")
    text = err.strerror or str(err)
    return f"{name}: {text}" if name else text


def _write_failed(path: Path, err: OSError) -> MintEnvkitError:
    return MintEnvkitError(
        f"cannot write {path.name} in {path.parent} ({_reason(err)}); nothing partial was "
        "left behind. Free some space (or make the directory writable) and run again with "
        "the same log_path to resume"
    )


def json_ready(value: Any) -> Any:
    """``value`` as JSON can hold it: NaN and infinities None, keys text, tuples lists,
    anything else its ``repr``.

    Example::

        json_ready({"a": float("nan"), 1: (2, 3)})   # {'a': None, '1': [2, 3]}
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _append(path: str | os.PathLike[str], data: bytes) -> None:
    """Append whole lines: one ``write`` on an ``O_APPEND`` file, then ``fsync``.

    A last line cut off by a crash is ended first, so the new lines stay whole.
    """
    path = Path(path)
    created = not path.exists()
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as err:
        raise _write_failed(path, err) from None
    size = 0
    try:
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes")
        os.fsync(fd)
    except OSError as err:
        # Cut the file back to its old end, so no torn line stays behind.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise _write_failed(path, err) from None
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def append_jsonl(path: str | os.PathLike[str], record: Mapping[str, Any]) -> None:
    """Append one JSON line atomically (one write, then fsync).

    Non-finite floats are written as ``null`` and unknown objects as their
    ``repr``, so the line is always valid JSON.

    Example::

        files.ensure()  # the module example's run folder
        append_jsonl("runs/demo/metrics.jsonl", {"step": 0, "env/all/reward/total": 0.5})
        assert files.metrics() == [{"step": 0, "env/all/reward/total": 0.5}]
    """
    append_jsonl_lines(path, [record])


def append_jsonl_lines(path: str | os.PathLike[str], records: Sequence[Mapping[str, Any]]) -> None:
    """Append several JSON lines in one write (see :func:`append_jsonl`).

    Example::

        files.ensure()  # the module example's run folder
        append_jsonl_lines("runs/demo/rollouts.jsonl", [{"step": 0}, {"step": 0}])
        assert read_jsonl("runs/demo/rollouts.jsonl") == [{"step": 0}, {"step": 0}]
    """
    if records:
        _append(path, "".join(json.dumps(json_ready(dict(r))) + "\n" for r in records).encode())


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented JSON via a temporary file and ``os.replace``.

    Example::

        write_json_atomic("sweep.json", {"grid": {}})
        assert json.loads(Path("sweep.json").read_text()) == {"grid": {}}
    """
    text = json.dumps(json_ready(data), indent=2) + "\n"
    _replace_atomic(Path(path), text)


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` (its folder made) for a writer that needs a file
    name (a figure's ``savefig``); when the block ends it replaces ``path`` whole, or, on
    an error, is removed and ``path`` left as it was.

    Raises:
        MintEnvkitError: the directory is full or read-only (the message names it).

    Example::

        with replacing("plot.txt") as tmp:
            tmp.write_text("drawn")
        assert Path("plot.txt").read_text() == "drawn"
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _write_failed(path, err) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _replace_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file, then ``os.replace``; on failure remove it and raise."""
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file + ``os.replace``).

    Raises:
        MintEnvkitError: the directory is full or read-only (the message
            names it); no partial or empty file is left.

    Example::

        write_text_atomic("sweep_error.txt", "Traceback (most recent call last): ...")
        assert Path("sweep_error.txt").read_text().startswith("Traceback")
    """
    _replace_atomic(Path(path), text)


GIT_TIMEOUT_S = 10.0
"""How long each git call recording a run's code may take (seconds).

Example::

    GIT_TIMEOUT_S >= 1   # True
"""

_DIFF_LIMIT = 8 * 2**20  # a larger diff is cut, and says so


def code_state(where: str | os.PathLike[str] = ".") -> dict[str, Any] | None:
    """The git state of the repository ``where`` is in: ``commit``, ``branch``,
    ``dirty`` (uncommitted changes to tracked files) and ``diff`` (them, against the
    commit); None outside a repository or without git.

    Example::

        state = code_state()
        state is None or len(state["commit"]) == 40   # True
    """

    def git(*argv: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *argv],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    diff = git("diff", "HEAD", "--no-color", "--no-ext-diff") or ""
    if len(diff) > _DIFF_LIMIT:
        diff = diff[:_DIFF_LIMIT] + f"\n# cut at {_DIFF_LIMIT} characters of {len(diff)}\n"
    branch = (git("rev-parse", "--abbrev-ref", "HEAD") or "").strip() or None
    return {"commit": commit.strip(), "branch": branch, "dirty": bool(diff), "diff": diff}


def read_jsonl(
    path: str | os.PathLike[str], *, unreadable: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every JSON object line of a ``.jsonl`` file ([] when it does not exist).

    Blank lines are ignored; a line that is not a JSON object (for example the
    torn last line of a crashed writer, or one JSON cannot take: a number of 5,000
    digits, 100,000 nested brackets) is skipped, and appended to ``unreadable`` when a
    list is given.

    Example::

        bad: list[str] = []
        lines = read_jsonl("runs/sweep/kl0p0-t0p7-g2/metrics.jsonl", unreadable=bad)
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, 5,000 digits, 100,000 brackets
            obj = None
        if isinstance(obj, dict):
            lines.append(obj)
        elif unreadable is not None:
            unreadable.append(line)
    return lines


def _rewrite(path: Path, records: list[dict[str, Any]]) -> None:
    _replace_atomic(path, "".join(json.dumps(json_ready(r)) + "\n" for r in records))


class RunFiles:
    """Paths and readers for one run directory.

    Example::

        files = RunFiles("runs/demo")  # a run's log_path
        files.ensure()
        files.append_metrics({"step": 0, "reward/mean": 0.5})
        assert files.metrics() == [{"step": 0, "reward/mean": 0.5}]
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.config = self.root / "config.json"
        self.metrics_path = self.root / "metrics.jsonl"
        self.checkpoints_path = self.root / "checkpoints.jsonl"
        self.rollouts_path = self.root / "rollouts.jsonl"
        self.trackers: Trackers | None = None

    def ensure(self) -> None:
        """Create the run directory; check it is writable and has some free space.

        Raises:
            ConfigError: it cannot be created or written, or the disk is
                (nearly) full; the message names the directory.
        """
        check_writable(self.root, what="the run's log directory (Config.log_path)")

    def write_config(self, data: dict[str, Any]) -> None:
        """Write ``config.json`` (atomically)."""
        write_json_atomic(self.config, data)

    def write_code_state(self, where: str | os.PathLike[str] = ".") -> dict[str, Any] | None:
        """Write ``git.json`` and ``code.diff`` when ``where`` is inside a git repository:
        the commit the run started from and the uncommitted changes; None (and nothing
        written) outside one or without git.

        Example::

            files.write_code_state()   # None outside a git repository (files: the class's)
        """
        state = code_state(where)
        if state is None:
            return None
        diff = state.pop("diff")
        write_json_atomic(self.root / "git.json", state)
        write_text_atomic(self.root / "code.diff", diff)
        return state

    def metrics(self) -> list[dict[str, Any]]:
        """Every step's metrics."""
        return read_jsonl(self.metrics_path)

    def checkpoints(self) -> list[dict[str, Any]]:
        """Every checkpoint record, oldest first; ``"deleted": True`` on those deleted since.

        ``checkpoints.jsonl`` is append-only: a checkpoint that retention
        (``Config.keep_checkpoints``) deleted has a later line with the same
        ``state_path`` and ``"deleted": true``; it is folded into the saved
        record here.
        """
        lines = read_jsonl(self.checkpoints_path)
        gone = {line.get("state_path") for line in lines if line.get("deleted")} - {None}
        return [
            {**line, "deleted": True} if line.get("state_path") in gone else line
            for line in lines
            if not line.get("deleted")
        ]

    def last_checkpoint(self) -> dict[str, Any] | None:
        """The newest checkpoint with a state path that still exists, or None."""
        records = [c for c in self.checkpoints() if c.get("state_path") and not c.get("deleted")]
        return records[-1] if records else None

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one step's metrics; inside :meth:`tracking`, send them to the trackers too."""
        append_jsonl(self.metrics_path, record)
        if self.trackers is not None:
            self.trackers.log(record, step=int(record.get("step", 0)))

    @contextlib.contextmanager
    def tracking(
        self, loggers: Iterable[str], config: Mapping[str, Any], **options: Any
    ) -> Iterator[Trackers | None]:
        """Open the trackers ``loggers`` names (``Config.loggers``) for this run; inside,
        every :meth:`append_metrics` row goes to them too (see
        :mod:`mint_envkit.runs.trackers`). No names: nothing is opened.

        ``config`` is the run's hyperparameters; ``options`` are
        :func:`~mint_envkit.runs.trackers.open_trackers`' (``name``, ``group``). The
        trackers are closed on the way out, as failed when the body raised.

        Example::

            # not run: writes TensorBoard event files (needs the tensorboard extra)
            with files.tracking(("tensorboard",), {"learning_rate": 1e-4}):
                files.append_metrics({"step": 0, "env/all/reward/total": 0.5})
        """
        names = tuple(loggers)
        if not names:
            yield None
            return
        from mint_envkit.runs.trackers import open_trackers

        trackers = open_trackers(names, self.root, config, **options)
        self.trackers = trackers
        failed = True
        try:
            yield trackers
            failed = False
        finally:
            self.trackers = None
            trackers.close(failed=failed)

    def append_checkpoint(self, record: dict[str, Any]) -> None:
        """Append one checkpoint record."""
        append_jsonl(self.checkpoints_path, record)

    def append_rollouts(self, records: list[dict[str, Any]]) -> None:
        """Append one step's rollouts (one line each, in one write)."""
        append_jsonl_lines(self.rollouts_path, records)

    def forget_after(self, step: int) -> None:
        """Drop metrics and rollouts of steps >= ``step`` (they are redone on resume)."""
        for path in (self.metrics_path, self.rollouts_path):
            if path.is_file():
                kept = [r for r in read_jsonl(path) if int(r.get("step", -1)) < step]
                _rewrite(path, kept)
