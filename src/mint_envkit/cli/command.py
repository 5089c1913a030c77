"""What every command shares: the exit codes, the error rule, ``--env-args``, running async work.

One convention holds in every command (:data:`EXIT_CODES`, printed by
``mint-envkit --help``): 0 ok; 1 findings or failed checks; 2 a usage or setup error (a
bad flag, an env that does not import, a missing file: one line on stderr, naming the
flag or the file and line); 3 an internal error (the tool itself failed: its traceback,
and how to report it). ``--json`` prints the command's result as JSON on stdout;
``--out`` writes files. :func:`mint_envkit.cli.main` applies the error rule once, for
every command; a command returns 0 or 1 (or 2 for a usage error it finds itself).

Example::

    run_command("mint-envkit eval", parser, args, positive=("samples",), run=_run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mint_envkit.evaluation.spec import load_target

EXIT_CODES = {
    0: "ok",
    1: "findings or failed checks (an exploit, a change, a failed row)",
    2: "a usage or setup error (a bad flag, an env that does not import, a missing file)",
    3: "an internal error (the tool itself failed; please report it with its traceback)",
}
"""The exit codes of every ``mint-envkit`` command.

Example::

    EXIT_CODES[2]   # 'a usage or setup error (...)'
"""


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON ({err}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"a JSON object ({{...}}), got {text!r}")
    return value


def add_env_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--env-args '{...}'``: keyword arguments of the env's ``load_environment``.

    Example::

        add_env_args(argparse.ArgumentParser())
    """
    parser.add_argument(
        "--env-args",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="keyword arguments for the env's load_environment (an installed env's name, "
        "or a MODULE:FUNCTION that returns a DatasetBuilder), as a JSON object",
    )


def add_env_spec(parser: argparse.ArgumentParser) -> None:
    """Add the ``ENV_SPEC`` argument (``args.target``) and ``--env-args`` (:func:`add_env_args`).

    Example::

        add_env_spec(argparse.ArgumentParser())
    """
    parser.add_argument(
        "target",
        metavar="ENV_SPEC",
        help="MODULE:NAME, path/to/file.py:NAME or an installed env's name (mint-envkit list)",
    )
    add_env_args(parser)


def env_target(args: argparse.Namespace) -> Any:
    """The env the command works on: ``args.target`` as given, or (with ``--env-args``)
    the DatasetBuilder its ``load_environment`` makes with them.

    Example::

        env_target(argparse.Namespace(target="examples/arithmetic_env.py:ArithmeticEnv",
                                      env_args=None))   # the spec, as given
    """
    env_args = getattr(args, "env_args", None)
    if env_args is None or args.target is None:
        return args.target
    return load_target(args.target, env_args=env_args)


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    positive: Sequence[str] = (),
    run: Callable[[argparse.Namespace], Awaitable[int]],
) -> int:
    """Check the ``positive`` options of ``args`` are >= 1, then ``await run(args)``.

    An ENV_SPEC in ``args.target`` is imported first, before the event loop starts, so
    a module that runs something at import (``ScriptedPolicy(...).run_sync(builder)``,
    which starts an event loop of its own) loads as it does under ``python file.py``;
    the command's own :func:`~mint_envkit.evaluation.spec.load_target` then gets the
    module already imported. Errors follow :data:`EXIT_CODES` (in
    :func:`mint_envkit.cli.main`).

    Example::

        run_command("mint-envkit audit", parser, args, positive=("limit",), run=_run)
    """
    for name in positive:
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.print_usage(sys.stderr)
            flag = "--" + name.replace("_", "-")
            print(f"{prog}: {flag} must be >= 1, got {value}", file=sys.stderr)
            return 2
    target = getattr(args, "target", None)
    if isinstance(target, str) and target:  # before the loop: the module may start one
        load_target(target, env_args=getattr(args, "env_args", None))
    return asyncio.run(run(args))


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
    detail = body.get("error") if isinstance(body, Mapping) else None
    return f"{detail} (HTTP {status})" if isinstance(detail, str) else str(err)


def flag_names(message: str, parser: argparse.ArgumentParser | None) -> str:
    """``message`` with the command's Python parameter names written as its flags
    (``max_tokens`` -> ``--max-tokens``), so an error names what the user typed.

    Only names with an underscore are rewritten (``limit`` is also a word); a command
    names more in its module's ``FLAGS`` (parameter -> flag).

    Example::

        parser = argparse.ArgumentParser()
        parser.add_argument("--max-tokens", type=int)
        flag_names("max_tokens must be >= 1, got 0", parser)   # '--max-tokens must be >= 1, got 0'
    """
    if parser is None:
        return message
    names: dict[str, str] = dict(getattr(parser, "flag_aliases", {}))
    for action in parser._actions:  # argparse keeps its options nowhere public
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs and "_" in action.dest:
            names.setdefault(action.dest, longs[0])
    for name, flag in sorted(names.items(), key=lambda item: -len(item[0])):
        message = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", flag, message)
    return message
