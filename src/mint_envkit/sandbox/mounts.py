"""The run's writable directories: in-memory filesystems of the kit's own, bounded in bytes and inodes.

A sandbox run writes to ``/work`` and ``/tmp``, both ``tmpfs`` (memory). bubblewrap's
own ``--tmpfs`` takes a size (``--size``, the file data) but no inode count, so the
kernel's default holds: half the machine's pages (3 million inodes here). Inodes, their
names and user extended attributes (``setxattr``: tmpfs counts them against
``nr_inodes`` x 1 KiB) are memory that the size does not count: issue 46's probe pinned
1,600 MB of xattrs and 150 MB of empty files in seccomp mode (no memory cgroup to count
them). So the executor mounts both directories itself, with ``size=file_mb`` and
``nr_inodes`` = :func:`inode_limit` (64 per MiB of ``file_mb``, at least 256): the
run's first process (the child that then starts bubblewrap) enters a mount namespace of
its own (as root), or a user and mount namespace of its own (not as root, where it
maps its own user id only), mounts the two ``tmpfs`` over two empty directories of
this user (``<tmp>/mint-envkit-mounts-<uid>``, :func:`scratch_root`), and bubblewrap binds them to ``/work`` and
``/tmp``. The mounts exist only in that namespace: the host never sees them, and they
are gone with the run.

Where the interpreter may not make those namespaces (user namespaces refused to it,
while bubblewrap has its own permission: Ubuntu 24.04's AppArmor rule), the executor
falls back to bubblewrap's ``--tmpfs`` and says so once (:attr:`BubblewrapExecutor.scratch
<mint_envkit.sandbox.BubblewrapExecutor.scratch>` is ``"bwrap"``); docs/code.md states
the bound of each way.

Example::

    from mint_envkit.sandbox.mounts import inode_limit, mount_options

    assert inode_limit(16) == 1024 and inode_limit(1) == 256
    assert mount_options(16, 1000, 1000).startswith("size=16777216,nr_inodes=1024,")
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

INODES_PER_MB = 64
"""Inodes of one writable directory per MiB of ``Limits.file_mb`` (one per 16 KiB)."""
MIN_INODES = 256
"""The fewest inodes of one writable directory, whatever ``file_mb``."""
NAMES = ("work", "tmp")
"""The two directories under :func:`scratch_root`, mounted at ``/work`` and ``/tmp``."""

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
_ROOT: list[Path] = []
_ROOT_LOCK = threading.Lock()


def inode_limit(file_mb: float) -> int:
    """The ``nr_inodes`` of one writable directory for ``Limits.file_mb``.

    Example::

        assert inode_limit(16) == 1024
    """
    return max(MIN_INODES, int(file_mb) * INODES_PER_MB)


def mount_options(file_mb: float, uid: int, gid: int) -> str:
    """The ``tmpfs`` options of one writable directory: its size, inodes, mode and owner.

    Example::

        assert "nr_inodes=256" in mount_options(1, 60000, 60000)
    """
    size = int(file_mb) << 20
    return f"size={size},nr_inodes={inode_limit(file_mb)},mode=0700,uid={uid},gid={gid}"


def scratch_root() -> Path:
    """The directory holding the two empty mount points: ``<tmp>/mint-envkit-mounts-<uid>``.

    The run's mounts go over ``<root>/work`` and ``<root>/tmp`` in the run's own
    mount namespace, so every run of every process of this user shares these two empty
    directories, and a killed process leaves nothing behind. A path that is not this
    user's own directory (another user made it first) is not used: a fresh one is made
    instead, and removed at exit.

    Example::

        root = scratch_root()
        assert (root / "work").is_dir() and (root / "tmp").is_dir()
    """
    with _ROOT_LOCK:
        if _ROOT and all((_ROOT[0] / name).is_dir() for name in NAMES):
            return _ROOT[0]
        root = Path(tempfile.gettempdir()) / f"mint-envkit-mounts-{os.geteuid()}"
        try:
            _own_dir(root, 0o711)  # the run's user id (as root: a leased one) passes through
            for name in NAMES:
                _own_dir(root / name, 0o700)
        except OSError:
            root = Path(tempfile.mkdtemp(prefix="mint-envkit-mounts-"))
            root.chmod(0o711)
            for name in NAMES:
                (root / name).mkdir(mode=0o700)
            atexit.register(_remove, root)
        _ROOT[:] = [root]
        return root


def _own_dir(path: Path, mode: int) -> None:
    """Make ``path`` (or take it) as a directory of this user's alone; OSError otherwise."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=mode)
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        raise OSError(f"{path} is not a directory of uid {os.geteuid()}")
    if stat.S_IMODE(found.st_mode) != mode:
        os.chmod(path, mode)


def _remove(root: Path) -> None:
    """Remove a private mount-point directory at exit (the mounts were never in this namespace)."""
    for name in NAMES:
        with contextlib.suppress(OSError):
            (root / name).rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mounter(root: Path, file_mb: float, uid: int, gid: int) -> Callable[[], None]:
    """A step for the run's first process (before bubblewrap starts): mount its two directories.

    As root it enters a new mount namespace; as another user, a new user namespace
    mapping only its own ids (bubblewrap, started after, still runs as that user and
    makes its own namespaces), and a mount namespace in it. Then ``root/work`` and
    ``root/tmp`` get a ``tmpfs`` each with :func:`mount_options`. ``uid`` / ``gid``:
    who owns them (the run's user). Raises ``OSError`` when a step fails.

    Example::

        # not run: changes the namespaces of the process that calls the step
        step = mounter(scratch_root(), 16, 60000, 60000)
    """
    libc = _libc()  # loaded here, in the parent: the child only calls into it
    unshare, mount = libc.unshare, libc.mount
    options = mount_options(file_mb, uid, gid).encode()
    targets = [str(root / name).encode() for name in NAMES]
    as_root = os.geteuid() == 0

    def check(result: int, what: str) -> None:
        if result != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"{what}: {os.strerror(number)}")

    def write(path: str, text: str) -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def step() -> None:
        if as_root:
            check(unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        else:
            own_uid, own_gid = os.geteuid(), os.getegid()
            check(unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare(CLONE_NEWUSER|CLONE_NEWNS)")
            write("/proc/self/setgroups", "deny")
            write("/proc/self/uid_map", f"{own_uid} {own_uid} 1")
            write("/proc/self/gid_map", f"{own_gid} {own_gid} 1")
        check(mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
        for target in targets:
            check(mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, options), "mount tmpfs")

    return step
