"""The embedded local backend: a MinT-compatible engine (and server) on this machine.

:class:`Engine` (in :mod:`mint_envkit.local.engine`) holds base models, LoRA
training clients, sampler snapshots and checkpoints, with no HTTP; the server
(:mod:`mint_envkit.local.server`, over :mod:`mint_envkit.local.http`) speaks the
Tinker wire protocol on top of it. Importing this package is cheap: the engine
(and torch) load on first use of a name below.

Example::

    from mint_envkit.local import Engine, EngineError

    engine = Engine(state_dir="/tmp/mint-state")
    model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=8, seed=0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mint_envkit.local.engine import Engine, EngineError, ForwardOutput, SampledSequence

__all__ = ["Engine", "EngineError", "ForwardOutput", "SampledSequence"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from mint_envkit.local import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'mint_envkit.local' has no attribute {name!r}")
