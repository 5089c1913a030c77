"""The local sandbox: bubblewrap (``bwrap``) namespaces plus resource limits.

Each run gets new namespaces (no network, its own process ids, its own ``/proc``), a
read-only root holding only the interpreter (``/usr`` and the Python prefix), a
minimal read-only ``/dev`` (no writable ``/dev/shm``), a writable ``/work`` (the scratch
directory, also the working directory) and ``/tmp`` (both in-memory, ``Limits.file_mb``
each, gone with the run), an empty environment, and the rlimits of
:class:`~mint_envkit.sandbox.Limits`. Its memory is bounded as a whole: where this
process has a writable memory cgroup, the run gets one of its own, limited to
``memory_mb + 2 x file_mb`` (:mod:`~mint_envkit.sandbox.cgroups`); elsewhere a seccomp
filter refuses the calls whose memory no rlimit counts (:mod:`~mint_envkit.sandbox.seccomp`).
Run as root, each run also gets a user id of its own, leased under a lock file that
every process on the machine shares (:mod:`~mint_envkit.sandbox.uids`), so
``RLIMIT_NPROC`` holds (root is exempt from it), a fork bomb stops at
``Limits.processes``, and the cleanup of one run never touches another's. The pid
namespace means that killing the run kills everything it started.

Example::

    from mint_envkit.sandbox import BubblewrapExecutor, Limits

    executor = BubblewrapExecutor(max_concurrency=4)
    result = await executor.run("import socket; socket.create_connection(('1.1.1.1', 53))",
                                "", Limits(wall_s=5))
    assert result.exit_code != 0  # no network in the sandbox
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

import attrs

from mint_envkit.checks import check_integer
from mint_envkit.errors import SandboxError
from mint_envkit.sandbox._process import limit_setter, run_command
from mint_envkit.sandbox.cgroups import RunCgroup, memory_parent
from mint_envkit.sandbox.executor import Limits, ProcessResult
from mint_envkit.sandbox.mounts import mounter, scratch_root
from mint_envkit.sandbox.seccomp import deny_filter
from mint_envkit.sandbox.uids import DEFAULT_LOCK_DIR, UidLease, lease_uid

_PROBE_TIMEOUT_S = 10.0
WRITABLE_DIRS = ("/work", "/tmp")
"""The run's writable directories: in-memory, ``Limits.file_mb`` each.

Example::

    assert WRITABLE_DIRS == ("/work", "/tmp")
"""
_SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8"}
logger = logging.getLogger("mint_envkit.sandbox")


def _kill_children(pid: int) -> None:
    """SIGKILL the children of ``pid`` (bwrap's first process in the sandbox: the whole
    pid namespace dies with it, and bwrap reaps it)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.kill(int(child), signal.SIGKILL)


def _drop_to(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _system_python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def run_memory_bytes(limits: Limits) -> int:
    """What one run may pin in all, in bytes: ``memory_mb + file_mb`` per writable directory.

    The limit of the run's memory cgroup.

    Example::

        assert run_memory_bytes(Limits(memory_mb=256, file_mb=16)) == (256 + 2 * 16) << 20
    """
    return (int(limits.memory_mb) + int(limits.file_mb) * len(WRITABLE_DIRS)) << 20


class BubblewrapExecutor:
    """Runs code in a bubblewrap sandbox on this machine: the default executor on Linux.

    Args:
        max_concurrency: runs at once (an asyncio semaphore per event loop); default
            the number of CPUs.
        python: the interpreter inside the sandbox; default the system's
            ``/usr/bin/python3`` (its standard library only; the kit's venv is not
            visible). Its prefix is bound read-only.
        bwrap: the bubblewrap binary; default ``bwrap`` on ``PATH``.
        uid_base, uid_count: when run as root, each run leases a user id of its own
            from ``uid_base`` .. ``uid_base + uid_count - 1`` (default 60000, 1000
            ids), the first one no run of any process holds (a ``flock`` on
            ``<uid_lock_dir>/<uid>.lock``) and no other process uses, so the process
            limit counts that run alone and its cleanup touches nothing else. None
            free: :class:`~mint_envkit.errors.SandboxError`.
        uid_lock_dir: the directory of those locks; every process on the machine must
            use the same one (default ``/run/lock/mint-envkit-uids``).
        memory_cgroup: ``"auto"`` (default): a memory cgroup per run under this
            process's own (cgroup v1) where it is writable, else the seccomp filter;
            a path: make the run cgroups there; ``False``: the seccomp filter.
        extra_ro_binds: more host paths to bind read-only at the same place (a
            package directory the code may import); none by default.

    :meth:`available` says whether bubblewrap works here (it is probed once), and
    :attr:`memory_bound` how a run's memory is bounded (``"cgroup"`` or ``"seccomp"``).

    Example::

        from mint_envkit import code_passes

        executor = BubblewrapExecutor(max_concurrency=2)
        if not executor.available():
            raise SystemExit(executor.unavailable_reason())
        reward = code_passes(executor=executor)
    """

    name = "bubblewrap"

    def __init__(
        self,
        *,
        max_concurrency: int | None = None,
        python: str | None = None,
        bwrap: str | None = None,
        uid_base: int = 60000,
        uid_count: int = 1000,
        uid_lock_dir: str = DEFAULT_LOCK_DIR,
        memory_cgroup: str | bool = "auto",
        extra_ro_binds: tuple[str, ...] = (),
    ) -> None:
        concurrency = (os.cpu_count() or 1) if max_concurrency is None else max_concurrency
        check_integer(concurrency, "BubblewrapExecutor(max_concurrency=...)")
        check_integer(uid_count, "BubblewrapExecutor(uid_count=...)")
        self.max_concurrency = concurrency
        self.python = python or _system_python()
        self.bwrap = bwrap or shutil.which("bwrap") or ""
        self.uid_base = uid_base
        self.uid_count = uid_count
        self.uid_lock_dir = uid_lock_dir
        self._cgroup_parent = _cgroup_parent(memory_cgroup)
        self.extra_ro_binds = tuple(extra_ro_binds)
        self._probe: str | None = None
        self._probed = False
        self._scratch = "kit"
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    @property
    def memory_bound(self) -> str:
        """``"cgroup"`` (a memory cgroup per run) or ``"seccomp"`` (the filter, no cgroup).

        Example::

            BubblewrapExecutor().memory_bound  # 'cgroup' as root with cgroup v1 memory
        """
        return "cgroup" if self._cgroup_parent is not None else "seccomp"

    @property
    def scratch(self) -> str:
        """How ``/work`` and ``/tmp`` are made: ``"kit"`` (``tmpfs`` mounted by the
        executor with ``nr_inodes``: inodes and xattrs bounded) or ``"bwrap"``
        (bubblewrap's ``--tmpfs``: sized, inodes at the kernel's default; where this
        interpreter may not make user namespaces). Known once :meth:`available` ran.

        Example::

            BubblewrapExecutor().scratch  # 'kit'
        """
        return self._scratch

    def _uid(self) -> bool:
        return os.geteuid() == 0

    def argv(self, limits: Limits, seccomp_fd: int | None = None) -> list[str]:
        """The ``bwrap`` command line of one run (the program comes on stdin's first part).

        ``seccomp_fd``: a descriptor bubblewrap reads the seccomp filter from.

        Example::

            BubblewrapExecutor().argv(Limits())[:3]  # ['/usr/bin/bwrap', '--unshare-all', ...]
        """
        size = str(int(limits.file_mb) << 20)
        argv = [self.bwrap, "--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session"]
        argv += ["--clearenv", *(x for k, v in _SANDBOX_ENV.items() for x in ("--setenv", k, v))]
        argv += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            path = Path(top)
            if path.is_symlink():
                argv += ["--symlink", os.readlink(top), top]
            elif path.is_dir():
                argv += ["--ro-bind", top, top]
        prefix = str(Path(self.python).resolve().parents[1])
        for bind in (prefix, *self.extra_ro_binds):
            if not bind.startswith("/usr/"):
                argv += ["--ro-bind", bind, bind]
        argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        for directory in WRITABLE_DIRS:
            if self._scratch == "kit":  # mounted by the run's first process (mounts.py)
                argv += ["--bind", str(scratch_root() / directory.strip("/")), directory]
            else:
                argv += ["--size", size, "--tmpfs", directory]
        argv += ["--remount-ro", "/", "--chdir", "/work"]
        if seccomp_fd is not None:
            argv += ["--seccomp", str(seccomp_fd)]
        return [*argv, self.python, "-I", "-B", "-c", "import sys; exec(sys.stdin.readline())"]

    def unavailable_reason(self) -> str | None:
        """Why bubblewrap cannot run here, or None when it can (probed once).

        Example::

            BubblewrapExecutor(bwrap="/nope").unavailable_reason()
            # 'bubblewrap (bwrap) is not installed ...'
        """
        if self._probed:
            return self._probe
        self._probed = True
        if not self.bwrap or not os.access(self.bwrap, os.X_OK):
            self._probe = (
                "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: "
                "apt-get install bubblewrap)"
            )
            return self._probe
        try:
            done = self._try()
            if done.stdout.strip() != b"ok" and self._scratch == "kit":
                self._fall_back(done.stderr.decode(errors="replace").strip()[-300:])
                done = self._try()
        except SandboxError as err:
            self._probe = str(err)
            return self._probe
        except (OSError, subprocess.SubprocessError) as err:
            self._probe = f"bubblewrap at {self.bwrap} failed to start: {err}"
            return self._probe
        if done.stdout.strip() != b"ok":
            stderr = done.stderr.decode(errors="replace").strip()[:300]
            self._probe = (
                f"bubblewrap at {self.bwrap} cannot make a sandbox here ({stderr!r}); user "
                "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1)"
            )
        return self._probe

    def _fall_back(self, why: str) -> None:
        """Use bubblewrap's ``--tmpfs`` from now on: this interpreter may not mount."""
        self._scratch = "bwrap"
        logger.warning(
            "mint-envkit: the sandbox cannot mount its own /work and /tmp here (%s); it "
            "uses bubblewrap's tmpfs, whose inodes only the kernel's default bounds "
            "(docs/code.md, 'Memory')",
            why or "no reason given",
        )

    def _try(self) -> subprocess.CompletedProcess:
        """Run ``print('ok')`` in a sandbox made the way :attr:`scratch` says."""
        uid, gid = os.geteuid(), os.getegid()
        step = (
            mounter(scratch_root(), Limits().file_mb, uid, gid) if self._scratch == "kit" else None
        )
        if step is not None:
            try:  # the mounts alone first: a refusal there is a reason to fall back
                subprocess.run(["true"], preexec_fn=step, timeout=_PROBE_TIMEOUT_S, check=True)
            except (OSError, subprocess.SubprocessError) as err:
                self._fall_back(f"{type(err).__name__}: {err}")
                step = None
        with _seccomp(self._cgroup_parent is None) as fd:
            argv = [*self.argv(Limits(), fd)[:-5], self.python, "-I", "-c", "print('ok')"]
            return subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, env=dict(_SANDBOX_ENV),
                pass_fds=() if fd is None else (fd,), preexec_fn=step,
            )  # fmt: skip

    def available(self) -> bool:
        """Can bubblewrap make a sandbox on this machine?

        Example::

            BubblewrapExecutor().available()  # True on Linux with bubblewrap installed
        """
        return self.unavailable_reason() is None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return semaphore

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        """Run ``source`` in a fresh sandbox; at most ``max_concurrency`` at once.

        Raises :class:`~mint_envkit.errors.SandboxError` when bubblewrap cannot run here,
        when no sandbox user id is free, and when the run was killed from outside (its
        bubblewrap ended by a ``SIGKILL`` the executor did not send, not at a limit):
        never scored as the code's failure.

        Example::

            result = await BubblewrapExecutor().run("print(2 + 3)", "", Limits())
            assert result.stdout == "5\\n"
        """
        reason = await asyncio.to_thread(self.unavailable_reason)
        if reason is not None:
            raise SandboxError(
                f"cannot run model-written code: {reason}; or pass another executor "
                "(SandboxFusionExecutor(url) for a remote sandbox)"
            )
        async with self._semaphore():
            run = _Run(limits, kit_mounts=self._scratch == "kit")
            try:
                if self._uid():
                    run.lease = await asyncio.to_thread(
                        lease_uid, self.uid_base, self.uid_count, lock_dir=self.uid_lock_dir
                    )
                if self._cgroup_parent is not None:
                    run.cgroup = await asyncio.to_thread(  # the first one sweeps dead leases
                        RunCgroup.create, self._cgroup_parent, run_memory_bytes(limits)
                    )
                with _seccomp(run.cgroup is None) as fd:
                    result = await run_command(
                        self.argv(limits, fd), f"exec({source!r})\n{stdin}", limits,
                        env=dict(_SANDBOX_ENV), preexec=run.preexec(), cwd="/",
                        stop=_kill_children, pass_fds=() if fd is None else (fd,),
                    )  # fmt: skip
                run.oom_kills = run.cgroup.oom_kills() if run.cgroup is not None else 0
            except (OSError, subprocess.SubprocessError) as err:
                raise SandboxError(f"bubblewrap at {self.bwrap} could not start: {err}") from err
            finally:
                await run.close()
            return run.judge(result)


def _cgroup_parent(memory_cgroup: str | bool) -> Path | None:
    if memory_cgroup is False:
        return None
    if memory_cgroup == "auto":
        return memory_parent()
    if not isinstance(memory_cgroup, str) or memory_cgroup is True:
        raise SandboxError(
            f"BubblewrapExecutor(memory_cgroup={memory_cgroup!r}) takes 'auto', False or "
            "the path of a writable cgroup-v1 memory cgroup"
        )
    path = Path(memory_cgroup)
    if not (path / "memory.limit_in_bytes").exists() or not os.access(path, os.W_OK):
        raise SandboxError(
            f"BubblewrapExecutor(memory_cgroup={memory_cgroup!r}) is not a writable cgroup-v1 "
            "memory cgroup (no memory.limit_in_bytes there); pass 'auto' or False"
        )
    return path


@contextlib.contextmanager
def _seccomp(wanted: bool):  # a context manager of an fd
    """A pipe's read end holding the seccomp filter (None when not ``wanted``)."""
    if not wanted:
        yield None
        return
    program = deny_filter()
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: fits in the pipe
        os.close(write)
        yield read
    finally:
        os.close(read)


@attrs.define
class _Run:
    """One run's lease and cgroup, and how its end reads."""

    limits: Limits
    kit_mounts: bool = True
    lease: UidLease | None = None
    cgroup: RunCgroup | None = None
    oom_kills: int = 0

    def preexec(self) -> Callable[[], None]:
        lease, join = self.lease, self.cgroup.joiner() if self.cgroup is not None else None
        uid = lease.uid if lease is not None else os.geteuid()
        gid = lease.uid if lease is not None else os.getegid()
        mount = mounter(scratch_root(), self.limits.file_mb, uid, gid) if self.kit_mounts else None

        def then() -> None:
            if join is not None:
                join()
            if mount is not None:
                mount()
            if lease is not None:
                _drop_to(lease.uid)

        return limit_setter(self.limits, processes=lease is not None, then=then)

    async def close(self) -> None:
        try:
            if self.cgroup is not None:
                await self.cgroup.close()
        finally:
            if self.lease is not None:
                await self.lease.release()

    def judge(self, result: ProcessResult) -> ProcessResult:
        if result.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL) and self.oom_kills:
            limit = run_memory_bytes(self.limits) >> 20
            return attrs.evolve(
                result, status="finished",
                message=f"killed: the run went over its memory ({limit} MiB in all: "
                f"memory_mb {self.limits.memory_mb} + file_mb {self.limits.file_mb} x "
                f"{len(WRITABLE_DIRS)})",
            )  # fmt: skip
        if result.status == "finished" and result.exit_code == -signal.SIGKILL:
            raise SandboxError(
                f"the sandbox was killed from outside ({result.message}): something on this "
                "machine sent SIGKILL to its bubblewrap; check that every trainer leases "
                f"sandbox user ids under the same uid_lock_dir ({DEFAULT_LOCK_DIR})"
            )
        return result
