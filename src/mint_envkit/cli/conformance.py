"""``mint-envkit conformance``: which Tinker / MinT calls a backend serves, each measured.

Parsing and output only; the rows and their rule are :mod:`mint_envkit.conformance`.
Against MinT with ``MINT_API_KEY``, against ``--base-url``, else against an embedded
server started for the run. Exit 0 when no row failed, 1 when one did, 2 for a usage or
setup error (a bad option, no backend), 3 when the command itself failed.

Example (shell)::

    mint-envkit conformance                                  # the embedded backend
    mint-envkit conformance --model mint-envkit/tiny-qwen3-small --out rows
    mint-envkit conformance --backend mint                   # MinT (needs MINT_API_KEY)
    mint-envkit conformance --base-url http://127.0.0.1:8765 --backend local
    mint-envkit conformance --row "ppo clipping" --row temperature
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mint_envkit.cli.command import run_command
from mint_envkit.conformance.probe import AGREEMENT_BOUNDS
from mint_envkit.conformance.report import run_conformance
from mint_envkit.conformance.rows import Row
from mint_envkit.rollouts.settings import BACKENDS
from mint_envkit.runs.files import write_json_atomic

PROG = "mint-envkit conformance"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit conformance"))
    """
    parser.description = (
        "Call every Tinker / MinT function a training loop relies on, through the SDK, "
        "measure the answers, and print one row per call: ok, unsupported (an optional call "
        "the server refuses as not served), failed (a wrong answer, an error, a required "
        "call refused; exit 1) or skipped (a row it needs is not ok). See "
        "docs/local-backend.md, 'What the embedded backend serves'."
    )
    parser.add_argument("--base-url", default=None, help="a running backend (else as training)")
    parser.add_argument("--backend", choices=BACKENDS, default="auto")
    parser.add_argument(
        "--model",
        default=None,
        help="the base model (default: MINT_BASE_MODEL, else Qwen/Qwen3-0.6B on MinT, "
        "mint-envkit/tiny-qwen3 on the embedded backend)",
    )
    parser.add_argument(
        "--dtype",
        choices=("auto", *AGREEMENT_BOUNDS),
        default="auto",
        help="the backend's dtype, which picks the logprob bounds (auto: the embedded "
        "backend's on this machine; bfloat16 for MinT)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds each row's calls may take"
    )
    parser.add_argument(
        "--row",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this row (a name or a part of one; repeatable) and the rows it needs",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--out", default=None, metavar="DIR", help="also write DIR/conformance.json"
    )


def _progress(row: Row) -> None:
    print(f"conformance: {row.name}: {row.status} ({row.seconds:.1f} s)", file=sys.stderr)


async def _run(args: argparse.Namespace) -> int:
    report = await run_conformance(
        backend=args.backend,
        base_url=args.base_url,
        model=args.model,
        dtype=args.dtype,
        timeout_s=args.timeout,
        rows=args.row,
        on_row=_progress,
    )
    if args.json:
        print(json.dumps(report.record(), indent=2))
    else:
        print(report.heading())
        print(report.table())
    if args.out:
        path = Path(args.out) / "conformance.json"
        write_json_atomic(path, report.record())
        if not args.json:
            print(f"rows: {path}")
    return report.exit_code


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit conformance ...``: 0 no row failed, 1 a row failed, 2 usage or setup
    error, 3 internal error.

    Example::

        main(["conformance", "--model", "mint-envkit/tiny-qwen3-small", "--out", "rows"])
    """
    if not args.timeout > 0:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: --timeout must be > 0 seconds", file=sys.stderr)
        return 2
    return run_command(PROG, parser, args, positive=(), run=_run)
