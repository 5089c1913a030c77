"""``mint-envkit view RUN_DIR``: write the viewer of a run or a sweep and print its path.

Prints the path of the HTML file it wrote; warnings (a skipped torn line) go to stderr.
Exit 0, or 2 for a bad argument or a directory that is not a run or sweep (or holds no
steps yet).

Example (shell)::

    mint-envkit view runs/rl_hyperparameters-local          # prints .../view.html
    mint-envkit view runs/demo --out /tmp/demo.html --open  # and opens it in the browser
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from mint_envkit.view import write_report


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit view"))
    """
    parser.description = (
        "Write one self-contained HTML page (curves per step, every episode's "
        "transcript, filters and search) for a run or a sweep, and print its path."
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run's log_path or a sweep's root")
    parser.add_argument("--out", help="the HTML file to write (default RUN_DIR/view.html)")
    parser.add_argument("--open", action="store_true", help="open it in the default browser")
    parser.add_argument(
        "--json", action="store_true", help="print the page's path and warnings as JSON"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Write the page of ``args.run_dir`` and print its path; the exit code.

    Example::

        main(["view", "runs/demo"])            # prints runs/demo/view.html; 0
        main(["view", "runs/demo", "--open"])  # also opens it in the default browser
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        path = write_report(args.run_dir, args.out)  # a ConfigError: exit 2 (cli.main)
    for warning in caught:
        print(f"mint-envkit view: warning: {warning.message}", file=sys.stderr, flush=True)
    if args.json:
        notes = [str(warning.message) for warning in caught]
        print(json.dumps({"report": str(path), "warnings": notes}, indent=2), flush=True)
    else:
        print(path, flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0
