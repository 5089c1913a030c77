"""``--timeout``: a command that runs the user's code never hangs past its deadline.

``check`` and ``rescore`` import the user's env and run its rewards, tools and sandbox
runs; any of them can hang (an import that waits forever, a reward stuck in I/O) and a
thread cannot be stopped from outside. :class:`Deadline` is a watchdog thread: past
``--timeout`` seconds it prints what the command was doing to stderr and ends the
process (``os._exit``): exit code 2 while the env was still loading (an env that does
not import), 1 once it ran (a check that did not finish). What the env started
ends with the process: sandbox runs die with their parent, MCP servers' keepers watch
the interpreter.

Example::

    from mint_envkit.cli.deadline import Deadline

    with Deadline(600.0, "check") as deadline:
        deadline.phase = "loading examples/arithmetic_env.py:ArithmeticEnv"
        ...
        deadline.phase = "checking"
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from mint_envkit.errors import ConfigError

DEFAULT_TIMEOUT_S = 600.0
"""The default ``--timeout`` of ``check`` and ``rescore``: seconds, the whole command."""


def add_timeout(parser: argparse.ArgumentParser) -> None:
    """Add ``--timeout SECONDS`` to ``parser``.

    Example::

        add_timeout(argparse.ArgumentParser(prog="mint-envkit check"))
    """
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up after this many seconds, the env's import included (default "
        f"{DEFAULT_TIMEOUT_S:g}): exit 2 if the env was still loading, else 1",
    )


class Deadline:
    """A watchdog for one command: past ``seconds`` it says where the command was and exits.

    ``phase`` is what the command is doing (set it as it goes); a phase starting with
    ``"loading"`` exits with 2, any other with 1.

    Example::

        with Deadline(5.0, "rescore") as deadline:
            deadline.phase = "re-scoring"
    """

    def __init__(self, seconds: float, command: str) -> None:
        self.seconds = seconds
        self.command = command
        self.phase = "starting"
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        code = 2 if self.phase.startswith("loading") else 1
        try:
            sys.stdout.flush()
            print(
                f"mint-envkit {self.command}: gave up after {self.seconds:g} s (--timeout) "
                f"while {self.phase}: something in the env did not return (an import, a "
                "reward, a tool or a sandbox run that hangs); run it with a larger "
                "--timeout, or find the hang with python -X faulthandler",
                file=sys.stderr,
                flush=True,
            )
        finally:
            os._exit(code)


def check_timeout(value: float, parser: argparse.ArgumentParser) -> None:
    """``parser.error`` unless ``--timeout`` is a positive, finite number.

    Example::

        check_timeout(600.0, argparse.ArgumentParser())
    """
    if not (0 < value < float("inf")):
        parser.error(f"--timeout must be a positive number of seconds, got {value}")


def load_env_target(spec: str, env_args: Mapping[str, Any] | None = None) -> Any:
    """:func:`~mint_envkit.evaluation.spec.load_target`, with a ``sys.exit`` in the env's
    import made a :class:`~mint_envkit.errors.ConfigError` (exit 2) that says so;
    ``env_args`` are ``--env-args``, the keyword arguments of its ``load_environment``.

    Example::

        load_env_target("examples/arithmetic_env.py:ArithmeticEnv")   # the env class
    """
    from mint_envkit.evaluation.spec import load_target

    try:
        return load_target(spec, env_args=env_args)
    except SystemExit as err:
        raise ConfigError(
            f"loading {spec} called sys.exit({err.code!r}) (at import, or in its "
            "load_environment); an env's module must not exit the process: fix its code"
        ) from None
