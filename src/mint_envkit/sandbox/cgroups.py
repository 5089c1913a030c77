"""A memory cgroup per sandbox run: everything the run's processes pin, counted under one limit.

``RLIMIT_AS`` bounds what one process maps; it does not count what the kernel holds for
a run outside its mappings: files in its in-memory ``/work`` and ``/tmp``, a ``memfd``
filled with ``write()``, System V shared memory after ``shmdt``, socket and pipe
buffers, page tables. A memory cgroup counts all of them (they are charged to the
cgroup of the process that made them), so each run gets one of its own, limited to
``memory_mb + file_mb x 2`` (its processes together, and its two writable in-memory
directories); past it the kernel's OOM killer ends the run, and :meth:`RunCgroup.oom_kills`
says so. The run's first process joins its cgroup before it starts bubblewrap, so
nothing the run does escapes it, and the cgroup is also how the run is cleaned up:
every process in it is killed, then it is removed.

This machine's kind (cgroup v1, the ``memory`` hierarchy mounted, root) is what
:func:`memory_parent` finds: the directory of this process's own memory cgroup, when
it is writable; the run cgroups are made under it (``mint-envkit-<pid>-<n>``), so two
processes never share one. cgroup v2 is not used (see docs/code.md).

Example::

    from mint_envkit.sandbox.cgroups import RunCgroup, memory_parent

    parent = memory_parent()  # None without a writable memory cgroup
    if parent is not None:
        cgroup = RunCgroup.create(parent, 64 << 20)
        assert cgroup.limit_bytes() == 64 << 20 and cgroup.oom_kills() == 0
        await cgroup.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from pathlib import Path

from mint_envkit.errors import SandboxError

_COUNTER = itertools.count()
_CLOSE_ROUNDS = 1000
_CLOSE_PAUSE_S = 0.005


def _mounts() -> list[tuple[str, str, str, str]]:
    """``(root, mount point, fstype, super options)`` of each mount of this process."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3:
                found.append((fields[3], fields[4], tail[0], tail[2]))
    return found


def memory_parent() -> Path | None:
    """The directory of this process's cgroup-v1 memory cgroup, when it can hold run cgroups.

    Example::

        parent = memory_parent()
        assert parent is None or (parent / "memory.limit_in_bytes").exists()
    """
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    own = next(
        (line.split(":", 2)[2] for line in lines if "memory" in line.split(":", 2)[1].split(",")),
        None,
    )
    if own is None:
        return None
    for root, point, fstype, options in _mounts():
        if fstype != "cgroup" or "memory" not in options.split(","):
            continue
        if own != root and not own.startswith(root.rstrip("/") + "/"):
            continue
        parent = Path(point) / own[len(root.rstrip("/")) :].lstrip("/")
        usable = (parent / "memory.limit_in_bytes").exists() and os.access(parent, os.W_OK)
        return parent if usable else None
    return None


class RunCgroup:
    """The memory cgroup of one run: made, joined by the run's first process, closed after.

    Example::

        # not run: needs a writable memory cgroup (memory_parent())
        cgroup = RunCgroup.create(memory_parent(), 288 << 20)
        join = cgroup.joiner()  # called in the child, before it starts bubblewrap
        ...
        killed_for_memory = cgroup.oom_kills() > 0
        await cgroup.close()
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, parent: Path, limit_bytes: int) -> RunCgroup:
        """A new cgroup under ``parent`` limited to ``limit_bytes`` (memory and swap).

        Example::

            # not run: needs a writable memory cgroup
            cgroup = RunCgroup.create(memory_parent(), 64 << 20)
        """
        path = parent / f"mint-envkit-{os.getpid()}-{next(_COUNTER)}"
        try:
            path.mkdir()
            (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(limit_bytes))
        except OSError as err:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise SandboxError(
                f"cannot make the run's memory cgroup {path}: {err}; pass "
                "memory_cgroup=False to use the seccomp filter instead"
            ) from err
        return cls(path)

    def joiner(self):  # a preexec callable
        """A callable for the child (``preexec_fn``) that moves it into this cgroup.

        Example::

            # not run: needs a writable memory cgroup
            RunCgroup.create(memory_parent(), 64 << 20).joiner()  # a preexec step
        """
        procs = str(self.path / "cgroup.procs")

        def join() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)

        return join

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""

    def limit_bytes(self) -> int:
        """The memory limit, in bytes, as the kernel holds it.

        Example::

            # not run: needs a writable memory cgroup
            assert RunCgroup.create(memory_parent(), 64 << 20).limit_bytes() == 64 << 20
        """
        return int(self._read("memory.limit_in_bytes") or 0)

    def peak_bytes(self) -> int:
        """The most memory the run held at once (``memory.max_usage_in_bytes``).

        Example::

            # not run: needs a writable memory cgroup
            RunCgroup.create(memory_parent(), 64 << 20).peak_bytes()  # a few MB after a run
        """
        return int(self._read("memory.max_usage_in_bytes") or 0)

    def oom_kills(self) -> int:
        """How many of the run's processes the OOM killer ended (``memory.oom_control``).

        Example::

            # not run: needs a writable memory cgroup
            assert RunCgroup.create(memory_parent(), 64 << 20).oom_kills() == 0
        """
        for line in self._read("memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids(self) -> list[int]:
        """The processes in the cgroup now.

        Example::

            # not run: needs a writable memory cgroup
            assert RunCgroup.create(memory_parent(), 64 << 20).pids() == []
        """
        return [int(pid) for pid in self._read("cgroup.procs").split()]

    async def close(self) -> None:
        """Kill every process in the cgroup (only this run's are there), then remove it.

        Example::

            # not run: needs a writable memory cgroup
            await RunCgroup.create(memory_parent(), 64 << 20).close()
        """
        for _ in range(_CLOSE_ROUNDS):
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # EBUSY while a killed process is still exiting
                await asyncio.sleep(_CLOSE_PAUSE_S)
        raise SandboxError(f"the run's memory cgroup {self.path} did not empty; remove it by hand")
