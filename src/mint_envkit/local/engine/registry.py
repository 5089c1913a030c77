"""What an engine holds in memory, by id: base models, training clients, sampler snapshots.

Lookups raise :class:`EngineError` (user) naming the unknown id and how to get one.

Example::

    from mint_envkit.local.engine.registry import Registry

    registry = Registry(device=None, num_threads=1)  # what an Engine keeps as .registry
    base = registry.base("mint-envkit/tiny-qwen3-small")  # loaded on first use
    assert registry.base("mint-envkit/tiny-qwen3-small") is base  # then kept
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from mint_envkit.local.models.common import ModelLoadError, pin_threads
from mint_envkit.local.models.loader import load_base_model, resolve_model_name
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME

from .records import BaseModelState, EngineError, Snapshot, Trainer

_T = TypeVar("_T")


def _find(table: dict[str, _T], key: Any, what: str, how: str) -> _T:
    found = table.get(key) if isinstance(key, str) else None
    if found is None:
        raise EngineError(f"unknown {what} {key!r}; {how}")
    return found


class Registry:
    """Base models, training clients and sampler snapshots by id (internal; not a stable API).

    Example::

        assert engine.registry.trainers[model_id].step == 1  # the package example's one step
    """

    def __init__(self, *, device: str | None, num_threads: int) -> None:
        self.device = device
        self.num_threads = num_threads
        self.bases: dict[str, BaseModelState] = {}
        self.trainers: dict[str, Trainer] = {}
        self.samplers: dict[str, Snapshot] = {}

    def base(self, name: Any) -> BaseModelState:
        """The base model ``name``, loaded on first use (EngineError(user) if unavailable).

        Example::

            assert registry.base("mint-envkit/tiny-qwen3").loaded.vocab_size == 2048
        """
        if not isinstance(name, str) or not name.strip():
            raise EngineError(
                f"base_model must be a non-empty model name, got {name!r}; try {TINY_MODEL_NAME!r}"
            )
        key = resolve_model_name(name)
        base = self.bases.get(key)
        if base is None:
            pin_threads(self.num_threads)
            try:
                loaded = load_base_model(key, device=self.device)
            except ModelLoadError as err:
                raise EngineError(str(err), "user") from err
            base = BaseModelState(loaded=loaded)
            self.bases[key] = base
        return base

    def trainer(self, model_id: Any) -> tuple[BaseModelState, Trainer]:
        """A training client and its base model.

        Example::

            state, trainer = engine.registry.trainer(model_id)
            assert trainer.model_id == model_id
        """
        how = "create one with create_lora (or create_lora_from_state) first; "
        trainer = _find(
            self.trainers, model_id, "model_id", how + "unloaded models cannot be used again"
        )
        return self.bases[trainer.base], trainer

    def sampler(self, sampler_id: Any) -> tuple[BaseModelState, Snapshot]:
        """A sampler snapshot and its base model.

        Example::

            state, snap = engine.registry.sampler(sampler_id)
            assert snap.base == state.loaded.name == "mint-envkit/tiny-qwen3-small"
        """
        how = "create one with save_for_sampler or create_sampler first"
        snap = _find(self.samplers, sampler_id, "sampler_id", how)
        return self.bases[snap.base], snap

    def add_trainer(self, trainer: Trainer) -> str:
        """Register a training client; return its ``model_id``.

        Example::

            from mint_envkit.local.engine import adapters
            from mint_envkit.local.engine.records import LoraSpec

            model_id = registry.add_trainer(adapters.new_trainer(base, LoraSpec(rank=4), seed=0))
            assert registry.trainer(model_id)[0] is base
        """
        self.trainers[trainer.model_id] = trainer
        return trainer.model_id

    def add_sampler(self, snap: Snapshot) -> str:
        """Register a snapshot under a new ``sampler_id``; return it.

        Example::

            sampler_id = registry.add_sampler(snap)  # 'sampler-3f2a...'
            assert sampler_id.startswith("sampler-") and registry.samplers[sampler_id] is snap
        """
        sampler_id = "sampler-" + uuid.uuid4().hex
        self.samplers[sampler_id] = snap
        return sampler_id
