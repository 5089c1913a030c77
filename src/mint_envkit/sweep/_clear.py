"""Clearing a sweep: its results folder and the checkpoints its runs saved.

A run keeps its checkpoints in its backend's store (the embedded backend's state
directory, or MinT), not under the sweep's root, and names them in its
``checkpoints.jsonl``. Deleting a root without them leaves them orphaned (after a few
``--fresh`` runs the store held hundreds, gigabytes); :func:`clear_root` deletes both,
the checkpoints through the SDK's REST routes (as ``mint-envkit checkpoints delete``).

Example::

    # not run: deletes a sweep's results and its checkpoints
    from mint_envkit.sweep._clear import clear_root

    print(clear_root("runs/my-sweep", config.backend, config.base_url))
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError
from mint_envkit.rollouts.backend import local_api_key, resolve_connection
from mint_envkit.runs.store import MANIFEST


def saved_checkpoints(root: str | Path) -> list[str]:
    """The ``tinker://`` paths every ``checkpoints.jsonl`` under ``root`` names.

    Example::

        saved_checkpoints("runs/my-sweep")   # ['tinker://<run id>/weights/final', ...]
    """
    found: dict[str, None] = {}
    base = Path(root)
    for record_file in sorted(base.rglob("checkpoints.jsonl")) if base.is_dir() else []:
        for line in record_file.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                record = json.loads(line)
                for key in ("state_path", "sampler_path"):
                    value = record.get(key)
                    if isinstance(value, str) and value.startswith("tinker://"):
                        found[value] = None
    return list(found)


@contextlib.contextmanager
def _rest_client(backend: str, base_url: str | None) -> Iterator[Any]:
    import mint

    connection = resolve_connection(backend, base_url)
    if connection.backend == "mint" or connection.base_url:
        service = mint.ServiceClient(base_url=connection.base_url, api_key=connection.api_key)
        try:
            yield service.create_rest_client()
        finally:
            service.holder.close()
        return
    from mint_envkit.local.server import LocalServer

    with LocalServer(preload=False, list_all_checkpoints=True) as server:  # the default store
        service = mint.ServiceClient(base_url=server.base_url, api_key=local_api_key())
        try:
            yield service.create_rest_client()
        finally:
            service.holder.close()


def delete_checkpoints(paths: list[str], backend: str, base_url: str | None = None) -> int:
    """Delete ``paths`` from the store of ``backend``; the number deleted (one already
    gone counts as deleted).

    Example::

        delete_checkpoints(saved_checkpoints("runs/my-sweep"), "local")   # 16
    """
    if not paths:
        return 0
    with _rest_client(backend, base_url) as rest:
        for path in paths:
            try:
                rest.delete_checkpoint_from_tinker_path(path).result()
            except Exception as err:  # the SDK's NotFoundError: deleted already
                if "NotFound" not in type(err).__name__:
                    raise
    return len(paths)


def clear_root(root: str | Path, backend: str, base_url: str | None = None) -> str | None:
    """Delete a sweep's root and the checkpoints its runs saved; what was deleted, in
    words (None: there was nothing).

    Raises:
        ConfigError: ``root`` holds files but no ``sweep.json`` (not a sweep's: kept).

    Example::

        # not run: see the module example
        clear_root("runs/my-sweep", "local")
        # 'deleted runs/my-sweep and the 16 checkpoints its runs saved'
    """
    path = Path(root)
    if not path.exists():
        return None
    if not (path / MANIFEST).is_file():
        if any(path.iterdir()):
            raise ConfigError(
                f"{root} holds no {MANIFEST}, so it is not a sweep's directory; not deleting "
                "it (point MINT_LOG_ROOT at a new directory instead)"
            )
        return None
    deleted = delete_checkpoints(saved_checkpoints(path), backend, base_url)
    shutil.rmtree(path)
    return f"deleted {root} and the {deleted} checkpoint(s) its runs saved"
