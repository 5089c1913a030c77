"""The one place the engine meets version-specific ``transformers`` API: the KV cache's name.

``transformers`` 4.51 to 5.2x pass and return the KV cache as ``past_key_values``;
later 5.x releases renamed it ``cache`` (in the forward keyword and in the output
record; the old name warns, and is due to go in 5.40). The engine asks the model
which name its ``forward`` takes and reads the output field of that name, so it
runs on the whole declared range (``transformers>=4.51``). Everything else the
engine uses is stable across it: ``use_cache``, ``logits_to_keep`` (4.50+),
``position_ids``, ``attention_mask`` and ``Cache.batch_select_indices``.

Example::

    import torch

    from mint_envkit.local.engine.hf_compat import cache_of, with_cache

    model = state.loaded.model  # the tiny base model the package's example loaded
    ids, next_ids = torch.tensor([[2044, 10, 11]]), torch.tensor([[12]])
    out = model(input_ids=ids, use_cache=True)
    out = model(input_ids=next_ids, use_cache=True, **with_cache(model, cache_of(out)))
    assert out.logits.shape == (1, 1, 2048)
"""

from __future__ import annotations

import inspect
from typing import Any

_NAMES = ("cache", "past_key_values")
_KEYWORDS: dict[type, str] = {}


def cache_keyword(model: Any) -> str:
    """The keyword ``model.forward`` takes its KV cache by: ``"cache"`` or ``"past_key_values"``.

    Example::

        cache_keyword(model)  # 'past_key_values' on transformers 4.51, 'cache' on 5.24
        assert cache_keyword(model) in ("cache", "past_key_values")
    """
    kind = type(model)
    found = _KEYWORDS.get(kind)
    if found is None:
        params = inspect.signature(model.forward).parameters
        found = next((name for name in _NAMES if name in params), "past_key_values")
        _KEYWORDS[kind] = found
    return found


def with_cache(model: Any, cache: Any) -> dict[str, Any]:
    """The keyword arguments that hand ``cache`` to ``model``'s forward.

    Example::

        cache = cache_of(model(input_ids=ids, use_cache=True))
        model(input_ids=next_ids, use_cache=True, **with_cache(model, cache))
    """
    return {cache_keyword(model): cache}


def cache_of(output: Any) -> Any:
    """The KV cache a forward with ``use_cache=True`` returned (``None`` when there is none).

    Reads the output record's own field, never a deprecated alias (which would warn).

    Example::

        cache = cache_of(model(input_ids=ids, use_cache=True))
        assert cache is not None
    """
    fields = getattr(type(output), "__dataclass_fields__", {})
    for name in _NAMES:
        if name in fields:
            return getattr(output, name)
    raise AttributeError(
        f"{type(output).__name__} has neither 'cache' nor 'past_key_values'; this transformers "
        "version is not supported by the engine (it needs a causal LM output with a KV cache)"
    )
