"""Run a local command with limits, asynchronously: the part both local executors share.

The command gets its own session (process group); the resource limits are set in the
child before it executes (:func:`limit_setter`); stdout and stderr are read as they
come, together capped at ``Limits.output_bytes`` (past it the whole group is killed);
past ``Limits.wall_s`` the whole group is killed. The command is reaped with
``wait4``, so the result holds the CPU seconds it and the children it reaped used:
a ``SIGKILL`` counts as the CPU limit only when that much CPU was used. Nothing here
blocks the event loop (the exit is awaited on a pidfd, or on a thread of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from mint_envkit.sandbox.executor import Limits, ProcessResult, RunStatus

_CHUNK = 1 << 16
_SIGKILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)
"""Exit codes of a run that ended by ``SIGKILL``: the command's own (``-9``) or, as a
command's status, its child's (bubblewrap reports a signal ``N`` as ``128 + N``)."""
_CPU_SHARE = 0.75
"""A ``SIGKILL`` is the CPU limit's when the CPU used is at least this share of it: the
kernel checks the limit on tick-based times, ``wait4`` reports the scheduler's exact
runtime, measured here 3 to 4 % below the limit at the kill (0.96 s of 1 s, 1.94 s of
2 s, with the machine loaded)."""
_DRAIN_S = 2.0
"""How long to wait for the pipes to close once the process group was killed."""
OPEN_FILES = 256
"""``RLIMIT_NOFILE`` of every run: what one process can hold open at once (kernel
memory per open file, epoll watches, socket buffers grow with it)."""


def limit_setter(
    limits: Limits, *, processes: bool, then: Callable[[], None] | None = None
) -> Callable[[], None]:
    """A ``preexec_fn`` that sets the rlimits of ``limits`` in the child, then calls ``then``.

    ``processes`` sets ``RLIMIT_NPROC`` too: only meaningful for a user id of the run's
    own (the count is per user, and root is exempt from it). ``then`` runs last (the
    executor joins the run's cgroup and drops to the run's user id there).
    """
    cpu = max(1, math.ceil(limits.cpu_s))
    memory = int(limits.memory_mb) << 20
    files = int(limits.file_mb) << 20
    nproc = int(limits.processes)

    def setter() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
        if processes:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if then is not None:
            then()

    return setter


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _read(
    stream: asyncio.StreamReader, into: bytearray, budget: list[int], over: asyncio.Event
) -> None:
    """Read ``stream`` to its end, keeping what fits in the shared ``budget``; past it,
    set ``over`` (the run is then killed) and discard the rest."""
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        if budget[0] > 0:
            into += chunk[: budget[0]]
        budget[0] -= len(chunk)
        if budget[0] < 0:
            over.set()


def _reaped(pid: int) -> tuple[int, float] | None:
    """``(exit code, CPU seconds)`` of ``pid`` once it ended (reaping it), else None."""
    try:
        done, status, usage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:  # pragma: no cover - only we reap it
        return -1, 0.0
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _exit(pid: int) -> asyncio.Future[tuple[int, float]]:
    """A future of ``(exit code, CPU seconds)``: a pidfd watched by the loop, or a thread."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[tuple[int, float]] = loop.create_future()
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= 0:

        def readable() -> None:
            got = _reaped(pid)
            if got is not None:
                loop.remove_reader(pidfd)
                os.close(pidfd)
                if not ended.done():
                    ended.set_result(got)

        loop.add_reader(pidfd, readable)
        return ended

    def wait() -> None:  # pragma: no cover - kernels before 5.3
        _, status, usage = os.wait4(pid, 0)
        got = os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
        loop.call_soon_threadsafe(lambda: ended.done() or ended.set_result(got))

    threading.Thread(target=wait, name=f"mint-wait-{pid}", daemon=True).start()
    return ended


async def _pipes(
    process: subprocess.Popen, stdin: bytes
) -> tuple[list[asyncio.StreamReader], list[asyncio.BaseTransport]]:
    """The readers of the command's stdout and stderr, and every pipe's transport (to
    close); ``stdin`` is written as the command reads it, then its pipe closed."""
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader] = []
    transports: list[asyncio.BaseTransport] = []
    for pipe in (process.stdout, process.stderr):
        reader = asyncio.StreamReader(limit=_CHUNK)
        transport, _ = await loop.connect_read_pipe(
            lambda r=reader: asyncio.StreamReaderProtocol(r), pipe
        )
        readers.append(reader)
        transports.append(transport)
    writer, _ = await loop.connect_write_pipe(asyncio.Protocol, process.stdin)
    writer.write(stdin)  # type: ignore[attr-defined]
    writer.close()  # after what is buffered is written, or at once if the child is gone
    transports.append(writer)
    return readers, transports


async def _watch(
    process: subprocess.Popen,
    ended: asyncio.Future[tuple[int, float]],
    stdout: tuple[asyncio.StreamReader, bytearray],
    stderr: tuple[asyncio.StreamReader, bytearray],
    limits: Limits,
    stop: Callable[[int], None] | None,
) -> tuple[RunStatus, str, int, float]:
    """Read the output until the command ends or hits a limit; kill it then; reap it."""
    budget = [int(limits.output_bytes)]
    over = asyncio.Event()
    readers = asyncio.gather(_read(*stdout, budget, over), _read(*stderr, budget, over))
    overflow = asyncio.ensure_future(over.wait())
    status: RunStatus = "finished"
    message = ""
    try:
        done, _ = await asyncio.wait(
            {ended, overflow}, timeout=limits.wall_s, return_when=asyncio.FIRST_COMPLETED
        )
        if overflow in done:
            status, message = "output_limit", f"output over {limits.output_bytes} bytes"
        elif ended not in done:
            status, message = "timeout", f"ran past the wall-clock limit of {limits.wall_s} s"
        if not ended.done() and stop is not None:
            stop(process.pid)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(ended), _DRAIN_S)
        _kill_group(process.pid)  # also ends what the run left behind in its group
        code, cpu = await ended
        process.returncode = code  # reaped here: Popen must never wait for this pid again
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(readers), _DRAIN_S)
    finally:
        for task in (readers, overflow):
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(readers, overflow, return_exceptions=True)
    return status, message, code, cpu


async def run_command(
    argv: Sequence[str],
    stdin: str,
    limits: Limits,
    *,
    env: dict[str, str],
    preexec: Callable[[], None] | None,
    cwd: str | None = None,
    stop: Callable[[int], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """Run ``argv`` with ``stdin``; kill its process group on a limit; give a :class:`ProcessResult`.

    ``stop(pid)``, when given, is called first when the run must be killed (before the
    group is), and the command gets a moment to exit by itself: bubblewrap kills the
    sandbox's first process so that it reaps it and no zombie is left to the host's init.
    A ``SIGKILL`` the host did not send is the CPU limit when the run used that much CPU;
    otherwise the result keeps the exit code, and its message says it was not a limit.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=preexec,
        pass_fds=tuple(pass_fds),
    )
    ended = _exit(process.pid)
    try:
        (stdout_reader, stderr_reader), transports = await _pipes(process, stdin.encode())
    except BaseException:  # pragma: no cover - the loop could not take the pipes
        _kill_group(process.pid)
        raise
    out, err = bytearray(), bytearray()
    try:
        status, message, code, cpu = await _watch(
            process, ended, (stdout_reader, out), (stderr_reader, err), limits, stop
        )
    except BaseException:  # cancelled: the run must not outlive its caller
        _kill_group(process.pid)
        raise
    finally:
        for transport in transports:
            transport.close()
    if status == "finished" and code in _SIGKILLED:
        limit = max(1, math.ceil(limits.cpu_s))
        if cpu >= limit * _CPU_SHARE:
            status, message = "timeout", f"killed at the CPU limit of {limits.cpu_s} s"
        else:
            message = (
                f"ended by SIGKILL (exit code {code}) after {time.monotonic() - started:.2f} s "
                f"with {cpu:.2f} s of CPU: not at the CPU limit of {limits.cpu_s} s"
            )
    return ProcessResult(
        status=status,
        exit_code=code,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        wall_s=time.monotonic() - started,
        message=message,
        cpu_s=cpu,
    )
