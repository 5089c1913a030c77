"""Run a local command with limits, asynchronously: the part both local executors share.

The command gets its own session (process group); the resource limits are set in the
child before it executes; stdout and stderr are read as they come, together capped at
``Limits.output_bytes`` (past it the whole group is killed); past ``Limits.wall_s`` the
whole group is killed. Nothing here blocks the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import resource
import signal
import time
from collections.abc import Callable, Sequence

from mint_envkit.sandbox.executor import Limits, ProcessResult, RunStatus

_CHUNK = 1 << 16
_CPU_KILLED = (-signal.SIGKILL, 128 + signal.SIGKILL, -signal.SIGXCPU, 128 + signal.SIGXCPU)
"""Exit codes of a run the kernel killed at ``RLIMIT_CPU`` (soft = hard: SIGKILL; as a
command's status, bubblewrap reports a signal ``N`` as ``128 + N``). Nothing else here
sends SIGKILL to a run that was not already marked timed out or over its output."""
_DRAIN_S = 2.0
"""How long to wait for the pipes to close once the process group was killed."""


def limit_setter(limits: Limits, *, processes: bool) -> Callable[[], None]:
    """A ``preexec_fn`` that sets the rlimits of ``limits`` in the child.

    ``processes`` sets ``RLIMIT_NPROC`` too: only meaningful for a user id of the run's
    own (the count is per user, and root is exempt from it).
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
        if processes:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

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


async def run_command(
    argv: Sequence[str],
    stdin: str,
    limits: Limits,
    *,
    env: dict[str, str],
    preexec: Callable[[], None] | None,
    user: int | None = None,
    cwd: str | None = None,
    stop: Callable[[int], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` with ``stdin``; kill its process group on a limit; give a :class:`ProcessResult`.

    ``stop(pid)``, when given, is called first when the run must be killed (before the
    group is), and the command gets a moment to exit by itself: bubblewrap kills the
    sandbox's first process so that it reaps it and no zombie is left to the host's init.
    """
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=preexec,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )
    stdin_pipe, stdout_pipe, stderr_pipe = process.stdin, process.stdout, process.stderr
    if stdin_pipe is None or stdout_pipe is None or stderr_pipe is None:  # pragma: no cover
        raise RuntimeError("asyncio gave no pipes for PIPE")
    out, err = bytearray(), bytearray()
    budget = [int(limits.output_bytes)]
    over = asyncio.Event()

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin_pipe.write(stdin.encode())
            await stdin_pipe.drain()
        stdin_pipe.close()

    readers = asyncio.gather(
        _read(stdout_pipe, out, budget, over), _read(stderr_pipe, err, budget, over)
    )
    feeder = asyncio.ensure_future(feed())
    waiter = asyncio.ensure_future(process.wait())
    overflow = asyncio.ensure_future(over.wait())
    status: RunStatus = "finished"
    message = ""
    done, _ = await asyncio.wait(
        {waiter, overflow}, timeout=limits.wall_s, return_when=asyncio.FIRST_COMPLETED
    )
    if overflow in done:
        status, message = "output_limit", f"output over {limits.output_bytes} bytes"
    elif waiter not in done:
        status, message = "timeout", f"ran past the wall-clock limit of {limits.wall_s} s"
    if process.returncode is None and stop is not None:
        stop(process.pid)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), _DRAIN_S)
    _kill_group(process.pid)  # also ends what the run left behind in its group
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(waiter), _DRAIN_S)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(readers), _DRAIN_S)
    for task in (readers, feeder, waiter, overflow):
        task.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.gather(readers, feeder, waiter, overflow, return_exceptions=True)
    code = process.returncode
    if status == "finished" and code in _CPU_KILLED:
        status, message = "timeout", f"killed at the CPU limit of {limits.cpu_s} s"
    return ProcessResult(
        status=status,
        exit_code=code,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        wall_s=time.monotonic() - started,
        message=message,
    )
