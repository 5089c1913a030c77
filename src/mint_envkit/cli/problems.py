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
from mint_envkit.evaluation.spec import SAMPLES, SPLITS
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings


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
    parser.add_argument(
        "--samples", type=int, default=None, help=f"completions per problem (K; default {SAMPLES})"
    )
    parser.add_argument("--split", choices=SPLITS, default=None, help="default: test if any")
    add_problem_options(parser)
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="the reply limit (default: the builder's)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-url", default=None, help="a running backend (else as training)")
    parser.add_argument("--backend", choices=("auto", "local", "mint"), default="auto")


def sampling_from_args(args: argparse.Namespace) -> SamplingSettings:
    """The :class:`~mint_envkit.rollouts.SamplingSettings` the sampling options give.

    Example::

        sampling_from_args(argparse.Namespace(temperature=0.7, max_tokens=None, seed=0)).temperature
        # 0.7
    """
    return SamplingSettings(
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        seed=args.seed,
        max_concurrent_groups=getattr(args, "concurrency", None),  # None: the evaluation's
    )


def backend_from_args(args: argparse.Namespace) -> BackendSettings:
    """The :class:`~mint_envkit.rollouts.BackendSettings` of ``--backend`` and ``--base-url``.

    Example::

        backend_from_args(argparse.Namespace(backend="local", base_url=None)).backend  # 'local'
    """
    return BackendSettings(backend=args.backend, base_url=args.base_url)


def sample_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of an evaluation the sampling options give: ``samples``,
    ``sampling``, ``split``, ``problems`` and ``limit`` (``evaluate``, ``evaluate_many``,
    ``interpolation_sweep``).

    Example::

        args = argparse.Namespace(samples=None, temperature=1.0, max_tokens=None, seed=0,
                                  split=None, problem=None, problems=None, limit=8)
        sample_options(args)["limit"]   # 8
    """
    return {
        "samples": args.samples,
        "sampling": sampling_from_args(args),
        "split": args.split,
        "problems": problems_from_args(args),
        "limit": args.limit,
    }


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
    return parse_problems(args.problem)


def parse_problems(texts: list[str] | None) -> list[dict[str, Any]] | None:
    """The ``--problem`` values read as JSON (None when there are none).

    Raises:
        MintEnvkitError: a value that is not JSON.

    Example::

        parse_problems(['{"question": "2+3?"}'])   # [{'question': '2+3?'}]
    """
    out = []
    for text in texts or []:
        try:
            out.append(json.loads(text))
        except json.JSONDecodeError as err:
            raise MintEnvkitError(f"--problem {text!r} is not JSON: {err}") from None
    return out or None
