"""``mint-envkit list``: the env packages installed in this Python.

One row per env that an installed package declares in the ``mint_envkit.environments``
entry-point group: its name (what ``check``, ``eval``, ``audit`` and
``mint_envkit.load_environment`` take), the package, its version, the entry point and the
first line of its docstring. Reading the docstring imports the env's module, each in a
process of its own given ``--timeout`` seconds (30; :mod:`mint_envkit.builders.listing`):
a module that raises, exits the process or hangs at import is named below the table
with what happened, and the other envs are listed as usual. Exit 0, or 1 when an env
cannot be loaded or two packages claim one name (each is named below the table).

The module is ``list_envs``, not ``list``: a submodule becomes an attribute of its
package, and ``mint_envkit.cli.list`` would hide the builtin ``list`` from the package.

Example (shell)::

    mint-envkit list
"""

from __future__ import annotations

import argparse
import json
import sys

from mint_envkit.builders.listing import DEFAULT_TIMEOUT_S, HEAD, rows
from mint_envkit.builders.packages import installed_environments
from mint_envkit.progress import text_table


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit list"))
    """
    parser.description = (
        "List the env packages installed in this Python (the mint_envkit.environments "
        "entry points): name, package, version, entry point, the first line of its "
        "docstring. Each name works where check, eval and audit take an ENV_SPEC."
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"seconds each env's module has to import, in a process of its own (default "
        f"{DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument("--json", action="store_true", help="print the envs as JSON")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the installed envs; the exit code (0, or 1 when one cannot be loaded or a
    name is claimed twice).

    Example::

        main(["list"])
    """
    if not (0 < args.timeout < float("inf")):
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    envs = installed_environments()
    if args.json:
        listed, problems = rows(envs, args.timeout)
        print(json.dumps([dict(zip(HEAD, row, strict=True)) for row in listed], indent=2))
        for problem in problems:
            print(f"mint-envkit list: {problem}", file=sys.stderr)
        return 1 if problems else 0
    if not envs:
        print(
            f"no env packages installed in this Python ({sys.executable}); make one with "
            "mint-envkit init NAME, install it with pip install -e NAME"
        )
        return 0
    table, problems = rows(envs, args.timeout)
    print(text_table([HEAD, *table]))
    for problem in problems:
        print(f"mint-envkit list: {problem}", file=sys.stderr)
    return 1 if problems else 0
