"""What an executor is: run a Python program under :class:`Limits`, give a :class:`ProcessResult`.

An :class:`Executor` runs one Python source with some stdin and returns what happened.
It knows nothing of tests or rewards: :func:`~mint_envkit.sandbox.run_tests` builds the
program (a harness holding the model's code and the tests) and reads the result. Three
executors ship: :class:`~mint_envkit.sandbox.BubblewrapExecutor` (the local sandbox, the
default on Linux), :class:`~mint_envkit.sandbox.SandboxFusionExecutor` (a remote
SandboxFusion service) and :class:`~mint_envkit.sandbox.UnsafeLocalExecutor` (no sandbox
at all). Any object with the same ``run`` coroutine plugs in.

Example::

    from mint_envkit.sandbox import BubblewrapExecutor, Limits

    result = await BubblewrapExecutor().run("print(input())", "hi", Limits())
    assert result.status == "finished" and result.stdout == "hi\\n"
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import attrs

from mint_envkit.checks import check_number

RunStatus = Literal["finished", "timeout", "output_limit"]
"""How a run ended.

- ``"finished"``: the program exited by itself (any exit code, or killed by a signal
  other than the limits').
- ``"timeout"``: it ran past ``Limits.wall_s`` or used up ``Limits.cpu_s`` and was killed.
- ``"output_limit"``: it wrote more than ``Limits.output_bytes`` and was killed.

Example::

    status: RunStatus = "timeout"
"""


def _positive(instance: Limits, attribute: attrs.Attribute, value: object) -> None:
    check_number(
        value,
        f"Limits.{attribute.name}",
        low=0,
        low_open=True,
        why=f"e.g. Limits({attribute.name}={attribute.default!r})",
    )


@attrs.frozen
class Limits:
    """The limits one run of model-written code gets.

    Attributes:
        wall_s: wall-clock seconds before the run is killed (default 10).
        cpu_s: CPU seconds per process (``RLIMIT_CPU``; default 5).
        memory_mb: address space per process in MiB (``RLIMIT_AS``; default 1024);
            with bubblewrap's memory cgroup also the run as a whole: its processes
            and its two in-memory directories together get ``memory_mb + 2 x file_mb``.
        processes: processes and threads the run may have at once (``RLIMIT_NPROC``
            for its own user id; default 16).
        output_bytes: stdout and stderr together; past it the run is killed (default 1 MiB).
        file_mb: the size of the writable scratch directory and of ``/tmp``, and the
            largest file (``RLIMIT_FSIZE``), in MiB (default 16).

    Example::

        fast = Limits(wall_s=2, cpu_s=1, memory_mb=256)
        assert fast.processes == 16
    """

    wall_s: float = attrs.field(default=10.0, validator=_positive)
    cpu_s: float = attrs.field(default=5.0, validator=_positive)
    memory_mb: int = attrs.field(default=1024, validator=_positive)
    processes: int = attrs.field(default=16, validator=_positive)
    output_bytes: int = attrs.field(default=1 << 20, validator=_positive)
    file_mb: int = attrs.field(default=16, validator=_positive)


@attrs.frozen
class ProcessResult:
    """What one run gave: how it ended, its exit code, its output, how long it took.

    Attributes:
        status: a :data:`RunStatus`.
        exit_code: the exit code, ``-N`` for a signal ``N``; None when unknown.
        stdout, stderr: the output (decoded as UTF-8 with replacement; at most
            ``Limits.output_bytes`` together).
        wall_s: seconds from start to end, as the executor measured them.
        message: what the executor adds (the limit that was hit), or "".
        cpu_s: CPU seconds the run used (the local executors: the command and the
            children it reaped, from ``wait4``), or None when unknown.

    Example::

        result = ProcessResult(status="finished", exit_code=0, stdout="hi\\n", stderr="", wall_s=0.1)
        assert result.ok
    """

    status: RunStatus
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float
    message: str = ""
    cpu_s: float | None = None

    @property
    def ok(self) -> bool:
        """True when the run finished with exit code 0.

        Example::

            assert not ProcessResult("timeout", None, "", "", 10.0).ok
        """
        return self.status == "finished" and self.exit_code == 0


@runtime_checkable
class Executor(Protocol):
    """Runs a Python program somewhere safe: the one thing a code reward needs.

    ``run(source, stdin, limits)`` runs ``source`` (Python 3 code) with ``stdin`` on its
    standard input under ``limits`` and returns a :class:`ProcessResult`. It must never block
    the event loop, must bound how many runs it does at once, and raises
    :class:`~mint_envkit.errors.SandboxError` when it cannot run the code at all (the
    reward then fails loudly rather than scoring a broken sandbox as a wrong answer).

    Example::

        from mint_envkit import code_passes

        class MyCluster:
            name = "my-cluster"

            async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
                reply = await my_client.execute(source, stdin, timeout=limits.wall_s)
                return ProcessResult("finished", reply.code, reply.out, reply.err, reply.seconds)

        reward = code_passes(executor=MyCluster())
    """

    name: str

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        """Run ``source`` with ``stdin`` under ``limits``."""
        ...
