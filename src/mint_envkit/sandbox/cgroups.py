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
it is writable. The run cgroups are made under a *lease* of this process
(:class:`CgroupLease`): a cgroup ``mint-envkit-<16 random hex>`` under that parent whose
directory this process holds an exclusive ``flock`` on for as long as it lives; its
runs are ``<lease>/run-<n>``. The kernel drops the lock when the process dies, however
it dies, so a lease nobody holds is a dead process's: :func:`sweep`, run when a process
takes its lease, kills what is left in such a lease's runs and removes them and it
(before, a trainer killed with ``kill -9`` left its ``mint-envkit-<pid>-<n>`` cgroups
for good). The name is random, not the pid, so two trainers that are both pid 1 of
their pid namespaces, or a restarted one, never meet (before, the second one's runs
failed: the cgroup existed). cgroup v2 is not used (see docs/code.md).

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
import atexit
import contextlib
import fcntl
import itertools
import logging
import os
import re
import secrets
import signal
import threading
import time
from pathlib import Path

from mint_envkit.errors import SandboxError

_COUNTER = itertools.count()
_CLOSE_ROUNDS = 1000
_CLOSE_PAUSE_S = 0.005
_LEASE_RE = re.compile(r"mint-envkit-[0-9a-f]{16}")
_LEASES: dict[Path, CgroupLease] = {}
_LEASES_LOCK = threading.Lock()
logger = logging.getLogger("mint_envkit.sandbox")


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


def _kill_all(cgroup: Path) -> None:
    """SIGKILL every process in ``cgroup`` and wait (bounded) until it can be removed; remove it."""
    for _ in range(_CLOSE_ROUNDS):
        try:
            pids = [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while a killed process is still exiting
            time.sleep(_CLOSE_PAUSE_S)
    raise SandboxError(f"the memory cgroup {cgroup} did not empty; remove it by hand")


def sweep(parent: Path) -> list[Path]:
    """Remove the leases under ``parent`` that no live process holds, with their runs.

    A lease whose ``flock`` can be taken belongs to a process that is gone (the kernel
    dropped its lock): every process left in its runs is killed, then the runs and the
    lease are removed. Leases of live processes, and cgroups of other names (an older
    kit's ``mint-envkit-<pid>-<n>``, anything else), are left alone. Returns the leases
    removed.

    Example::

        # not run: needs a writable memory cgroup
        sweep(memory_parent())  # [] when no trainer died holding runs
    """
    removed: list[Path] = []
    try:
        entries = sorted(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not _LEASE_RE.fullmatch(entry.name):  # this process's own is locked too
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process lives
            os.close(fd)
            continue
        try:
            for run in sorted(p for p in entry.iterdir() if p.is_dir()):
                _kill_all(run)
            _kill_all(entry)
            removed.append(entry)
        except (OSError, SandboxError) as err:
            logger.warning("could not remove the dead sandbox lease %s: %s", entry, err)
        finally:
            os.close(fd)
    if removed:
        logger.info("removed %d sandbox leases of dead processes under %s", len(removed), parent)
    return removed


class CgroupLease:
    """This process's cgroup under a memory parent: its runs' cgroups go inside, held by a ``flock``.

    :meth:`take` sweeps the dead leases under ``parent`` first (:func:`sweep`), then
    makes ``mint-envkit-<16 random hex>``, locks its directory and keeps the lock for
    the life of the process (the directory is removed at exit when its runs are gone;
    if the process is killed, the next process's sweep removes it).

    Example::

        # not run: needs a writable memory cgroup
        lease = CgroupLease.take(memory_parent())
        assert lease.path.name.startswith("mint-envkit-")
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def take(cls, parent: Path) -> CgroupLease:
        """This process's lease under ``parent`` (taken once; swept and made on first use).

        Example::

            # not run: needs a writable memory cgroup
            assert CgroupLease.take(memory_parent()) is CgroupLease.take(memory_parent())
        """
        with _LEASES_LOCK:
            held = _LEASES.get(parent)
            if held is not None and held._fd >= 0 and held.path.is_dir():
                return held
            sweep(parent)
            for _ in range(100):
                path = parent / f"mint-envkit-{secrets.token_hex(8)}"
                try:
                    path.mkdir()
                    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except FileExistsError:
                    continue
                except FileNotFoundError:
                    if not parent.is_dir():
                        raise SandboxError(
                            f"cannot make this process's memory cgroup under {parent}: it "
                            "does not exist; pass memory_cgroup=False to use the seccomp "
                            "filter instead"
                        ) from None
                    continue  # another process's sweep took it between mkdir and open
                except OSError as err:
                    raise SandboxError(
                        f"cannot make this process's memory cgroup {path}: {err}; pass "
                        "memory_cgroup=False to use the seccomp filter instead"
                    ) from err
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if os.fstat(fd).st_ino == os.stat(path).st_ino:  # not swept meanwhile
                        lease = _LEASES[parent] = cls(path, fd)
                        atexit.register(lease.release)
                        return lease
                except OSError:
                    pass
                os.close(fd)  # another process's sweep took it between mkdir and flock
            raise SandboxError(f"could not take a memory cgroup lease under {parent}")

    @classmethod
    def held(cls, parent: Path) -> CgroupLease | None:
        """The lease this process holds under ``parent``, if it took one.

        Example::

            # not run: needs a writable memory cgroup
            assert CgroupLease.held(memory_parent()) is None  # before the first run
        """
        with _LEASES_LOCK:
            return _LEASES.get(parent)

    def release(self) -> None:
        """Remove the lease's empty run cgroups and the lease, and drop the lock (at exit).

        Example::

            # not run: needs a writable memory cgroup
            CgroupLease.take(memory_parent()).release()
        """
        with _LEASES_LOCK:
            if self._fd < 0:
                return
            with contextlib.suppress(OSError):
                for run in self.path.iterdir():
                    if run.is_dir():
                        run.rmdir()
                self.path.rmdir()
            fd, self._fd = self._fd, -1
            os.close(fd)
            if _LEASES.get(self.path.parent) is self:
                del _LEASES[self.path.parent]


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
        """A new cgroup in this process's lease under ``parent``, limited to ``limit_bytes``
        (memory and swap).

        Example::

            # not run: needs a writable memory cgroup
            cgroup = RunCgroup.create(memory_parent(), 64 << 20)
        """
        path = CgroupLease.take(parent).path / f"run-{next(_COUNTER)}"
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
