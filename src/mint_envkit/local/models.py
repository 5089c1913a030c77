"""Base models of the embedded backend: the built-in tiny Qwen3 models and local HF models.

Two kinds of names are understood:

- ``"mint-envkit/tiny-qwen3"`` (about 5M parameters: hidden 256, 6 layers,
  4 query / 2 key-value heads, head_dim 64, intermediate 768) and
  ``"mint-envkit/tiny-qwen3-small"`` (hidden 64, 2 layers, 2 / 1 heads,
  intermediate 192; for tests). Both use the Qwen3 architecture of
  ``transformers`` with the tiny tokenizer of :mod:`mint_envkit.rendering.tokenizer`
  (2048 tokens), and are initialised from a fixed seed with an explicit
  ``torch.Generator`` on CPU in fp32, so the same recipe gives the same weights,
  bit for bit, in any process. The first build is saved as an ordinary Hugging
  Face model directory (safetensors + tokenizer files) under
  ``cache_dir()/models/<name>-<fingerprint>``; later loads read that directory.
- anything else: a local model directory or a hub id already in the local
  Hugging Face cache, loaded with ``local_files_only=True``. A model that is not
  available raises :class:`~mint_envkit.local.engine.EngineError` naming it; no
  other model is ever substituted.

Output-layer initialisation of the tiny models: the ``lm_head`` rows are drawn
with standard deviation ``1 / sqrt(hidden_size)`` instead of the usual 0.02.
After the final RMSNorm every hidden state has norm about ``sqrt(hidden)``, so
this makes the initial logits have standard deviation about 1 (instead of
0.32 at hidden 256 and 0.16 at hidden 64) and lets the largest reachable logit
margin grow from ``0.02 * hidden`` (5.1 at hidden 256: a single token can never
pass ~7% probability) to ``sqrt(hidden)`` (16 at hidden 256). With it a toy
"make token X first" reward is learnable by LoRA on attention and MLP alone,
and faster still with ``train_unembed``. The initial distribution is still
broad (entropy close to that of a uniform one), so sampling explores.

The end-of-turn token ``<|im_end|>`` gets an output row 6 times larger than
the others, so the untrained tiny model ends a reply now and then instead of
almost never (1 token in 2048): measured on the arithmetic prompt, 10 of 16
replies sampled at temperature 1 ended within 32 tokens (mean length 14.7),
against 0 of 16 without the boost. Smoke runs then exercise the whole path
(stop token, parse, score), and the RL signal is not constant from the start.

Example::

    from mint_envkit.local.models import load_base_model

    loaded = load_base_model("mint-envkit/tiny-qwen3-small")
    loaded.model.config.hidden_size  # 64
    loaded.tokenizer_dir             # '/home/me/.cache/mint_envkit/models/tiny-qwen3-small-...'
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs
import torch

from mint_envkit.errors import MintEnvkitError
from mint_envkit.rendering.tokenizer import (
    TINY_MODEL_NAME,
    TINY_MODEL_NAMES,
    cache_dir,
    tiny_tokenizer_dir,
)

__all__ = [
    "TINY_SPECS",
    "LoadedModel",
    "build_tiny_model",
    "default_device",
    "load_base_model",
    "pin_threads",
    "tiny_model_dir",
]

_TINY_MODEL_VERSION = "v1"
_TINY_MODEL_SEED = 1_234_567
_TINY_VOCAB = 2048

TINY_SPECS: dict[str, dict[str, Any]] = {
    TINY_MODEL_NAME: {
        "hidden_size": 256,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "intermediate_size": 768,
    },
    "mint-envkit/tiny-qwen3-small": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "intermediate_size": 192,
    },
}
"""Architecture of each built-in tiny model (the rest of the Qwen3Config is shared)."""

assert set(TINY_SPECS) == set(TINY_MODEL_NAMES)  # internal invariant, not user input


class ModelLoadError(MintEnvkitError):
    """A base model cannot be found or loaded; the engine turns it into a user EngineError.

    Example::

        try:
            load_base_model("someone/not-downloaded")
        except ModelLoadError as err:
            print(err)  # model 'someone/not-downloaded' is not available locally: ...
    """


@attrs.frozen
class LoadedModel:
    """A base model in memory with what the engine needs to know about it.

    Attributes:
        name: the name it was asked for (a tiny name, a hub id, or an absolute directory).
        model: the ``transformers`` causal LM, in eval mode, on ``device``.
        model_dir: the directory it was loaded from.
        tokenizer_dir: an absolute directory that ``AutoTokenizer.from_pretrained`` loads offline.
        vocab_size: the number of rows of the output layer (valid token ids are below it).
        arch: ``config.model_type`` (``"qwen3"`` for the tiny models).
        device: the torch device.

    Example::

        loaded = load_base_model("mint-envkit/tiny-qwen3-small")
        loaded.vocab_size  # 2048
    """

    name: str
    model: Any
    model_dir: str
    tokenizer_dir: str
    vocab_size: int
    arch: str
    device: torch.device


def default_device(device: str | None = None) -> tuple[torch.device, torch.dtype]:
    """The device and dtype models run in: CUDA in bf16 when available, else CPU in fp32.

    Example::

        default_device()       # (device(type='cpu'), torch.float32) on a machine without a GPU
        default_device("cpu")  # forced
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    return dev, dtype


def pin_threads(num_threads: int | None = None) -> int:
    """Pin torch's intra-op thread count and return it.

    Default: :func:`pin_threads_default` (``$MINT_ENVKIT_NUM_THREADS``, else 1).
    A fixed thread count keeps CPU reductions, and so results, reproducible.

    Example::

        pin_threads()   # 1
        pin_threads(2)
    """
    n = max(1, int(num_threads if num_threads is not None else pin_threads_default()))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


_EOS_ROW_SCALE = 6.0
"""How much larger the ``<|im_end|>`` output row is (see the module docstring)."""


def pin_threads_default() -> int:
    """The thread count used when none is given: ``MINT_ENVKIT_NUM_THREADS``, else 1 on CPU.

    One thread: on a 2-core machine whose cores are shared with other work,
    torch with one thread per core was measured 10-15x slower than with one
    thread on the tiny models (OpenMP threads wait on each other), and about
    as fast when the machine was idle. Raise it (``--threads``) for a real
    model on CPU.

    Example::

        pin_threads_default()  # 1
    """
    env = os.environ.get("MINT_ENVKIT_NUM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ModelLoadError(
                f"MINT_ENVKIT_NUM_THREADS must be a whole number, got {env!r}"
            ) from None
    return 1


def _tiny_config(name: str) -> Any:
    from transformers import Qwen3Config

    spec = TINY_SPECS[name]
    return Qwen3Config(
        vocab_size=_TINY_VOCAB,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        rms_norm_eps=1e-6,
        initializer_range=0.02,
        bos_token_id=2043,
        eos_token_id=2045,
        pad_token_id=2043,
        **spec,
    )


def _init_tiny_weights(model: torch.nn.Module, seed: int) -> None:
    """Overwrite every parameter from one seeded generator, in a fixed order.

    Norm weights are 1, the output layer has std ``1/sqrt(hidden)`` (see the
    module docstring), every other matrix std 0.02.
    """
    hidden = model.config.hidden_size
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                std = 1.0 / math.sqrt(hidden) if name.startswith("lm_head") else 0.02
                values = torch.empty(param.shape, dtype=torch.float32)
                values.normal_(0.0, std, generator=gen)
                param.copy_(values)
        eos = model.config.eos_token_id
        model.lm_head.weight[eos] *= _EOS_ROW_SCALE


def build_tiny_model(name: str = TINY_MODEL_NAME, *, seed: int = _TINY_MODEL_SEED) -> Any:
    """Build a tiny model from scratch on CPU in fp32 (no cache); deterministic in ``seed``.

    Example::

        a = build_tiny_model("mint-envkit/tiny-qwen3-small")
        b = build_tiny_model("mint-envkit/tiny-qwen3-small")
        all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))  # True
    """
    from transformers import Qwen3ForCausalLM

    if name not in TINY_SPECS:
        raise ModelLoadError(f"{name!r} is not a built-in tiny model; known: {sorted(TINY_SPECS)}")
    config = _tiny_config(name)
    config.dtype = torch.float32
    model = Qwen3ForCausalLM(config).to(dtype=torch.float32)
    _init_tiny_weights(model, seed)
    model.eval()
    return model


def _fingerprint(name: str) -> str:
    spec = {
        "version": _TINY_MODEL_VERSION,
        "name": name,
        "seed": _TINY_MODEL_SEED,
        "config": TINY_SPECS[name],
        "vocab": _TINY_VOCAB,
        "tokenizer": tiny_tokenizer_dir().name,
        "code": inspect.getsource(_tiny_config) + inspect.getsource(_init_tiny_weights),
        "eos_row_scale": _EOS_ROW_SCALE,
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def check_tokenizer_path(path: str) -> str:
    """Return ``path`` if the tinker SDK can load a tokenizer from it, else raise.

    ``tinker``'s ``get_tokenizer`` rewrites a model name with exactly two ``/``
    to ``org/model`` and cuts a name at the first ``:``; a directory path like
    that would be misread.

    Example::

        check_tokenizer_path("/home/me/.cache/mint_envkit/models/tiny-qwen3-abc")  # fine
        check_tokenizer_path("/data/tok")  # raises ModelLoadError
    """
    if path.count("/") == 2 or ":" in path:
        raise ModelLoadError(
            f"tokenizer directory {path!r} would be misread by the tinker SDK (a path with "
            "exactly two '/' or with ':'); set MINT_ENVKIT_CACHE to a deeper directory "
            "without ':' (for example /tmp/mint/cache), or move the model directory."
        )
    return path


def tiny_model_dir(name: str = TINY_MODEL_NAME) -> Path:
    """Build (once) and return the cached Hugging Face directory of a tiny model.

    The directory holds ``config.json``, ``model.safetensors`` and the tokenizer
    files; it is written to a temporary directory first and renamed into place.

    Example::

        d = tiny_model_dir("mint-envkit/tiny-qwen3-small")
        sorted(p.name for p in d.iterdir())[:2]  # ['chat_template.jinja', 'config.json']
    """
    if name not in TINY_SPECS:
        raise ModelLoadError(f"{name!r} is not a built-in tiny model; known: {sorted(TINY_SPECS)}")
    root = cache_dir() / "models"
    target = root / f"{name.split('/')[-1]}-{_fingerprint(name)}"
    check_tokenizer_path(str(target))
    if (target / "model.safetensors").is_file() and (target / "config.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        model = build_tiny_model(name)
        model.save_pretrained(str(tmp), safe_serialization=True)
        tok_dir = tiny_tokenizer_dir()
        for item in tok_dir.iterdir():
            if item.is_file():
                shutil.copy2(item, tmp / item.name)
        try:
            tmp.rename(target)
        except OSError:
            # Another process won the race; its build is identical.
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _is_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or os.path.isdir(os.path.expanduser(name))


def resolve_model_name(name: str) -> str:
    """The key a base model is kept under: tiny names and hub ids as is, directories absolute.

    Example::

        resolve_model_name("mint-envkit/tiny-qwen3")  # 'mint-envkit/tiny-qwen3'
        resolve_model_name("./my-model")              # '/home/me/project/my-model'
    """
    if name in TINY_MODEL_NAMES:
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


def load_base_model(
    name: str, *, device: str | torch.device | None = None, dtype: torch.dtype | None = None
) -> LoadedModel:
    """Load a base model: a tiny built-in one, a local directory, or a cached hub id.

    Never downloads and never substitutes another model.

    Raises:
        ModelLoadError: the model is not available locally or does not load; the message
            names it and suggests ``mint-envkit/tiny-qwen3``.

    Example::

        loaded = load_base_model("mint-envkit/tiny-qwen3")
        loaded = load_base_model("/models/Qwen3-0.6B")       # a local directory
        loaded = load_base_model("Qwen/Qwen3-0.6B")          # only if already in the HF cache
    """
    if not isinstance(name, str) or not name.strip():
        raise ModelLoadError(
            f"base model name must be a non-empty string, got {name!r}; "
            f"use {TINY_MODEL_NAME!r} for the built-in tiny model."
        )
    dev, default_dtype = default_device(None if device is None else str(device))
    dtype = dtype or default_dtype
    key = resolve_model_name(name)
    import transformers.utils.logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return _load(name, key, dev, dtype)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _load(name: str, key: str, dev: torch.device, dtype: torch.dtype) -> LoadedModel:
    from transformers import AutoModelForCausalLM, Qwen3ForCausalLM

    if key in TINY_MODEL_NAMES:
        model_dir = str(tiny_model_dir(key))
        model = Qwen3ForCausalLM.from_pretrained(model_dir, dtype=dtype, local_files_only=True)
        tok_dir = model_dir
    else:
        if _is_path(name):
            if not Path(key).is_dir() or not (Path(key) / "config.json").is_file():
                raise ModelLoadError(
                    f"model directory {name!r} does not exist or has no config.json; pass a "
                    f"directory saved with save_pretrained, a hub id already in the local "
                    f"Hugging Face cache, or the built-in {TINY_MODEL_NAME!r}."
                )
            model_dir = key
        else:
            try:
                model_dir = _hub_snapshot_dir(key)
            except Exception as err:
                raise ModelLoadError(
                    f"model {name!r} is not available locally: it is neither a directory nor "
                    f"in the local Hugging Face cache, and the local backend never downloads. "
                    f"Download it first (huggingface-cli download {name}), pass a local "
                    f"directory, or use the built-in {TINY_MODEL_NAME!r}."
                ) from err
        try:
            model = AutoModelForCausalLM.from_pretrained(
                model_dir, dtype=dtype, local_files_only=True
            )
        except Exception as err:
            raise ModelLoadError(
                f"model {name!r} (from {model_dir}) could not be loaded as a causal LM "
                f"({type(err).__name__}: {err}); use a Hugging Face causal LM directory "
                f"or the built-in {TINY_MODEL_NAME!r}."
            ) from err
        tok_dir = str(Path(model_dir).resolve())
        has_tok = any(
            (Path(tok_dir) / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")
        )
        if not has_tok:
            raise ModelLoadError(
                f"model {name!r} has no tokenizer files in {tok_dir}; save the tokenizer "
                f"beside the model (tokenizer.save_pretrained(dir))."
            )
    check_tokenizer_path(tok_dir)
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
        tokenizer_dir=tok_dir,
        vocab_size=vocab,
        arch=str(getattr(model.config, "model_type", "unknown")),
        device=dev,
    )
