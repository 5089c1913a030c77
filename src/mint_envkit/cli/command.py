"""Running a subcommand that parses its options and then awaits its work: one exit-code rule.

Exit 0/1 is what the work returns; 2 is a usage error (argparse, an option below 1) or a
:class:`~mint_envkit.errors.MintEnvkitError` (its message on stderr, after the command name).

Example::

    run_command("mint-envkit eval", _parser(), argv, positive=("samples",), run=_run)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence

from mint_envkit.errors import MintEnvkitError

__all__ = ["run_command"]


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    *,
    positive: Sequence[str],
    run: Callable[[argparse.Namespace], Awaitable[int]],
) -> int:
    """Parse ``argv``, check the ``positive`` options are >= 1, ``await run(args)``.

    Example::

        run_command("mint-envkit audit", parser, ["x.py:b"], positive=("limit",), run=_run)
    """
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    for name in positive:
        if getattr(args, name) < 1:
            parser.print_usage(sys.stderr)
            print(f"{prog}: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    try:
        return asyncio.run(run(args))
    except MintEnvkitError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
