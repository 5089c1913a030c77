"""The local sandbox: bubblewrap (``bwrap``) namespaces plus resource limits.

Each run gets new namespaces (no network, its own process ids, its own ``/proc``), a
read-only root holding only the interpreter (``/usr`` and the Python prefix), a
writable ``/work`` (the scratch directory, also the working directory) and ``/tmp``
(both small in-memory filesystems, gone with the run), an empty environment, and the
rlimits of :class:`~mint_envkit.sandbox.Limits`. Run as root, each concurrent run also
gets a user id of its own (from ``uid_base`` up) so ``RLIMIT_NPROC`` holds (root is exempt
from it), and a fork bomb stops at ``Limits.processes``. The pid namespace means that
killing the run kills everything it started.

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
import os
import shutil
import signal
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from mint_envkit.checks import check_integer
from mint_envkit.errors import SandboxError
from mint_envkit.sandbox._process import limit_setter, run_command
from mint_envkit.sandbox.executor import Limits, ProcessResult

_PROBE_TIMEOUT_S = 10.0
_CLEAR_ROUNDS = 100
_SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8"}


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


def _live_pids(uid: int) -> list[int]:
    """The processes of ``uid`` still running (zombies hold nothing and are left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(
                line.split(":", 1) for line in (entry / "status").read_text().splitlines()
            )
        except (OSError, ValueError):
            continue
        uids = fields.get("Uid", "").split()
        if uids and int(uids[0]) == uid and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry.name))
    return found


async def _clear_uid(uid: int) -> None:
    """Before a run's user id is reused: kill what is left under it (bwrap returns as soon
    as the program exits, while the kernel is still ending the rest of its pid namespace)."""
    for _ in range(_CLEAR_ROUNDS):
        pids = _live_pids(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.02)


_UIDS_IN_USE: set[int] = set()
"""The user ids of this process's runs now (every executor, every event loop)."""
_UIDS_LOCK = threading.Lock()


def _take_uid(base: int) -> int:
    with _UIDS_LOCK:
        uid = base
        while uid in _UIDS_IN_USE:
            uid += 1
        _UIDS_IN_USE.add(uid)
        return uid


def _system_python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


class BubblewrapExecutor:
    """Runs code in a bubblewrap sandbox on this machine: the default executor on Linux.

    Args:
        max_concurrency: runs at once (an asyncio semaphore per event loop); default
            the number of CPUs.
        python: the interpreter inside the sandbox; default the system's
            ``/usr/bin/python3`` (its standard library only; the kit's venv is not
            visible). Its prefix is bound read-only.
        bwrap: the bubblewrap binary; default ``bwrap`` on ``PATH``.
        uid_base: when run as root, each run gets the lowest user id from ``uid_base``
            up (default 60000) that no other run of this process holds, whatever its
            executor, so the process limit counts that run alone. Two processes on one
            machine need bases far apart (``max_concurrency`` ids each at most).
        extra_ro_binds: more host paths to bind read-only at the same place (a
            package directory the code may import); none by default.

    :meth:`available` says whether bubblewrap works here (it is probed once).

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
        extra_ro_binds: tuple[str, ...] = (),
    ) -> None:
        concurrency = (os.cpu_count() or 1) if max_concurrency is None else max_concurrency
        check_integer(concurrency, "BubblewrapExecutor(max_concurrency=...)")
        self.max_concurrency = concurrency
        self.python = python or _system_python()
        self.bwrap = bwrap or shutil.which("bwrap") or ""
        self.uid_base = uid_base
        self.extra_ro_binds = tuple(extra_ro_binds)
        self._probe: str | None = None
        self._probed = False
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    def _uid(self) -> bool:
        return os.geteuid() == 0

    def argv(self, limits: Limits) -> list[str]:
        """The ``bwrap`` command line of one run (the program comes on stdin's first part).

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
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/work"]
        argv += ["--remount-ro", "/", "--chdir", "/work"]
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
        argv = [*self.argv(Limits())[:-5], self.python, "-I", "-c", "print('ok')"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, env=dict(_SANDBOX_ENV)
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            self._probe = f"bubblewrap at {self.bwrap} failed to start: {err}"
            return self._probe
        if done.stdout.strip() != b"ok":
            stderr = done.stderr.decode(errors="replace").strip()[:300]
            self._probe = (
                f"bubblewrap at {self.bwrap} cannot make a sandbox here ({stderr!r}); user "
                "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1)"
            )
        return self._probe

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

        Raises :class:`~mint_envkit.errors.SandboxError` when bubblewrap cannot run here.

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
            user = _take_uid(self.uid_base) if self._uid() else None
            try:
                preexec = limit_setter(limits, processes=user is not None)
                program = f"exec({source!r})\n{stdin}"
                return await run_command(
                    self.argv(limits), program, limits, env=dict(_SANDBOX_ENV),
                    preexec=preexec, user=user, cwd="/", stop=_kill_children,
                )  # fmt: skip
            finally:
                if user is not None:
                    await _clear_uid(user)
                    _UIDS_IN_USE.discard(user)
