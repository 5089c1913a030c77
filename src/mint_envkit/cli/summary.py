"""``mint-envkit summary SWEEP_DIR``: print a sweep's table, write summary.csv and summary.png.

Example (shell)::

    mint-envkit summary runs/arithmetic-sweep
"""

from __future__ import annotations

import argparse
import json


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit summary"))
    """
    parser.description = "Print a sweep's table and write summary.csv and summary.png again."
    parser.add_argument("sweep_dir", metavar="SWEEP_DIR", help="the sweep root (holds sweep.json)")
    parser.add_argument(
        "--json", action="store_true", help="print the rows as JSON (the CSV's columns)"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the table of ``args.sweep_dir``; 0 (a sweep that is not one is a
    :class:`~mint_envkit.errors.ConfigError`: exit 2 with the reason on stderr).

    Example::

        main(["summary", "runs/arithmetic-sweep"])   # 0
    """
    from mint_envkit.sweep import load_summary

    summary = load_summary(args.sweep_dir)
    files = summary.write_files()
    if args.json:
        print(json.dumps(summary.csv_rows(), indent=2, default=str))
    else:
        print(summary.report(files), flush=True)
    return 0
