"""The built-in tiny Qwen3 models of the embedded backend (random weights, built from a seed).

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

Output-layer initialisation: the ``lm_head`` rows are drawn with standard
deviation ``1 / sqrt(hidden_size)`` instead of the usual 0.02. After the final
RMSNorm every hidden state has norm about ``sqrt(hidden)``, so this makes the
initial logits have standard deviation about 1 (instead of 0.32 at hidden 256
and 0.16 at hidden 64) and lets the largest reachable logit margin grow from
``0.02 * hidden`` (5.1 at hidden 256: a single token can never pass ~7%
probability) to ``sqrt(hidden)`` (16 at hidden 256). With it a toy "make token
X first" reward is learnable by LoRA on attention and MLP alone, and faster
still with ``train_unembed``. The initial distribution is still broad (entropy
close to that of a uniform one), so sampling explores.

The end-of-turn token ``<|im_end|>`` gets an output row 6 times larger than
the others, so the untrained tiny model ends a reply now and then instead of
almost never (1 token in 2048): measured on the arithmetic prompt, 10 of 16
replies sampled at temperature 1 ended within 32 tokens (mean length 14.7),
against 0 of 16 without the boost. Smoke runs then exercise the whole path
(stop token, parse, score), and the RL signal is not constant from the start.

Example::

    from mint_envkit.local.models.tiny import build_tiny_model, tiny_model_dir

    model = build_tiny_model("mint-envkit/tiny-qwen3-small")
    assert model.config.hidden_size == 64
    tiny_model_dir("mint-envkit/tiny-qwen3-small")  # ~/.cache/mint_envkit/models/tiny-qwen3-small-...
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import shutil
from pathlib import Path
from typing import Any

import torch

from mint_envkit.rendering.tokenizer import (
    TINY_MODEL_NAME,
    TINY_MODEL_NAMES,
    cache_dir,
    tiny_tokenizer_dir,
)

from .common import ModelLoadError, build_cached_dir, check_tokenizer_path

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


_EOS_ROW_SCALE = 6.0
"""How much larger the ``<|im_end|>`` output row is (see the module docstring)."""


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
        assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))  # fixed seed
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


def tiny_model_dir(name: str = TINY_MODEL_NAME) -> Path:
    """Build (once) and return the cached Hugging Face directory of a tiny model.

    The directory holds ``config.json``, ``model.safetensors`` and the tokenizer
    files; it is written to a temporary directory first and renamed into place.

    Example::

        d = tiny_model_dir("mint-envkit/tiny-qwen3-small")
        assert sorted(p.name for p in d.iterdir())[:2] == ["chat_template.jinja", "config.json"]
    """
    if name not in TINY_SPECS:
        raise ModelLoadError(f"{name!r} is not a built-in tiny model; known: {sorted(TINY_SPECS)}")
    target = cache_dir() / "models" / f"{name.split('/')[-1]}-{_fingerprint(name)}"
    check_tokenizer_path(str(target))

    def build(tmp: Path) -> None:
        model = build_tiny_model(name)
        model.save_pretrained(str(tmp), safe_serialization=True)
        for item in tiny_tokenizer_dir().iterdir():
            if item.is_file():
                shutil.copy2(item, tmp / item.name)

    return build_cached_dir(target, build, done="model.safetensors")
