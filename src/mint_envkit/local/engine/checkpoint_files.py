"""Reading a checkpoint's files: inside the state directory, parsed and checked, or named.

A checkpoint folder is trusted no further than its files show. Every file is
opened only when it resolves inside the state directory (a symlink out of it is
refused), ``meta.json`` must be the JSON object mint_envkit writes, and the
adapter tensors must be LoRA factors of the rank ``meta.json`` names, and
every tensor (the optimizer's too) floating point and finite. Anything else raises an
:class:`~mint_envkit.local.engine.records.EngineError` of category ``user``
that names the file and says it is unreadable (the server answers a 4xx), so a
truncated, corrupted or foreign file is never a ``SafetensorError`` of category
``server``. :func:`check_fits` checks the factors against the base model's layers.

Example::

    import shutil

    from mint_envkit.local.engine.checkpoint_files import read_meta, read_tensors

    path = engine.save_state(model_id, "files-demo", kind="sampler")  # the package's engine
    folder = engine.state_dir / path.removeprefix("tinker://")
    meta = read_meta(engine.state_dir, folder, path)
    tensors = read_tensors(engine.state_dir, folder / "adapter_model.safetensors", path)
    assert meta["base_model"] == "mint-envkit/tiny-qwen3-small" and meta["lora"]["rank"] == 8
    broken = folder.parent / "files-demo-broken"
    shutil.copytree(folder, broken)
    (broken / "meta.json").write_text("{not json")
    try:
        read_meta(engine.state_dir, broken, path + "-broken")
    except EngineError as err:
        assert err.category == "user" and "is unreadable" in err.message
    else:
        raise AssertionError("a corrupted meta.json is refused")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .records import EngineError, LoraSpec

A_SUFFIX, B_SUFFIX = ".lora_A.weight", ".lora_B.weight"
"""The key endings of a layer's LoRA factors (peft's names)."""

KEY_PREFIX = "base_model.model."
"""What precedes a layer's module path in an adapter tensor's key (peft's names)."""


def unreadable(path: str, file: Path, why: str) -> EngineError:
    """The error for a checkpoint file that cannot be used: it names the file and the fix.

    Example::

        err = unreadable("tinker://m-1/weights/a", Path("/s/m-1/weights/a/meta.json"), "not JSON")
        assert err.message.startswith("checkpoint 'tinker://m-1/weights/a' is unreadable: ")
    """
    return EngineError(
        f"checkpoint {path!r} is unreadable: {file} is corrupted or was not written by "
        f"mint_envkit ({why}); delete it (mint-envkit checkpoints delete {path}) and save "
        "it again, or use another checkpoint"
    )


def inside(state_dir: Path, file: Path, path: str) -> Path:
    """``file`` resolved, when that stays inside ``state_dir``; a symlink out of it is refused.

    Example::

        assert inside(engine.state_dir, folder / "meta.json", path) == folder / "meta.json"
    """
    real = file.resolve()
    if state_dir not in real.parents:
        raise EngineError(
            f"checkpoint {path!r}: {file} leads out of the state directory {state_dir} (a "
            f"symlink to {real}); checkpoint files are read only inside it, so copy the "
            "checkpoint in instead of linking it"
        )
    return real


def read_meta(state_dir: Path, folder: Path, path: str) -> dict[str, Any]:
    """``meta.json`` of a checkpoint folder, checked: its ``base_model`` and ``lora`` are usable.

    Raises EngineError(user): no checkpoint there ("no checkpoint at ..."), a symlink
    out of the state directory, or an unreadable file.

    Example::

        assert read_meta(engine.state_dir, folder, path)["has_optimizer"] is False
    """
    file = folder / "meta.json"
    if not file.is_file():
        raise EngineError(
            f"no checkpoint at {path!r} (looked in {folder}); list them with list_checkpoints"
        )
    real = inside(state_dir, file, path)
    try:
        meta = json.loads(real.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise unreadable(path, file, f"not JSON: {type(err).__name__}") from None
    if not isinstance(meta, dict):
        raise unreadable(path, file, f"a JSON {type(meta).__name__}, not an object")
    if not isinstance(meta.get("base_model"), str) or not meta["base_model"]:
        raise unreadable(path, file, "base_model is missing")
    try:
        spec = LoraSpec.from_json(meta["lora"])
    except (KeyError, TypeError, ValueError):
        raise unreadable(path, file, "lora is not a LoRA config") from None
    if spec.rank < 1:
        raise unreadable(path, file, f"LoRA rank {spec.rank}")
    return meta


def read_tensors(state_dir: Path, file: Path, path: str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file of a checkpoint (CPU), each floating point and finite.

    Example::

        assert all(key.endswith(("lora_A.weight", "lora_B.weight")) for key in tensors)
    """
    from safetensors.torch import load_file

    if not file.is_file():
        raise unreadable(path, file, "the file is missing")
    real = inside(state_dir, file, path)
    try:
        tensors = load_file(str(real))
    except Exception as err:  # SafetensorError, OSError, ...: the bytes are not a tensor file
        raise unreadable(path, file, f"{type(err).__name__}: {str(err)[:120]}") from None
    for key, value in tensors.items():
        if not value.is_floating_point():
            raise unreadable(path, file, f"tensor {key!r} is {value.dtype}, not floating point")
        if not bool(torch.isfinite(value).all()):
            raise unreadable(path, file, f"tensor {key!r} holds NaN or infinite values")
    return tensors


def check_factors(path: str, file: Path, tensors: dict[str, torch.Tensor], rank: int) -> None:
    """Every tensor is one of a pair of LoRA factors, ``A`` (rank, in) and ``B`` (out, rank).

    Example::

        check_factors(path, folder / "adapter_model.safetensors", tensors, rank=8)
    """
    for key, value in tensors.items():
        if key.endswith(A_SUFFIX):
            partner = key[: -len(A_SUFFIX)] + B_SUFFIX
            shape_ok = value.dim() == 2 and value.shape[0] == rank
        elif key.endswith(B_SUFFIX):
            partner = key[: -len(B_SUFFIX)] + A_SUFFIX
            shape_ok = value.dim() == 2 and value.shape[1] == rank
        else:
            raise unreadable(path, file, f"tensor {key!r} is not a LoRA factor")
        if partner not in tensors:
            raise unreadable(path, file, f"tensor {key!r} has no {partner!r}")
        if not shape_ok:
            raise unreadable(
                path, file, f"tensor {key!r} has shape {list(value.shape)}, not of rank {rank}"
            )


def check_fits(
    path: str, file: Path, tensors: dict[str, torch.Tensor], model: Any, base: str
) -> None:
    """The factors adapt layers ``model`` has, with its shapes (a foreign checkpoint does not).

    ``model`` is the loaded base model (a peft wrapper's layers count by their
    ``base_layer``). Raises EngineError(user) naming the file and the tensor.

    Example::

        file = folder / "adapter_model.safetensors"
        check_fits(path, file, tensors, state.loaded.model, "mint-envkit/tiny-qwen3-small")
    """
    for key, a in tensors.items():
        if not key.endswith(A_SUFFIX):
            continue
        layer_path = key.removeprefix(KEY_PREFIX).removesuffix(A_SUFFIX)
        try:
            layer = model.get_submodule(layer_path)
            weight = getattr(layer, "base_layer", layer).weight
        except AttributeError:
            weight = None
        b = tensors[key[: -len(A_SUFFIX)] + B_SUFFIX]
        if weight is None or weight.dim() != 2 or (b.shape[0], a.shape[1]) != weight.shape:
            have = (
                "has no layer of that name"
                if weight is None
                else f"has it as {'x'.join(str(n) for n in weight.shape)}"
            )
            raise EngineError(
                f"checkpoint {path!r} is unreadable on base model {base}: {file} holds "
                f"tensor {key!r}, which adapts {layer_path!r} as a {b.shape[0]}x{a.shape[1]} "
                f"layer, but the model {have}; it was trained on another model, so use it "
                "with that one"
            )
