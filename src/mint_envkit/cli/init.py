"""``mint-envkit init NAME [DIR]``: scaffold a pip-installable env package.

Writes into DIR (default ``./NAME``, which must not exist or be empty) the files of
:mod:`mint_envkit.cli.scaffold`: ``pyproject.toml`` with the entry point
``NAME = "MODULE.env:load_environment"`` in the ``mint_envkit.environments`` group, the
env module, its tests and a README; then runs the env the way ``mint-envkit check NAME
--record`` does and writes what it did to ``tests/golden.jsonl`` (the golden
transcripts the tests replay). Everything is written in a scratch folder beside DIR and
moved into place at the end, so a failed init leaves nothing behind. Exit 0, or 2 for a
bad name or DIR. See docs/env-packages.md.

Example (shell)::

    mint-envkit init units-demo              # ./units-demo
    mint-envkit init units-demo envs/units   # into envs/units
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.packages import installed_environments
from mint_envkit.cli.scaffold import GOLDEN, ScaffoldNames, scaffold_files
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.replay.golden import episode_records, fingerprint, write_golden
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import ScriptedPolicy

GOLDEN_GROUPS = 3
"""Groups of batch 0 recorded (``mint-envkit check``'s default)."""

UNPARSABLE = "I am not sure."
"""The reply with no answer in it (``check``'s third scripted reply)."""


def _requirement() -> str:
    """The scaffold's dependency: on this mint-envkit's version or later."""
    try:
        return f"mint-envkit>={importlib.metadata.version('mint-envkit')}"
    except importlib.metadata.PackageNotFoundError:  # a source tree that was not installed
        return "mint-envkit"


def check_names(names: ScaffoldNames) -> None:
    """Refuse a name whose module Python already finds, or that an installed env has.

    Raises:
        ConfigError: the module would shadow (or be shadowed by) an importable one
            (``json``, ``mint_envkit``), or an installed package declares the env name.

    Example::

        check_names(ScaffoldNames.of("units-demo"))   # None: free
    """
    if importlib.util.find_spec(names.module) is not None:
        raise ConfigError(
            f"env name {names.name!r}: a module named {names.module!r} already exists in this "
            "Python; the package's module would clash with it: pick another name"
        )
    taken = [env for env in installed_environments() if env.name == names.name]
    if taken:
        raise ConfigError(
            f"env name {names.name!r} is already installed (package {taken[0].package} "
            f"{taken[0].version}); pick another name, or pip uninstall {taken[0].package}"
        )


async def golden_records(builder: DatasetBuilder) -> list[dict[str, Any]]:
    """The episodes ``mint-envkit check`` runs on a builder of number answers, as golden
    records: the first groups of batch 0, each given the answer, a wrong one and no answer.

    Raises:
        MintEnvkitError: a group failed, or its answer does not score correct (the
            scaffold's env must pass its own check).

    Example::

        # not run: `builder` is the scaffold's load_environment()
        records = await golden_records(builder)
        [r["replies"] for r in records[:3]]   # [['180'], ['0'], ['I am not sure.']]
    """
    train, _ = await builder()
    records: list[dict[str, Any]] = []
    for group in train.get_batch(0)[:GOLDEN_GROUPS]:
        answer = str(group.problem["answer"])
        replies = [answer, "1" if answer == "0" else "0", UNPARSABLE]
        rollout = (await rollout_groups([group], ScriptedPolicy(replies)))[0]
        if rollout.error is not None:
            raise MintEnvkitError(
                f"the scaffold's env failed on group {group.index}: {rollout.error}"
            )
        episodes = episode_records(group, rollout, replies, builder.env)
        if episodes[0]["correct"] != 1.0:
            raise MintEnvkitError(
                f"the scaffold's env does not score its answer {answer!r} correct "
                f"(group {group.index}: {episodes[0]['parse_status']})"
            )
        records.extend(episodes)
    return records


def _record(root: Path, names: ScaffoldNames) -> int:
    """Import the new package from ``root/src``, run it, write its golden file; the count.

    The package's modules leave ``sys.modules`` and ``root/src`` leaves ``sys.path`` after.
    """
    source = str(root / "src")
    sys.path.insert(0, source)
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(f"{names.module}.env")
        builder = module.load_environment()
        records = asyncio.run(golden_records(builder))
        produced_by = asyncio.run(fingerprint(builder))  # while its source can be read
    finally:
        sys.path.remove(source)
        for loaded in [m for m in sys.modules if m.split(".")[0] == names.module]:
            del sys.modules[loaded]
    write_golden(root / GOLDEN, target=names.name, records=records, produced_by=produced_by)
    return len(records)


def _target(names: ScaffoldNames, where: str | None) -> Path:
    folder = Path(where if where is not None else names.name)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(
            f"{folder} already exists and is not an empty folder; give another DIR "
            f"(mint-envkit init {names.name} DIR) or remove it"
        )
    return folder


def scaffold(name: str, where: str | None = None) -> tuple[Path, dict[str, str], int]:
    """Write the package of env ``name`` into ``where`` (default ``./name``).

    Returns the folder, the files written (path from the folder -> text) and how many
    golden transcripts were recorded.

    Raises:
        ConfigError: a bad name (:meth:`ScaffoldNames.of`, :func:`check_names`), or a
            folder that exists and is not empty.

    Example::

        # not run: writes ./units-demo
        folder, files, transcripts = scaffold("units-demo")
    """
    names = ScaffoldNames.of(name)
    check_names(names)
    folder = _target(names, where)
    files = scaffold_files(names, _requirement())
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.init-", dir=folder.parent))
    try:
        for path, text in files.items():
            (scratch / path).parent.mkdir(parents=True, exist_ok=True)
            (scratch / path).write_text(text, encoding="utf-8")
        transcripts = _record(scratch, names)
        os.replace(scratch, folder)  # onto a missing or empty folder: one rename
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return folder, {**files, GOLDEN: (folder / GOLDEN).read_text()}, transcripts


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
