"""Adapters: mint_envkit envs in other trainers, other libraries' envs in ours.

Each adapter is a module of its own, imported on first use with the extra of its target
(``pip install 'mint-envkit[cookbook]'``, ...), so ``import mint_envkit.adapters`` loads
neither torch nor any target library. What each adapter keeps and loses, with its parity
figures, is in docs/adapters.md.

Example::

    import mint_envkit.adapters

    sorted(mint_envkit.adapters.__all__)   # the adapters, each loaded on first use
"""

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "from_textarena": "mint_envkit.adapters.textarena",
    "from_verifiers": "mint_envkit.adapters.verifiers",
    "to_cookbook": "mint_envkit.adapters.cookbook",
    "to_trl": "mint_envkit.adapters.trl",
}
"""Public name -> the module that defines it (imported on first access)."""

__all__ = ["from_textarena", "from_verifiers", "to_cookbook", "to_trl"]


def __getattr__(name: str) -> Any:
    """Import an adapter's module on first access (PEP 562): its target library is
    imported only then."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mint_envkit.adapters' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
