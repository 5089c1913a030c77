"""Running a command that awaits its work: one exit-code rule.

Exit 0/1 is what the work returns; 2 is a usage error (an option below 1), a
:class:`~mint_envkit.errors.MintEnvkitError` or an SDK error answered with a status (its
message on stderr, after the command name, without a traceback).

Example::

    run_command("mint-envkit eval", parser, args, positive=("samples",), run=_run)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence

from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    positive: Sequence[str],
    run: Callable[[argparse.Namespace], Awaitable[int]],
) -> int:
    """Check the ``positive`` options of ``args`` are >= 1, then ``await run(args)``.

    An ENV_SPEC in ``args.target`` is imported first, before the event loop starts, so
    a module that runs something at import (``ScriptedPolicy(...).run_sync(builder)``,
    which starts an event loop of its own) loads as it does under ``python file.py``;
    the command's own :func:`~mint_envkit.evaluation.spec.load_target` then gets the
    module already imported.

    Example::

        run_command("mint-envkit audit", parser, args, positive=("limit",), run=_run)
    """
    for name in positive:
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.print_usage(sys.stderr)
            print(f"{prog}: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    try:
        target = getattr(args, "target", None)
        if isinstance(target, str) and target:
            load_target(target)  # before the loop: the module (or package) may start one
        return asyncio.run(run(args))
    except MintEnvkitError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        message = sdk_error_message(err)
        if message is None:
            raise
        print(f"{prog}: {message}", file=sys.stderr)
        return 2


def sdk_error_message(err: BaseException) -> str | None:
    """The server's own message in an SDK error answered with a status (a 404 naming a
    model the backend does not serve, a refused key), else None: a bug keeps its traceback.

    Example::

        sdk_error_message(ValueError("x"))   # None
    """
    status = getattr(err, "status_code", None)
    if not isinstance(status, int) or not type(err).__module__.startswith(("tinker", "mint")):
        return None
    body = getattr(err, "body", None)
    detail = body.get("error") if isinstance(body, dict) else None
    return f"{detail} (HTTP {status})" if isinstance(detail, str) else str(err)
