"""Checkpoints on disk: ``tinker://`` paths, atomic writes, reads, listing, deletion.

Layout: ``state_dir/<model_id>/{weights,sampler_weights}/<name>/`` with
``adapter_model.safetensors`` + ``adapter_config.json`` (peft's format),
``optimizer.safetensors`` (training state only) and ``meta.json`` (base model,
LoRA config, step), addressed by ``tinker://<model_id>/<kind>/<name>``.
Files are read and checked by :mod:`.checkpoint_files` (a corrupted, foreign or
symlinked-out file is an ``EngineError`` of category ``user`` naming it); writes go
through owner-tagged scratch folders that :mod:`.scratch` sweeps when a store opens.

Example::

    import tempfile
    from pathlib import Path

    from mint_envkit.local.engine.checkpoints import CheckpointStore

    store = CheckpointStore(Path(tempfile.mkdtemp()))
    path = store.write(trainer, "weights", "step-1", None, with_optimizer=True)
    assert path == f"tinker://{trainer.model_id}/weights/step-1"
    meta, tensors, opt = store.read(path, with_optimizer=True)
    assert meta["step"] == trainer.step == 1 and meta["lora"]["rank"] == 8
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mint_envkit.checks import is_number
from mint_envkit.local.models.loader import resolve_model_name

from .checkpoint_files import check_factors, check_fits, read_meta, read_tensors
from .inputs import check_name
from .records import BaseModelState, EngineError, LoraSpec, Snapshot, Trainer
from .scratch import scratch_prefix, sweep

KIND_DIRS = {"state": "weights", "sampler": "sampler_weights"}
"""``save_state``'s ``kind`` -> the folder its checkpoints go to."""
CHECKPOINT_TYPES = {"weights": "training", "sampler_weights": "sampler"}
"""Checkpoint folder -> the ``checkpoint_type`` listings report."""
FORMAT_VERSION = 1
"""The ``format`` entry of ``meta.json``."""


_OS_ERROR_RE = re.compile(r"os error (\d+)|code: (\d+)")


def _save_file(tensors: dict[str, torch.Tensor], filename: str) -> None:
    """safetensors' ``save_file``, its I/O failures raised as ``OSError`` (with errno and file).

    safetensors reports a full disk as ``SafetensorError(... (os error 28))``; an
    ``OSError`` lets the server name the directory and call it the user's to fix.
    """
    from safetensors.torch import save_file

    try:
        save_file(tensors, filename)
    except OSError:
        raise
    except Exception as err:
        found = _OS_ERROR_RE.search(str(err))
        if found is None:
            raise
        code = int(found.group(1) or found.group(2))
        raise OSError(code, os.strerror(code), filename) from err


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _optimizer_tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for key, p in trainer.params.items():
        state = trainer.optimizer.state.get(p)
        if not state:
            continue
        for field in ("exp_avg", "exp_avg_sq", "step"):
            value = state[field]
            if not torch.is_tensor(value):
                value = torch.tensor(float(value))
            out[f"{field}::{key}"] = value.detach().to("cpu", torch.float32).contiguous()
    return out


def meta_gain(meta: dict[str, Any], path: str) -> float:
    """How many trained deltas a checkpoint's weights may hold (its ``meta.json`` ``gain``;
    1 for a checkpoint that holds what training made, more after an interpolation that
    extrapolates: see :mod:`.interpolate`).

    Example::

        assert meta_gain({"lora": {}}, "tinker://run/weights/a") == 1.0
    """
    gain = meta.get("gain", 1.0)
    if not is_number(gain) or not 0 <= gain < float("inf"):
        raise EngineError(
            f"checkpoint {path!r} is unreadable: its meta.json's gain is {gain!r}, not a "
            "finite number >= 0; delete it and save it again"
        )
    return float(gain)


class CheckpointStore:
    """The checkpoints under one state directory, and the snapshots already read from them.

    Example::

        store = CheckpointStore(Path("/tmp/mint-state").resolve())
        where = store.dir("tinker://m-1/weights/step-1")  # /tmp/mint-state/m-1/weights/step-1
        assert where == store.state_dir / "m-1" / "weights" / "step-1"
    """

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.snapshots: dict[str, Snapshot] = {}
        """Sampler snapshots by the path they were written to or read from."""
        self.swept: list[Path] = sweep(state_dir)
        """The stale scratch folders removed when this store opened (:func:`.scratch.sweep`)."""

    def parse(self, path: Any) -> tuple[str, str, str]:
        """``(model_id, kind folder, name)`` of a ``tinker://`` path, or EngineError(user).

        Example::

            assert store.parse("tinker://m-1/weights/a") == ("m-1", "weights", "a")
        """
        if not isinstance(path, str) or not path.startswith("tinker://"):
            raise EngineError(
                f"checkpoint path must look like tinker://<model_id>/weights/<name> or "
                f"tinker://<model_id>/sampler_weights/<name>, got {path!r}"
            )
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in CHECKPOINT_TYPES:
            raise EngineError(
                f"checkpoint path {path!r} must have the form tinker://<model_id>/weights/<name> "
                "or tinker://<model_id>/sampler_weights/<name>"
            )
        model_id, kind, name = parts
        check_name(model_id, "model_id in checkpoint path")
        check_name(name)
        return model_id, kind, name

    def dir(self, path: Any) -> Path:
        """The folder of a checkpoint path (inside the state directory, or EngineError).

        Example::

            assert store.dir("tinker://m-1/sampler_weights/a").name == "a"
        """
        model_id, kind, name = self.parse(path)
        target = (self.state_dir / model_id / kind / name).resolve()
        if self.state_dir not in target.parents:
            raise EngineError(
                f"checkpoint path {path!r} leads out of the state directory {self.state_dir} "
                f"(a symlink to {target}); checkpoints are used only inside it"
            )
        return target

    def _stays_inside(self, folder: Path) -> bool:
        return self.state_dir in folder.resolve().parents

    def meta(self, path: str) -> dict[str, Any]:
        """A checkpoint's ``meta.json``, checked (EngineError(user) when missing or unreadable).

        Example::

            assert store.meta(path)["lora"]["rank"] == 8
        """
        return read_meta(self.state_dir, self.dir(path), path)

    def write(
        self,
        trainer: Trainer,
        kind: str,
        name: str,
        tensors: dict[str, torch.Tensor] | None,
        with_optimizer: bool,
    ) -> str:
        """Write ``tensors`` (default: the trainer's weights) atomically; return the path.

        An existing checkpoint of that name is replaced (and forgotten by :attr:`snapshots`).

        Example::

            store.write(trainer, "sampler_weights", "step-1", None, with_optimizer=False)
            # 'tinker://<model_id>/sampler_weights/step-1'
        """
        path = f"tinker://{trainer.model_id}/{kind}/{name}"
        target = self.dir(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if tensors is None:
            tensors = {k: p.detach() for k, p in trainer.params.items()}
        tmp = Path(tempfile.mkdtemp(prefix=scratch_prefix(".tmp-"), dir=target.parent))
        try:
            _save_file(
                {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in tensors.items()},
                str(tmp / "adapter_model.safetensors"),
            )
            trainer.spec.peft_config(trainer.base).save_pretrained(str(tmp))
            meta = {
                "format": FORMAT_VERSION,
                "model_id": trainer.model_id,
                "kind": kind,
                "name": name,
                "base_model": trainer.base,
                "lora": trainer.spec.to_json(),
                "step": trainer.step,
                "has_optimizer": with_optimizer,
            }
            if trainer.gain != 1.0:  # an interpolation, or trained from one (interpolate.py)
                meta["gain"] = trainer.gain
            if with_optimizer:
                _save_file(_optimizer_tensors(trainer), str(tmp / "optimizer.safetensors"))
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
            if target.exists():
                trash = Path(tempfile.mkdtemp(prefix=scratch_prefix(".old-"), dir=target.parent))
                target.rename(trash / "x")
                tmp.rename(target)
                shutil.rmtree(trash, ignore_errors=True)
                self.snapshots.pop(path, None)
            else:
                tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return path

    def read(
        self, path: str, *, with_optimizer: bool
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """``(meta, adapter tensors, optimizer tensors)`` of a checkpoint (CPU tensors).

        Example::

            meta, tensors, _ = store.read(path, with_optimizer=False)
            assert meta["base_model"] == "mint-envkit/tiny-qwen3-small"
        """
        target = self.dir(path)
        meta = read_meta(self.state_dir, target, path)
        adapter_file = target / "adapter_model.safetensors"
        tensors = read_tensors(self.state_dir, adapter_file, path)
        check_factors(path, adapter_file, tensors, int(meta["lora"]["rank"]))
        opt: dict[str, torch.Tensor] = {}
        if with_optimizer:
            opt_file = target / "optimizer.safetensors"
            if not meta.get("has_optimizer") or not opt_file.is_file():
                raise EngineError(
                    f"checkpoint {path!r} holds no optimizer state (it was saved for "
                    "sampling); load it without the optimizer, or use a save_state checkpoint"
                )
            opt = read_tensors(self.state_dir, opt_file, path)
        return meta, tensors, opt

    def snapshot(self, path: str, load_base: Callable[[str], BaseModelState]) -> Snapshot:
        """The sampler snapshot of a checkpoint: the one already read, else read from disk.

        ``load_base`` gives the (loaded) base model of a name.

        Example::

            snap = store.snapshot(path, engine.registry.base)
            assert snap.spec.rank == 8 and store.snapshots[path] is snap
        """
        cached = self.snapshots.get(path)
        if cached is not None and self.dir(path).is_dir():
            return cached
        meta, tensors, _ = self.read(path, with_optimizer=False)
        base = load_base(meta["base_model"])
        adapter_file = self.dir(path) / "adapter_model.safetensors"
        check_fits(path, adapter_file, tensors, base.loaded.model, meta["base_model"])
        dev = base.loaded.device
        snap = Snapshot(
            base=base.loaded.name,
            spec=LoraSpec.from_json(meta["lora"]),
            tensors={k: v.to(dev) for k, v in tensors.items()},
            source=path,
        )
        self.snapshots[path] = snap
        return snap

    def load_into(self, trainer: Trainer, path: str, *, with_optimizer: bool) -> None:
        """Load a checkpoint's weights (and optionally optimizer state and step) into ``trainer``.

        Without the optimizer, the optimizer restarts from scratch and the step from 0.

        Example::

            store.load_into(trainer, path, with_optimizer=True)
        """
        meta, tensors, opt = self.read(path, with_optimizer=with_optimizer)
        spec = LoraSpec.from_json(meta["lora"])
        if resolve_model_name(meta["base_model"]) != trainer.base or spec != trainer.spec:
            raise EngineError(
                f"checkpoint {path!r} (base {meta['base_model']}, {spec}) does not fit model_id "
                f"{trainer.model_id} (base {trainer.base}, {trainer.spec}); use "
                "create_lora_from_state to get a matching training client"
            )
        wrong = [
            k for k, p in trainer.params.items() if k in tensors and tensors[k].shape != p.shape
        ]
        if set(tensors) != set(trainer.params) or wrong:
            raise EngineError(
                f"checkpoint {path!r} is unreadable for model_id {trainer.model_id}: "
                f"{self.dir(path) / 'adapter_model.safetensors'} holds other adapter tensors "
                f"than its meta.json's LoRA config ({spec}) makes"
                + (f" (tensor {wrong[0]!r} has another shape)" if wrong else "")
                + "; it was not written for this model"
            )
        if with_optimizer:
            shapes = {k: p.shape for k, p in trainer.params.items()}
            for key, value in opt.items():
                field, _, name = key.partition("::")
                if name not in shapes or (field != "step" and value.shape != shapes[name]):
                    raise EngineError(
                        f"checkpoint {path!r} is unreadable: "
                        f"{self.dir(path) / 'optimizer.safetensors'} holds tensor {key!r}, "
                        "which is not the optimizer state of its adapter"
                    )
        with torch.no_grad():
            for key, p in trainer.params.items():
                p.copy_(tensors[key])
                p.grad = None
        trainer.optimizer.state.clear()
        trainer.gain = meta_gain(meta, path)
        if with_optimizer:
            for key, p in trainer.params.items():
                if f"exp_avg::{key}" not in opt:
                    continue
                trainer.optimizer.state[p] = {
                    "step": opt[f"step::{key}"].clone(),
                    "exp_avg": opt[f"exp_avg::{key}"].to(p.device, p.dtype).clone(),
                    "exp_avg_sq": opt[f"exp_avg_sq::{key}"].to(p.device, p.dtype).clone(),
                }
            trainer.step = int(meta.get("step", 0))
        else:
            trainer.step = 0

    def list(self, model_id: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints of one ``model_id`` or of all, oldest first (see ``Engine.list_checkpoints``).

        Example::

            assert path in [c["tinker_path"] for c in store.list(trainer.model_id)]
        """
        if model_id is not None:
            check_name(model_id, "model_id")
            run_dirs = [self.state_dir / model_id]
        elif self.state_dir.is_dir():
            run_dirs = sorted(p for p in self.state_dir.iterdir() if p.is_dir())
        else:
            run_dirs = []
        out: list[dict[str, Any]] = []
        for run in run_dirs:
            for kind, ctype in CHECKPOINT_TYPES.items():
                folder = run / kind
                if not folder.is_dir():
                    continue
                for ckpt in folder.iterdir():
                    if ckpt.name.startswith(".") or not (ckpt / "meta.json").is_file():
                        continue
                    if not self._stays_inside(ckpt):
                        continue  # a symlink out of the state directory: never listed
                    mtime = (ckpt / "meta.json").stat().st_mtime
                    out.append(
                        {
                            "checkpoint_id": f"{kind}/{ckpt.name}",
                            "checkpoint_type": ctype,
                            "tinker_path": f"tinker://{run.name}/{kind}/{ckpt.name}",
                            "time": _dt.datetime.fromtimestamp(mtime, tz=_dt.UTC).isoformat(),
                            "size_bytes": _dir_size(ckpt),
                            "_mtime": mtime,
                        }
                    )
        out.sort(key=lambda c: (c["_mtime"], c["tinker_path"]))
        for c in out:
            del c["_mtime"]
        return out

    def delete(self, path: str) -> None:
        """Delete a checkpoint (EngineError(user) if there is none); forget its snapshot.

        Example::

            doomed = store.write(trainer, "sampler_weights", "a", None, with_optimizer=False)
            store.delete(doomed)
        """
        target = self.dir(path)
        if not (target / "meta.json").is_file():
            raise EngineError(f"no checkpoint at {path!r}; list them with list_checkpoints")
        trash = Path(tempfile.mkdtemp(prefix=scratch_prefix(".del-"), dir=target.parent))
        target.rename(trash / "x")
        shutil.rmtree(trash, ignore_errors=True)
        self.snapshots.pop(path, None)

    def weights_info(self, path: str) -> dict[str, Any]:
        """``{"base_model", "is_lora", "lora_rank", "train_mlp", "train_attn", "train_unembed"}``.

        The shape of tinker's ``WeightsInfoResponse``: the SDK rebuilds a training
        client from it (``create_training_client_from_state``), so the LoRA flags of
        the run that saved the checkpoint come back exactly.

        Example::

            assert store.weights_info(path)["train_unembed"] is True
        """
        meta = self.meta(path)
        spec = LoraSpec.from_json(meta["lora"])
        return {
            "base_model": meta["base_model"],
            "is_lora": True,
            "lora_rank": spec.rank,
            "train_mlp": spec.train_mlp,
            "train_attn": spec.train_attn,
            "train_unembed": spec.train_unembed,
        }
