"""Code rewards run in a real sandbox: model-written Python against tests.

:class:`CodeEnv` asks for a function; :func:`code_passes` reads the reply's
`````python`` block (:data:`python_code`), runs it in a sandbox where each test's
computed side is evaluated (:func:`run_tests`), compares the values outside the sandbox
with the tests' expected values (which never enter it), and scores ``pass`` / ``fail``
/ ``error`` / ``timeout`` with each test's result. Where the code runs is an :class:`Executor`: the local
:class:`BubblewrapExecutor` (the default on Linux: no network, a read-only filesystem
but a small scratch directory, limits on CPU, wall time, memory, processes and output),
a remote :class:`SandboxFusionExecutor`, or :class:`UnsafeLocalExecutor` for code you
trust. With no sandbox available the kit refuses to run code
(:class:`~mint_envkit.errors.SandboxError`). See docs/code.md.

Example::

    from mint_envkit.sandbox import Limits, code_passes, run_tests

    run = await run_tests("def add(a, b):\\n    return a + b", ["assert add(2, 2) == 4"],
                          limits=Limits(wall_s=5))
    assert run.outcome == "pass"
"""

from mint_envkit.sandbox.bubblewrap import BubblewrapExecutor
from mint_envkit.sandbox.env import CodeEnv
from mint_envkit.sandbox.executor import Executor, Limits, ProcessResult
from mint_envkit.sandbox.fusion import SandboxFusionExecutor
from mint_envkit.sandbox.harness import CodeRun, TestResult
from mint_envkit.sandbox.reward import code_passes, default_executor, python_code, run_tests
from mint_envkit.sandbox.unsafe import UnsafeLocalExecutor

__all__ = [
    "BubblewrapExecutor",
    "CodeEnv",
    "CodeRun",
    "Executor",
    "Limits",
    "ProcessResult",
    "SandboxFusionExecutor",
    "TestResult",
    "UnsafeLocalExecutor",
    "code_passes",
    "default_executor",
    "python_code",
    "run_tests",
]
