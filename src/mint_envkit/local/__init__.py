"""The embedded local backend: a MinT-compatible engine (and server) on this machine.

:class:`Engine` (in :mod:`mint_envkit.local.engine`) holds base models, LoRA
training clients, sampler snapshots and checkpoints, with no HTTP; the server
(:mod:`mint_envkit.local.server`, over :mod:`mint_envkit.local.http`) speaks the
Tinker wire protocol on top of it. Importing this package is cheap: the engine
(and torch) load on first use of a name below.

Example::

    import tempfile
    from mint_envkit.local import Engine, EngineError

    engine = Engine(state_dir=tempfile.mkdtemp())
    model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=8, seed=0)
    assert engine.model_info(model_id)["lora_rank"] == 8
    try:
        engine.model_info("no-such-model")
    except EngineError as err:
        assert err.category == "user"   # "unknown model_id 'no-such-model'; ..."
    else:
        raise AssertionError("an unknown model_id is refused")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mint_envkit.local.engine.core import Engine
    from mint_envkit.local.engine.records import EngineError
    from mint_envkit.local.server import LocalServer

_EXPORTS = {
    "Engine": "mint_envkit.local.engine.core",
    "EngineError": "mint_envkit.local.engine.records",
    "LocalServer": "mint_envkit.local.server",
}
"""Where each public name lives; :func:`__getattr__` imports it on first use."""

__all__ = ["Engine", "EngineError", "LocalServer"]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access, so that importing this package
    loads neither torch nor the web server."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mint_envkit.local' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
