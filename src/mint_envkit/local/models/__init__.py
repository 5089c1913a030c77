"""Base models of the embedded backend: built-in tiny models, SmolLM2, local HF and GGUF models.

Modules: :mod:`~mint_envkit.local.models.common` (the loaded-model record,
errors, device and threads), :mod:`~mint_envkit.local.models.tiny` (the
random tiny Qwen3 models), :mod:`~mint_envkit.local.models.gguf` (GGUF files,
dequantized once and cached; the built-in SmolLM2) and
:mod:`~mint_envkit.local.models.loader` (:func:`load_base_model`).

Example::

    from mint_envkit.local.models.loader import load_base_model

    loaded = load_base_model("mint-envkit/tiny-qwen3-small")
    assert loaded.model.config.hidden_size == 64
    loaded.tokenizer_dir             # '/home/me/.cache/mint_envkit/models/tiny-qwen3-small-...'
    assert "/models/tiny-qwen3-small-" in loaded.tokenizer_dir
"""
