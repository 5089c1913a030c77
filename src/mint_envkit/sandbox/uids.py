"""User ids for sandbox runs, leased under a lock that every process on the machine shares.

As root, each bubblewrap run gets a user id of its own, so ``RLIMIT_NPROC`` (a count per
user, which root is exempt from) counts that run alone, and what is left under the id
after the run can be killed. Two trainers on one machine must never hold the same id
at once: each id is a lock file ``<lock_dir>/<uid>.lock``, and a run holds its id by
an exclusive ``flock`` on that file (:func:`lease_uid`), so within one process and
across processes at most one run holds an id. The kernel drops the lock when the
holder dies, so a crashed trainer leaves no stale lock.

The directory is made ``0700`` and must belong to this process's user, and each lock
file is ``0600``: only that user (root, who leases ids) can open a lock file, so
another local user cannot ``flock`` them all and block every sandbox run (before, the
files were ``0644`` in a ``0755`` directory: anyone could open one read-only and lock
it). A directory that belongs to another user, or that others may write, is refused
with :class:`~mint_envkit.errors.SandboxError` rather than trusted.

An id whose lock is free but under which processes run (something that does not take
these locks uses it) is skipped and left alone; when every id of the range is held or
busy, :func:`lease_uid` raises :class:`~mint_envkit.errors.SandboxError`: a collision is
an error, never a run that another process's cleanup may kill. The cleanup of a run
(:meth:`UidLease.release`) kills what is left under its id while it still holds the
lock, so it only ever touches its own run.

Example::

    from mint_envkit.sandbox.uids import lease_uid

    lease = lease_uid(62500, 8, lock_dir="/tmp/mint-envkit-doc-uids")
    assert 62500 <= lease.uid < 62508
    await lease.release()
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import stat
import threading
from pathlib import Path

from mint_envkit.errors import SandboxError

DEFAULT_LOCK_DIR = (
    "/run/lock/mint-envkit-uids" if Path("/run/lock").is_dir() else "/tmp/mint-envkit-uids"
)
"""Where the lock files live unless an executor is given another directory: every
process that leases sandbox ids on this machine must use the same one.

Example::

    assert DEFAULT_LOCK_DIR.endswith("mint-envkit-uids")
"""
_CLEAR_ROUNDS = 400
_CLEAR_PAUSE_S = 0.005
_MAKE_DIR = threading.Lock()


def live_pids(uid: int) -> list[int]:
    """The processes of ``uid`` still running (zombies hold nothing and are left out).

    Example::

        assert live_pids(os.getuid())  # this process at least
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:  # /proc/PID is owned by the process's user
                continue
            fields = dict(
                line.split(":", 1) for line in (entry / "status").read_text().splitlines()
            )
        except (OSError, ValueError):
            continue
        uids = fields.get("Uid", "").split()
        if uids and int(uids[0]) == uid and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry.name))
    return found


class UidLease:
    """One user id held by one run: the lock file's descriptor, held until :meth:`release`.

    Example::

        lease = lease_uid(62510, 4, lock_dir="/tmp/mint-envkit-doc-uids")
        assert lease.held
        await lease.release()
        assert not lease.held
    """

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd = fd

    @property
    def held(self) -> bool:
        """Whether the lease still holds its lock.

        Example::

            assert lease_uid(62520, 1, lock_dir="/tmp/mint-envkit-doc-uids").held
        """
        return self._fd >= 0

    async def release(self) -> None:
        """Kill what is left under the id (the run's own leftovers: the lock is still
        held), then drop the lock.

        bwrap returns as soon as the program exits, while the kernel is still ending the
        rest of its pid namespace, hence the rounds.

        Example::

            lease = lease_uid(62530, 1, lock_dir="/tmp/mint-envkit-doc-uids")
            await lease.release()
        """
        if self._fd < 0:
            return
        try:
            for _ in range(_CLEAR_ROUNDS):
                pids = live_pids(self.uid)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                await asyncio.sleep(_CLEAR_PAUSE_S)
        finally:
            fd, self._fd = self._fd, -1
            os.close(fd)  # closing the descriptor drops the flock


def _lock_dir(lock_dir: str) -> Path:
    """The lock directory, made ``0700``; refused unless it is this user's alone."""
    path = Path(lock_dir)
    with _MAKE_DIR:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            found = os.lstat(path)
            ours = stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid()
            if ours and stat.S_IMODE(found.st_mode) & 0o077:  # an older kit made it 0755
                os.chmod(path, 0o700)
        except OSError as err:
            raise SandboxError(
                f"cannot make the sandbox uid lock directory {lock_dir!r}: {err}; pass "
                "uid_lock_dir= a directory this process can write, the same for every "
                "trainer on this machine"
            ) from err
    if not ours:
        what = f"owned by uid {found.st_uid}" if stat.S_ISDIR(found.st_mode) else "no directory"
        raise SandboxError(
            f"the sandbox uid lock directory {lock_dir!r} is not a directory of this user "
            f"(uid {os.geteuid()}; it is {what}): "
            "another user could hold its locks and block every sandbox run; remove it, or "
            "pass uid_lock_dir= a directory of this user's own"
        )
    return path


def _open_lock(path: Path) -> int:
    """The lock file's descriptor, the file ``0600`` (an older kit made them ``0644``)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as err:
        raise SandboxError(f"cannot open the sandbox uid lock {path}: {err}") from err
    try:
        found = os.fstat(fd)
        if found.st_uid == os.geteuid() and stat.S_IMODE(found.st_mode) & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        pass
    return fd


def lease_uid(base: int, count: int, *, lock_dir: str = DEFAULT_LOCK_DIR) -> UidLease:
    """Lease the first id of ``base`` .. ``base + count - 1`` that nobody holds or uses.

    Raises :class:`~mint_envkit.errors.SandboxError` when every one is held (by this
    or another process) or has processes running under it without its lock.

    Example::

        first = lease_uid(62540, 2, lock_dir="/tmp/mint-envkit-doc-uids")
        second = lease_uid(62540, 2, lock_dir="/tmp/mint-envkit-doc-uids")
        assert {first.uid, second.uid} == {62540, 62541}
        await first.release()
        await second.release()
    """
    directory = _lock_dir(lock_dir)
    busy: list[int] = []
    for uid in range(base, base + count):
        fd = _open_lock(directory / f"{uid}.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if live_pids(uid):  # used by something that does not take these locks: not ours
            busy.append(uid)
            os.close(fd)
            continue
        return UidLease(uid, fd)
    used = f"; {len(busy)} run processes without the lock ({busy[:5]}...)" if busy else ""
    raise SandboxError(
        f"no free sandbox user id in {base}..{base + count - 1} (lock directory "
        f"{lock_dir}): every one is held by a run of this or another process{used}; lower "
        "max_concurrency, give this process another uid_base, or raise uid_count"
    )
