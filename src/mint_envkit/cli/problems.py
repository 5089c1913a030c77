"""The ``--problem`` / ``--problems`` options that ``eval`` and ``audit`` share.

Example::

    add_problem_options(parser)
    problems = problems_from_args(parser.parse_args(["--problem", '{"question": "2+3?"}']))
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import SPLITS


def add_problem_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--problem JSON`` (repeatable) and ``--problems FILE`` (for env classes).

    Example::

        add_problem_options(argparse.ArgumentParser())
    """
    parser.add_argument("--problem", action="append", help="a problem as JSON (env classes)")
    parser.add_argument("--problems", help="a .jsonl/.csv/.parquet file of problems (env classes)")


def add_sampling_options(parser: argparse.ArgumentParser) -> None:
    """Add the options of commands that sample an env's problems (``eval``, ``interpolate``).

    ``--samples``, ``--split``, the problem options, ``--limit``, ``--temperature``,
    ``--max-tokens``, ``--seed``, ``--base-url`` and ``--backend``.

    Example::

        add_sampling_options(argparse.ArgumentParser())
    """
    parser.add_argument("--samples", type=int, default=4, help="completions per problem (K)")
    parser.add_argument("--split", choices=SPLITS, default=None, help="default: test if any")
    add_problem_options(parser)
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-url", default=None, help="a running backend (else as training)")
    parser.add_argument("--backend", choices=("auto", "local", "mint"), default="auto")


def problems_from_args(args: argparse.Namespace) -> list[dict[str, Any]] | str | None:
    """The problems the options name: a file path, a list of dicts, or None.

    Raises:
        MintEnvkitError: both options given, or a ``--problem`` that is not JSON.

    Example::

        problems_from_args(argparse.Namespace(problem=None, problems="test.jsonl"))  # 'test.jsonl'
    """
    if args.problem and args.problems:
        raise MintEnvkitError("give --problem or --problems, not both")
    if args.problems:
        return args.problems
    out = []
    for text in args.problem or []:
        try:
            out.append(json.loads(text))
        except json.JSONDecodeError as err:
            raise MintEnvkitError(f"--problem {text!r} is not JSON: {err}") from None
    return out or None
