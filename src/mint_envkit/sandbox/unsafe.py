"""No sandbox at all: run model-written code as a plain subprocess of this machine.

Only for a machine where nothing is at stake (a throwaway container) or code you trust.
The code runs with your user id and can read, write and delete your files, reach the
network and start processes that outlive the run. What it gets: an empty environment
(no host variables), a fresh temporary working directory, the rlimits of
:class:`~mint_envkit.sandbox.Limits` except the process limit, the output cap, and the
wall-clock kill of its process group. Its name says it: the kit never picks it for you.
The verdict is still made outside the code's process (:func:`~mint_envkit.sandbox.run_tests`),
but that guarantees nothing here: the code runs as your user and can read the trainer's
memory, where the expected values are.

Example::

    from mint_envkit.sandbox import UnsafeLocalExecutor, code_passes

    reward = code_passes(executor=UnsafeLocalExecutor())  # no isolation: trusted code only
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import weakref

from mint_envkit.checks import check_integer
from mint_envkit.sandbox._process import limit_setter, run_command
from mint_envkit.sandbox.executor import Limits, ProcessResult


class UnsafeLocalExecutor:
    """Runs code with no isolation (rlimits and a timeout only): never for untrusted code.

    Args:
        max_concurrency: runs at once (default the number of CPUs).
        python: the interpreter (default this one, ``sys.executable``).

    Example::

        executor = UnsafeLocalExecutor(max_concurrency=2)
        result = await executor.run("print(1 + 1)", "", Limits())
        assert result.stdout == "2\\n"
    """

    name = "unsafe-local"

    def __init__(self, *, max_concurrency: int | None = None, python: str | None = None) -> None:
        concurrency = (os.cpu_count() or 1) if max_concurrency is None else max_concurrency
        check_integer(concurrency, "UnsafeLocalExecutor(max_concurrency=...)")
        self.max_concurrency = concurrency
        self.python = python or sys.executable
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        """Run ``source`` as a subprocess in a temporary directory.

        Example::

            result = await UnsafeLocalExecutor().run("import time; time.sleep(9)", "",
                                                     Limits(wall_s=1))
            assert result.status == "timeout"
        """
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.setdefault(loop, asyncio.Semaphore(self.max_concurrency))
        async with semaphore:
            with tempfile.TemporaryDirectory(prefix="mint-unsafe-") as scratch:
                env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8"}
                argv = [self.python, "-I", "-B", "-c", "import sys; exec(sys.stdin.readline())"]
                return await run_command(
                    argv, f"exec({source!r})\n{stdin}", limits, env=env,
                    preexec=limit_setter(limits, processes=False), cwd=scratch,
                )  # fmt: skip
