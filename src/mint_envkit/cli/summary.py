"""``mint-envkit summary SWEEP_DIR``: print a sweep's table, write summary.csv and summary.png.

Example (shell)::

    mint-envkit summary runs/arithmetic-sweep
"""

from __future__ import annotations

import argparse
import sys

from mint_envkit.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit summary"))
    """
    parser.description = "Print a sweep's table and write summary.csv and summary.png again."
    parser.add_argument("sweep_dir", metavar="SWEEP_DIR", help="the sweep root (holds sweep.json)")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the table of ``args.sweep_dir``; 0, or 2 with the reason on stderr.

    Example::

        run(argparse.Namespace(sweep_dir="runs/arithmetic-sweep"), parser)   # 0
    """
    from mint_envkit.sweep import load_summary

    try:
        summary = load_summary(args.sweep_dir)
        print(summary.report(summary.write_files()), flush=True)
    except ConfigError as err:
        print(f"mint-envkit summary: error: {err}", file=sys.stderr, flush=True)
        return 2
    return 0
