"""The save phase: checkpoints when due, and the retention of old ones.

A checkpoint is saved every ``Config.save_every`` steps and after the last
step (named ``final``). With ``Config.keep_checkpoints = N`` only the newest
N periodic checkpoints (and every ``final`` one) are kept: older ones are
deleted through the SDK's REST client (``DELETE .../checkpoints/...``), so
retention works on MinT as on the embedded backend, and ``checkpoints.jsonl``
gets a line ``{"name", "step", "state_path", "sampler_path", "deleted":
true, "time"}`` for each (see :meth:`~mint_envkit.runs.files.RunFiles.checkpoints`).

Example::

    # not run: needs a training client
    record = await save_checkpoint(training, config, done=step + 1, total=total)
    if record is not None:
        files.append_checkpoint(record)
        await prune_checkpoints(rest, config, files)
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from mint_envkit.rl.config import Config
from mint_envkit.runs.files import RunFiles

logger = logging.getLogger(__name__)


def _checkpoint_due(config: Config, done: int, total: int) -> bool:
    return bool(config.save_every and done % config.save_every == 0) or done == total


async def save_checkpoint(
    training: Any, config: Config, done: int, total: int
) -> dict[str, Any] | None:
    """Save state and sampler weights after ``done`` steps when due; return the record.

    Due every ``config.save_every`` steps and after the last step (named
    ``final``); None when not due. :func:`start_checkpoint`, then awaited.

    Example::

        # not run: needs a training client
        record = await save_checkpoint(training_client, config, done=3, total=3)
        record["name"], record["state_path"]  # ('final', 'tinker://.../final-s0-3')
    """
    pending = await start_checkpoint(training, config, done, total)
    return None if pending is None else await pending


async def start_checkpoint(
    training: Any, config: Config, done: int, total: int
) -> asyncio.Task[dict[str, Any]] | None:
    """Submit the saves of the checkpoint after ``done`` steps when due; a task for its record.

    Both saves (``save_state``, ``save_weights_for_sampler``) are submitted before
    either is awaited: one round trip. The loop submits them right behind the
    step's update, before the next step's calls, so they hold exactly the weights
    after ``done`` steps. None when no checkpoint is due.

    Example::

        # not run: needs a training client
        pending = await start_checkpoint(training_client, config, done=3, total=3)
        record = await pending if pending is not None else None
    """
    if not _checkpoint_due(config, done, total):
        return None
    name = "final" if done == total else f"step{done:06d}"
    label = f"{name}-s{config.sampling_seed}-{done}"
    state_future = await training.save_state_async(label)
    sampler_future = await training.save_weights_for_sampler_async(f"{label}-sampler")
    return asyncio.ensure_future(_record(name, done, state_future, sampler_future))


async def _record(name: str, done: int, state_future: Any, sampler_future: Any) -> dict[str, Any]:
    state, sampler_ckpt = await state_future, await sampler_future
    return {
        "name": name,
        "step": done,
        "state_path": state.path,
        "sampler_path": sampler_ckpt.path,
        "time": time.time(),
    }


def stale_checkpoints(records: list[dict[str, Any]], keep: int | None) -> list[dict[str, Any]]:
    """The live periodic checkpoints beyond the newest ``keep`` (``final`` ones are never stale).

    Example::

        # not run: needs a run's checkpoints.jsonl
        stale_checkpoints(files.checkpoints(), keep=1)  # every live stepNNNNNN but the last
    """
    if keep is None:
        return []
    periodic = [
        r
        for r in records
        if r.get("state_path") and not r.get("deleted") and r.get("name") != "final"
    ]
    return periodic[: max(0, len(periodic) - keep)]


async def _delete(rest: Any, path: str) -> str | None:
    """Delete one checkpoint path; None when done (or already gone), else why not."""
    try:
        await rest.delete_checkpoint_from_tinker_path_async(path)
    except Exception as err:  # the SDK's errors: report and keep training
        if getattr(err, "status_code", None) == 404:
            return None
        return f"{type(err).__name__}: {err}"
    return None


async def prune_checkpoints(rest: Any, config: Config, files: RunFiles) -> list[dict[str, Any]]:
    """Delete the checkpoints that ``config.keep_checkpoints`` no longer keeps; return them.

    Each deleted checkpoint (state and sampler weights) gets a ``deleted``
    line in ``checkpoints.jsonl``. A deletion the backend refuses is logged
    as a warning and retried after the next save; it never stops the run.

    Example::

        # not run: needs a training client
        rest = service_client.create_rest_client()
        await prune_checkpoints(rest, config, files)  # [{'name': 'step000001', ...}]
    """
    deleted = []
    for record in stale_checkpoints(files.checkpoints(), config.keep_checkpoints):
        paths = [p for p in (record.get("state_path"), record.get("sampler_path")) if p]
        problems = [p for p in await asyncio.gather(*(_delete(rest, p) for p in paths)) if p]
        if problems:
            logger.warning("could not delete checkpoint %s: %s", record["name"], problems[0])
            continue
        mark = {key: record.get(key) for key in ("name", "step", "state_path", "sampler_path")}
        files.append_checkpoint({**mark, "deleted": True, "time": time.time()})
        deleted.append(record)
    return deleted
