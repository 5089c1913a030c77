"""``mint-envkit list``: the env packages installed in this Python.

One row per env that an installed package declares in the ``mint_envkit.environments``
entry-point group: its name (what ``check``, ``eval``, ``audit`` and
``mint_envkit.load_environment`` take), the package, its version, the entry point and the
first line of its docstring. Reading the docstring imports the env's module; a module
that cannot be imported shows why in that column. Exit 0, or 1 when an env cannot be
loaded or two packages claim one name (each is named below the table).

The module is ``list_envs``, not ``list``: a submodule becomes an attribute of its
package, and ``mint_envkit.cli.list`` would hide the builtin ``list`` from the package.

Example (shell)::

    mint-envkit list
"""

from __future__ import annotations

import argparse
import json
import sys

from mint_envkit.builders.packages import EnvPackage, find_environment, installed_environments
from mint_envkit.errors import MintEnvkitError
from mint_envkit.progress import text_table

HEAD = ("name", "package", "version", "entry point", "description")


def rows(envs: list[EnvPackage]) -> tuple[list[tuple[str, ...]], list[str]]:
    """The table's rows, and the problems found (an env that cannot be loaded, a name
    claimed twice), one sentence each.

    Example::

        rows([])   # ([], [])
    """
    problems: list[str] = []
    out = []
    for env in envs:
        claims = [other.package for other in envs if other.name == env.name]
        try:
            description = env.summary()
        except MintEnvkitError as err:
            description = "cannot be loaded (below)"
            problems.append(str(err))
        if len(claims) > 1:
            description = f"CLAIMED BY {len(claims)} PACKAGES; {description}"
        out.append((env.name, env.package, env.version, env.entry_point, description))
    for name in sorted({env.name for env in envs}):
        if sum(env.name == name for env in envs) > 1:
            try:
                find_environment(name)
            except MintEnvkitError as err:  # what loading it says: both packages, the fix
                problems.append(str(err))
    return out, problems


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
    parser.add_argument("--json", action="store_true", help="print the envs as JSON")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the installed envs; the exit code (0, or 1 when one cannot be loaded or a
    name is claimed twice).

    Example::

        main(["list"])
    """
    envs = installed_environments()
    if args.json:
        listed, problems = rows(envs)
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
    table, problems = rows(envs)
    print(text_table([HEAD, *table]))
    for problem in problems:
        print(f"mint-envkit list: {problem}", file=sys.stderr)
    return 1 if problems else 0
