"""A new env package written, with the golden transcripts of running it (``mint-envkit init``).

:func:`scaffold` writes the files of :mod:`mint_envkit.builders.scaffold` into a folder
(default ``./NAME``, which must not exist or be empty), then imports the new package,
runs its env the way ``mint-envkit check NAME --record`` does
(:func:`~mint_envkit.replay.check.golden_records`) and writes ``tests/golden.jsonl``.
Everything is written in a scratch folder beside the target and moved into place at the
end, so a failed scaffold leaves nothing behind. See docs/env-packages.md.

Example::

    # not run: writes ./units-demo
    from mint_envkit.replay.scaffold import scaffold

    folder, files, transcripts = scaffold("units-demo")
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from mint_envkit.builders.scaffold import (
    GOLDEN,
    ScaffoldNames,
    check_names,
    requirement,
    scaffold_files,
)
from mint_envkit.errors import ConfigError
from mint_envkit.replay.check import golden_records
from mint_envkit.replay.golden import fingerprint, write_golden


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
    files = scaffold_files(names, requirement())
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
