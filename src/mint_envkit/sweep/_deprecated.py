"""Deprecated ways to summarise a sweep, kept for one release.

Use :func:`~mint_envkit.sweep.load_summary` (or ``mint-envkit summary SWEEP_DIR``).

Example::

    summary = load_summary("runs/arithmetic-sweep")
    print(summary.report(summary.write_files()))
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

from mint_envkit.sweep._summary import load_summary, print_summary

__all__ = ["summarize", "summary_main"]


def summarize(sweep_dir: str | os.PathLike[str]) -> str:
    """Deprecated: use ``load_summary(sweep_dir)`` and its ``report`` and ``write_files``.

    Re-creates ``summary.csv`` and ``summary.png`` and returns the report.

    Example::

        summary = load_summary("runs/arithmetic-sweep")
        print(summary.report(summary.write_files()))
    """
    warnings.warn(
        "mint_envkit.sweep.summarize is deprecated; use load_summary(sweep_dir) and its "
        "report(write_files())",
        DeprecationWarning,
        stacklevel=2,
    )
    summary = load_summary(sweep_dir)
    return summary.report(summary.write_files())


def summary_main(argv: Sequence[str] | None = None) -> int:
    """Deprecated: run ``mint-envkit summary SWEEP_DIR`` (``mint_envkit.cli.main``).

    Example::

        mint_envkit.cli.main(["summary", "runs/arithmetic-sweep"])  # prints the table; 0
    """
    warnings.warn(
        "mint_envkit.sweep.summary_main is deprecated; use mint_envkit.cli.main(['summary', ...])",
        DeprecationWarning,
        stacklevel=2,
    )
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--help"], ["-h"]):
        print("usage: mint-envkit summary SWEEP_DIR: print a sweep's table, write its csv and png")
        return 0
    if len(args) != 1:
        print(
            "usage: summary_main SWEEP_DIR (better: mint-envkit summary SWEEP_DIR)", file=sys.stderr
        )
        return 2
    return print_summary(args[0])
