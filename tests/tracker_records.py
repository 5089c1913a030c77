"""Reading back what the experiment trackers wrote, the way their own readers do.

- TensorBoard: ``tensorboard.backend.event_processing``'s ``EventAccumulator`` (scalars)
  and the plugin ``EventAccumulator`` (text, the hparams; it also applies purges to them).
- W&B (0.31.0): an offline run is ``wandb/offline-run-<time>-<id>/run-<id>.wandb``, a
  log of protobuf ``Record`` messages (``wandb.proto.wandb_internal_pb2``) in W&B's
  LevelDB-style framing: a 7-byte header (``:W&B``, magic 0xBEE1, version 0), then 32 KiB
  blocks of chunks, each ``<crc32 u32><length u16><type u8>`` then the bytes (type 1 a
  whole record, 2/3/4 its first/middle/last part). wandb 0.31 ships no Python reader
  (``wandb.sdk.internal.datastore`` is gone; the Go core reads it), and the offline run
  writes no ``wandb-summary.json``, so :func:`wandb_records` reads the framing itself.
- MLflow: ``MlflowClient(tracking_uri).get_metric_history``, the store and run id from
  the run directory's ``trackers.json``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024


def tensorboard_scalars(log_path: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of a scalar tag in ``log_path/tensorboard``, purges applied."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader = EventAccumulator(str(log_path / "tensorboard"), size_guidance={"scalars": 0})
    reader.Reload()
    return [(e.step, e.value) for e in reader.Scalars(tag)]


def tensorboard_tensors(log_path: Path, tag: str) -> list[tuple[int, Any]]:
    """(step, value) of a tag as the plugin reader keeps it (text as str), purges applied."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    reader = EventAccumulator(str(log_path / "tensorboard"), size_guidance={"tensors": 0})
    reader.Reload()
    out = []
    for event in reader.Tensors(tag):
        proto = event.tensor_proto
        value = proto.string_val[0].decode() if proto.string_val else list(proto.float_val)
        out.append((event.step, value))
    return out


def tensorboard_tags(log_path: Path) -> list[str]:
    """Every tag the plugin reader finds (the hparams plugin's included)."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    reader = EventAccumulator(str(log_path / "tensorboard"))
    reader.Reload()
    return reader.Tags()["tensors"]


def _records(path: Path) -> Iterator[Any]:
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), f"not a .wandb file: {path}"
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # the rest of a block too short for a chunk header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def wandb_files(log_path: Path) -> list[Path]:
    """The offline runs' ``.wandb`` files under ``log_path/wandb``, oldest first."""
    return sorted((log_path / "wandb").glob("offline-run-*/run-*.wandb"))


def wandb_records(log_path: Path) -> list[Any]:
    """Every record of every offline run under ``log_path``, oldest run first."""
    return [record for path in wandb_files(log_path) for record in _records(path)]


def wandb_history(log_path: Path) -> list[dict[str, Any]]:
    """Every history row (``run.log``) written, decoded, with its ``_step``."""
    rows = []
    for record in wandb_records(log_path):
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json)
                    for item in record.history.item
                }
            )
    return rows


def wandb_runs(log_path: Path) -> list[Any]:
    """The run records (id, group, name, config) of the offline runs, oldest first."""
    return [r.run for r in wandb_records(log_path) if r.WhichOneof("record_type") == "run"]


def wandb_config(run: Any) -> dict[str, Any]:
    """A run record's config, decoded."""
    return {item.key: json.loads(item.value_json) for item in run.config.update}


def mlflow_state(log_path: Path) -> dict[str, Any]:
    """The MLflow part of the run directory's ``trackers.json``."""
    return json.loads((log_path / "trackers.json").read_text())["mlflow"]


def mlflow_history(log_path: Path, key: str) -> list[tuple[int, float]]:
    """(step, value) of one metric of the run's MLflow run, in step order."""
    from mlflow.tracking import MlflowClient

    state = mlflow_state(log_path)
    client = MlflowClient(state["tracking_uri"])
    history = client.get_metric_history(state["run_id"], key)
    return sorted((m.step, m.value) for m in history)


def mlflow_run(log_path: Path) -> Any:
    """The run's MLflow run (info, params, tags)."""
    from mlflow.tracking import MlflowClient

    state = mlflow_state(log_path)
    return MlflowClient(state["tracking_uri"]).get_run(state["run_id"])


def offline_tracker_env(monkeypatch: Any, home: Path) -> None:
    """No W&B or MLflow settings of the machine's, and no network for W&B to use.

    W&B's own files (settings, cache) go under ``home``; its server is a closed port on
    this machine, so a tracker that tried to upload would fail, not reach anything.
    """
    for name in (
        "WANDB_API_KEY",
        "WANDB_MODE",
        "WANDB_DIR",
        "WANDB_PROJECT",
        "WANDB_ENTITY",
        "WANDB_RUN_GROUP",
        "MLFLOW_TRACKING_URI",
        "MLFLOW_EXPERIMENT_NAME",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(home / name.lower()))
