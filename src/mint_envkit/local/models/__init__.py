"""Base models of the embedded backend: built-in tiny models, SmolLM2, local HF and GGUF models.

Modules: :mod:`~mint_envkit.local.models.common` (the loaded-model record,
errors, device and threads), :mod:`~mint_envkit.local.models.tiny` (the
random tiny Qwen3 models), :mod:`~mint_envkit.local.models.gguf` (GGUF files,
dequantized once and cached; the built-in SmolLM2) and
:mod:`~mint_envkit.local.models.loader` (:func:`load_base_model`).

Example::

    from mint_envkit.local.models import load_base_model

    loaded = load_base_model("mint-envkit/tiny-qwen3-small")
    loaded.model.config.hidden_size  # 64
    loaded.tokenizer_dir             # '/home/me/.cache/mint_envkit/models/tiny-qwen3-small-...'
"""

from __future__ import annotations

from .common import (
    LoadedModel,
    ModelLoadError,
    build_cached_dir,
    check_tokenizer_path,
    default_device,
    pin_threads,
    pin_threads_default,
)
from .gguf import (
    SMOLLM2_INSTALL_COMMAND,
    SMOLLM2_MODEL_NAME,
    gguf_model_dir,
    save_dequantized,
    smollm2_gguf_path,
)
from .loader import BUILTIN_MODEL_NAMES, load_base_model, model_source_dir, resolve_model_name
from .tiny import TINY_SPECS, build_tiny_model, tiny_model_dir

__all__ = [
    "BUILTIN_MODEL_NAMES",
    "SMOLLM2_INSTALL_COMMAND",
    "SMOLLM2_MODEL_NAME",
    "TINY_SPECS",
    "LoadedModel",
    "ModelLoadError",
    "build_cached_dir",
    "build_tiny_model",
    "check_tokenizer_path",
    "default_device",
    "gguf_model_dir",
    "load_base_model",
    "model_source_dir",
    "pin_threads",
    "pin_threads_default",
    "resolve_model_name",
    "save_dequantized",
    "smollm2_gguf_path",
    "tiny_model_dir",
]
