"""The transformers floor in pyproject.toml is one the engine works with.

The engine reads the KV cache as ``output.cache`` and passes it back as
``cache=`` (``engine/kvcache.py``, ``engine/prefix.py``, the chunked
``compute_logprobs`` of ``engine/sampling.py``): transformers renamed ``past_key_values``
to ``cache`` in 5.24.0 (5.23.0's ``CausalLMOutputWithPast`` still has only
``past_key_values``, and 5.17 fails with ``'CausalLMOutputWithPast' object has
no attribute 'cache'``). It also uses ``logits_to_keep``, ``dtype=`` in
``from_pretrained``, ``Cache.batch_select_indices`` and GGUF loading.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import tomllib
from pathlib import Path

import torch
import transformers
from transformers.modeling_outputs import CausalLMOutputWithPast

ROOT = Path(__file__).resolve().parents[2]


def _floor() -> tuple[int, ...]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if re.match(r"transformers\b", d)]
    match = re.fullmatch(r"transformers>=(\d+(?:\.\d+)*)", spec.replace(" ", ""))
    assert match, f"transformers must be declared with a >= floor, got {spec!r}"
    return tuple(int(x) for x in match.group(1).split("."))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def test_installed_transformers_meets_the_declared_floor():
    floor = _floor()
    assert floor >= (5, 24), (
        f"the engine needs transformers>=5.24 (output.cache), pyproject: {floor}"
    )
    assert _version(transformers.__version__) >= floor, transformers.__version__


def test_the_features_the_engine_uses_exist():
    fields = {f.name for f in dataclasses.fields(CausalLMOutputWithPast)}
    assert "cache" in fields
    forward = inspect.signature(transformers.LlamaForCausalLM.forward).parameters
    assert "cache" in forward and "logits_to_keep" in forward
    assert hasattr(transformers.DynamicCache, "batch_select_indices")
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    assert callable(load_gguf_checkpoint)


def test_incremental_decoding_with_cache_matches_a_full_forward(tied_model_dir):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(tied_model_dir), dtype=torch.float64
    )
    assert next(model.parameters()).dtype == torch.float64
    ids = torch.tensor([[5, 17, 99, 240, 7]])
    with torch.no_grad():
        full = model(input_ids=ids, use_cache=False).logits[:, -1]
        first = model(input_ids=ids[:, :-1], use_cache=True, logits_to_keep=1)
        assert first.logits.shape[1] == 1
        first.cache.batch_select_indices(torch.tensor([0]))
        step = model(input_ids=ids[:, -1:], cache=first.cache, use_cache=True)
    assert torch.allclose(step.logits[:, -1], full, atol=1e-9)
