"""LoRA adapters on a shared base model: create, drop, load snapshots, the merged sampling copy.

Every training client is a named peft adapter on its base model's one peft
wrapper (``set_adapter`` switches between them). To sample a snapshot, a small
float32 base model (up to ``MERGED_COPY_MAX_PARAMS``) keeps a plain merged copy
whose adapted layers hold ``W + scale * B @ A``; any other one copies the snapshot
into a scratch adapter ("slot") of the same LoRA shape and samples through peft.

Why float32 only: a merged bf16 weight cannot hold ``W + B @ A`` when the update is
under half a bf16 rounding step of ``W`` (most LoRA updates, early in training), so
a merged bf16 copy silently drops part of every update while the learner (peft, the
delta in fp32 beside the bf16 base) keeps it: on SmolLM2-135M the sampler's
logprobs fell 0.30 nats/token behind the learner's after 5 SFT steps (issue 21).
Sampling through peft computes exactly what the learner computes, by construction.
In float32 the merge rounds at ~1e-7 relative, far below the 1e-4 promise.

Tied embeddings: peft adds an ``lm_head`` delta to the output only, the input
embedding stays the base one. The merged copy therefore unties its output layer
(its own copy of the shared matrix) before any delta is merged into it, so it
computes what the learner computes.

Example::

    import torch

    from mint_envkit.local.engine import adapters
    from mint_envkit.local.engine.records import LoraSpec

    # the package example's base model state and sampler snapshot
    fresh = adapters.new_trainer(state, LoraSpec(rank=4), seed=0)  # a second adapter on it
    ids = torch.tensor([[2044, 10, 11]])
    with torch.no_grad(), adapters.use_sampler(state, snap) as model:
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, 3, 2048)
"""

from __future__ import annotations

import contextlib
import copy
import os
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from .inputs import is_int
from .records import LORA_ALPHA, BaseModelState, EngineError, LoraSpec, Snapshot, Trainer

MERGED_COPY_MAX_PARAMS = 100_000_000
"""Base float32 models up to this size keep a merged plain copy for sampling.

The copy shares the base weights except the layers a snapshot adapts, which need
their own (about 0.8x the model's size when every linear layer is adapted). It pays
where peft's per-layer overhead dominates (the tiny models: sampling about 3x faster);
SmolLM2-135M samples through peft (issue 21: the demo's peak RSS; docs/benchmarks.md)."""


def lora_spec(
    rank: Any, seed: Any, *, train_mlp: Any, train_attn: Any, train_unembed: Any
) -> LoraSpec:
    """The LoRA shape of a ``create_lora`` call, its arguments checked (EngineError naming one).

    Example::

        assert lora_spec(8, 0, train_mlp=True, train_attn=True, train_unembed=False).rank == 8
    """
    if not is_int(rank) or rank < 1 or rank > 4096:
        raise EngineError(f"LoRA rank must be an integer from 1 to 4096, got {rank!r}")
    if seed is not None and not is_int(seed):
        raise EngineError(f"seed must be an integer or None, got {seed!r}")
    flags = {"train_mlp": train_mlp, "train_attn": train_attn, "train_unembed": train_unembed}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise EngineError(f"{key} must be true or false, got {value!r}")
    if not (train_mlp or train_attn or train_unembed):
        raise EngineError(
            "at least one of train_mlp, train_attn, train_unembed must be true "
            "(otherwise the LoRA adapter has nothing to train)"
        )
    return LoraSpec(rank=rank, **flags)


def adapter_params(base: BaseModelState, adapter: str) -> dict[str, torch.nn.Parameter]:
    """The parameters of one adapter, keyed by name without the adapter's name in it.

    Example::

        adapter_params(state, trainer.adapter)  # {'base_model.model....lora_A.weight': ...}
        assert adapter_params(state, trainer.adapter).keys() == trainer.params.keys()
    """
    marker = f".{adapter}."
    params = {
        name.replace(marker, "."): p for name, p in base.peft.named_parameters() if marker in name
    }
    if not params:
        raise EngineError(f"adapter {adapter} has no parameters", "server")
    return params


def _add_adapter(base: BaseModelState, adapter: str, spec: LoraSpec, seed: int) -> None:
    from peft import get_peft_model

    config = spec.peft_config()
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)
        torch.manual_seed(seed)
        if base.peft is None:
            _make_merged_copy(base)
            base.peft = get_peft_model(base.loaded.model, config, adapter_name=adapter)
        else:
            base.peft.add_adapter(adapter, config)
    base.loaded.model.eval()


def _make_merged_copy(base: BaseModelState) -> None:
    """Keep a plain copy of a small float32 base model for fast sampling (``base.merged``).

    The copy shares every parameter with the base model (no memory) until a snapshot
    adapts a layer: that layer then gets its own weight, ``W + scale * B @ A``
    (:func:`_merge_into_copy`), and gives it back when a snapshot leaves it alone.
    """
    model = base.loaded.model
    if not merges_exactly(model):
        return  # bf16 / fp16: a merged weight would drop small updates; sample through peft
    n_params = sum(p.numel() for p in model.parameters())
    if n_params > MERGED_COPY_MAX_PARAMS:
        return  # a large model samples through peft rather than double its memory
    shared: dict[int, Any] = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    merged = copy.deepcopy(model, memo=shared).eval()
    base.merged = merged
    base.merged_content = "base"


def merges_exactly(model: Any) -> bool:
    """Whether a merged copy of ``model`` keeps every LoRA update (float32 weights only).

    Example::

        assert merges_exactly(state.loaded.model)  # float32 (on CPU): a merged copy
        assert not merges_exactly(torch.nn.Linear(2, 2).to(torch.bfloat16))  # sample via peft
    """
    return all(p.dtype == torch.float32 for p in model.parameters())


def _base_weight(base: BaseModelState, path: str) -> torch.nn.Parameter:
    """The base model's own weight of layer ``path`` (under peft: its ``base_layer``)."""
    layer = base.loaded.model.get_submodule(path)
    return getattr(layer, "base_layer", layer).weight


def _merge_into_copy(base: BaseModelState, snap: Snapshot) -> None:
    modules = dict(base.merged.named_modules())
    deltas: dict[str, tuple[torch.Tensor, torch.Tensor, float]] = {}
    if snap.tensors is not None and snap.spec is not None and not snap.adds_nothing:
        scale = LORA_ALPHA / snap.spec.rank
        for key, a in snap.tensors.items():
            if ".lora_A." not in key and not key.endswith(".lora_A.weight"):
                continue
            path = key.removeprefix("base_model.model.").removesuffix(".lora_A.weight")
            deltas[path] = (snap.tensors[key.replace("lora_A", "lora_B")], a, scale)
    with torch.no_grad():
        for path in list(base.merged_originals):
            if path not in deltas:  # back to the shared base weight: no copy, no drift
                modules[path].weight = _base_weight(base, path)
                del base.merged_originals[path]
        for path, (b, a, scale) in deltas.items():
            layer, weight = modules[path], _base_weight(base, path)
            delta = (b.to(weight.dtype) @ a.to(weight.dtype)) * scale
            if path in base.merged_originals:  # its own weight already: W + delta into it
                torch.add(weight, delta, out=layer.weight)
            else:  # a tied output layer is untied here: the input embedding stays the base's
                layer.weight = torch.nn.Parameter(weight + delta, requires_grad=False)
                base.merged_originals[path] = weight


def activate(base: BaseModelState, adapter: str) -> None:
    """Make ``adapter`` the one peft computes with.

    Example::

        activate(state, trainer.adapter)
        assert state.peft.active_adapter == trainer.adapter
    """
    if base.peft.active_adapter != adapter:
        base.peft.set_adapter(adapter)


def new_trainer(base: BaseModelState, spec: LoraSpec, seed: int | None) -> Trainer:
    """A new training client: a fresh adapter (seeded init, B = 0) and its AdamW optimizer.

    Example::

        trainer = new_trainer(state, LoraSpec(rank=8), seed=0)
        assert trainer.step == 0 and trainer.adapter == "t_" + trainer.model_id.replace("-", "")
    """
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    model_id = str(uuid.uuid4())
    adapter = "t_" + model_id.replace("-", "")
    _add_adapter(base, adapter, spec, int(seed) % (2**63))
    params = adapter_params(base, adapter)
    optimizer = torch.optim.AdamW(list(params.values()), lr=0.0, foreach=False)
    return Trainer(
        model_id=model_id,
        base=base.loaded.name,
        spec=spec,
        adapter=adapter,
        params=params,
        optimizer=optimizer,
    )


def drop_trainer(base: BaseModelState, trainer: Trainer) -> None:
    """Free a training client's optimizer state and delete its adapter (peft keeps its last).

    Example::

        doomed = new_trainer(state, LoraSpec(rank=2), seed=0)
        drop_trainer(state, doomed)
        assert doomed.adapter not in state.peft.peft_config
    """
    trainer.optimizer.state.clear()
    if len(base.peft.peft_config) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "active adapter deleted"
            base.peft.delete_adapter(trainer.adapter)
    # else: peft cannot delete its last adapter; it stays, unused.


@contextlib.contextmanager
def use_snapshot(base: BaseModelState, snap: Snapshot) -> Iterator[Any]:
    """Make the base model compute with the snapshot's weights (through peft); yield the model.

    Example::

        with torch.no_grad(), use_snapshot(state, snap) as model:
            model(input_ids=ids)
    """
    model = base.loaded.model
    if snap.spec is None or snap.adds_nothing:  # adds_nothing: also the base itself
        if base.peft is None:
            yield model
        else:
            with base.peft.disable_adapter():
                yield model
        return
    slot = base.slots.get(snap.spec)
    if slot is None:
        slot = f"s{len(base.slots)}_{uuid.uuid4().hex[:8]}"
        _add_adapter(base, slot, snap.spec, 0)
        base.slots[snap.spec] = slot
        base.slot_params[slot] = adapter_params(base, slot)
    params = base.slot_params[slot]
    if base.slot_content.get(slot) != snap.key:
        if set(params) != set(snap.tensors):
            raise EngineError(
                f"weights from {snap.source} do not fit base model {snap.base} "
                "(adapter tensor names differ)"
            )
        with torch.no_grad():
            for key, p in params.items():
                p.copy_(snap.tensors[key])
        base.slot_content[slot] = snap.key
    activate(base, slot)
    yield model


@contextlib.contextmanager
def use_sampler(base: BaseModelState, snap: Snapshot) -> Iterator[Any]:
    """The model to sample ``snap`` with: the merged copy when there is one, else peft.

    Example::

        with torch.no_grad(), use_sampler(state, snap) as model:
            model(input_ids=ids)
    """
    if base.merged is None:
        with use_snapshot(base, snap) as model:
            yield model
        return
    want = "base" if snap.adds_nothing else snap.key
    if base.merged_content != want:
        _merge_into_copy(base, snap)
        base.merged_content = want
    yield base.merged
