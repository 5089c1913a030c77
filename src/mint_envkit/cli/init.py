"""``mint-envkit init NAME [DIR]``: scaffold a pip-installable env package.

Writes into DIR (default ``./NAME``, which must not exist or be empty) the files of
:mod:`mint_envkit.builders.scaffold`: ``pyproject.toml`` with the entry point
``NAME = "MODULE.env:load_environment"`` in the ``mint_envkit.environments`` group, the
env module, its tests and a README; then runs the env the way ``mint-envkit check NAME
--record`` does and writes what it did to ``tests/golden.jsonl`` (the golden
transcripts the tests replay); :func:`mint_envkit.replay.scaffold.scaffold` does it.
Everything is written in a scratch folder beside DIR and
moved into place at the end, so a failed init leaves nothing behind. Exit 0, or 2 for a
bad name or DIR. See docs/env-packages.md.

Example (shell)::

    mint-envkit init units-demo              # ./units-demo
    mint-envkit init units-demo envs/units   # into envs/units
"""

from __future__ import annotations

import argparse
import json
import sys

from mint_envkit.builders.scaffold import GOLDEN, ScaffoldNames
from mint_envkit.errors import MintEnvkitError
from mint_envkit.replay.scaffold import scaffold


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit init"))
    """
    parser.description = (
        "Scaffold a pip-installable env package: pyproject.toml with an entry point in the "
        "mint_envkit.environments group, a SingleTurnEnv with load_environment(**kwargs), "
        "its tests with golden transcripts, and a README. Install it (pip install -e DIR) "
        "and mint-envkit check|eval|audit NAME find it by name."
    )
    parser.add_argument("name", metavar="NAME", help="the env's name, e.g. units-demo")
    parser.add_argument("dir", metavar="DIR", nargs="?", help="where to write it (default ./NAME)")
    parser.add_argument(
        "--json", action="store_true", help="print the package's folder and files as JSON"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit init NAME [DIR]``; the exit code (0 written, 2 a bad name or DIR).

    Example::

        main(["init", "units-demo", "/tmp/units-demo"])
    """
    try:
        folder, files, transcripts = scaffold(args.name, args.dir)
    except MintEnvkitError as err:
        print(f"mint-envkit init: {err}", file=sys.stderr)
        return 2
    names = ScaffoldNames.of(args.name)
    if args.json:
        record = {
            "folder": str(folder),
            "name": names.name,
            "module": names.module,
            "files": [str(folder / path) for path in sorted(files)],
            "golden_transcripts": transcripts,
        }
        print(json.dumps(record, indent=2))
        return 0
    print(f"created {folder}: the env package {names.name} (module {names.module})")
    for path in sorted(files):
        print(f"  {folder / path}")
    print(f"  ({transcripts} golden transcripts in {GOLDEN}, as check --record writes them)")
    print("next:")
    print(f"  pip install -e {folder}")
    print(f"  mint-envkit check {names.name}")
    print(f"  mint-envkit audit {names.name} --sample-model none")
    print(f"  cd {folder} && python -m pytest")
    return 0
