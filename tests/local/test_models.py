"""Base models of the local backend: the built-in tiny ones and local HF directories."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys

import pytest
import torch

from mint_envkit.local import models
from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import EngineError
from mint_envkit.local.models.common import ModelLoadError, check_tokenizer_path
from mint_envkit.local.models.loader import load_base_model
from mint_envkit.local.models.tiny import build_tiny_model, tiny_model_dir
from mint_envkit.rendering.tokenizer import get_tokenizer

SMALL = "mint-envkit/tiny-qwen3-small"

_HASH_SNIPPET = """
import hashlib, sys
from mint_envkit.local.models.tiny import build_tiny_model
m = build_tiny_model(sys.argv[1])
h = hashlib.sha256()
for name, p in m.state_dict().items():
    h.update(name.encode()); h.update(p.detach().contiguous().numpy().tobytes())
print(h.hexdigest())
"""


def _digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def test_tiny_build_is_bit_identical_in_another_process():
    here = _digest(build_tiny_model(SMALL))
    assert here == _digest(build_tiny_model(SMALL))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _HASH_SNIPPET, SMALL],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == here


def test_tiny_model_shapes_and_output_scale():
    model = build_tiny_model(SMALL)
    cfg = model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size) == (64, 2, 2048)
    assert not cfg.tie_word_embeddings
    assert len(get_tokenizer(SMALL)) == cfg.vocab_size
    std = model.lm_head.weight.std().item()
    assert abs(std - 1 / math.sqrt(cfg.hidden_size)) < 0.01
    assert abs(model.model.embed_tokens.weight.std().item() - 0.02) < 0.002
    body = sum(
        p.numel() for n, p in model.named_parameters() if "embed" not in n and "lm_head" not in n
    )
    assert 50_000 < body < 600_000
    big = models.tiny.TINY_SPECS["mint-envkit/tiny-qwen3"]
    assert big["hidden_size"] == 256 and big["num_hidden_layers"] == 6


def test_cache_dir_is_a_reused_hf_directory(monkeypatch):
    first = tiny_model_dir(SMALL)
    assert (first / "model.safetensors").is_file()
    assert (first / "tokenizer.json").is_file()
    assert (first / "config.json").is_file()
    assert first.name.startswith("tiny-qwen3-small-")
    mtime = (first / "model.safetensors").stat().st_mtime_ns

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached model was rebuilt")

    monkeypatch.setattr(models.tiny, "build_tiny_model", no_rebuild)
    assert tiny_model_dir(SMALL) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == mtime
    loaded = load_base_model(SMALL)
    assert loaded.tokenizer_dir == str(first)
    # No temporary build directories are left behind.
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".build-")]


def test_loaded_tiny_model_equals_fresh_build():
    loaded = load_base_model(SMALL, device="cpu")
    assert _digest(loaded.model) == _digest(build_tiny_model(SMALL))
    assert loaded.vocab_size == 2048 and loaded.arch == "qwen3"
    assert all(not p.requires_grad for p in loaded.model.parameters())


def test_unknown_model_names_it_and_suggests_tiny(tmp_path):
    with pytest.raises(ModelLoadError) as info:
        load_base_model("nobody/no-such-model-xyz")
    msg = str(info.value)
    assert "nobody/no-such-model-xyz" in msg and "mint-envkit/tiny-qwen3" in msg
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_base_model(str(tmp_path / "missing" / "dir"))
    engine = Engine(state_dir=tmp_path / "state")
    with pytest.raises(EngineError) as err:
        engine.create_lora("nobody/no-such-model-xyz")
    assert err.value.category == "user"
    assert "nobody/no-such-model-xyz" in err.value.message
    assert "nobody/no-such-model-xyz" not in engine.supported_models


def test_local_directory_model_loads_by_path(tmp_path):
    target = tmp_path / "users" / "me" / "my-model"
    model = build_tiny_model(SMALL, seed=7)
    model.save_pretrained(str(target))
    get_tokenizer(SMALL).save_pretrained(str(target))
    loaded = load_base_model(str(target), device="cpu")
    assert _digest(loaded.model) == _digest(model)
    assert loaded.tokenizer_dir == str(target.resolve())

    engine = Engine(state_dir=tmp_path / "state")
    model_id = engine.create_lora(str(target), rank=2, seed=0)
    info = engine.model_info(model_id)
    assert info["base_model"] == str(target.resolve())
    assert info["tokenizer_dir"] == str(target.resolve())
    assert str(target.resolve()) in engine.supported_models
    sampler = engine.create_sampler(base_model=str(target))
    assert len(engine.sample(sampler, [1, 2, 3], max_tokens=3, seed=0)[0].tokens) == 3


def test_directory_without_tokenizer_is_refused(tmp_path):
    target = tmp_path / "a" / "b" / "no-tok"
    build_tiny_model(SMALL).save_pretrained(str(target))
    with pytest.raises(ModelLoadError, match="no tokenizer"):
        load_base_model(str(target))


def test_tokenizer_path_guard_against_sdk_rewrite():
    with pytest.raises(ModelLoadError, match="exactly two"):
        check_tokenizer_path("/data/tok")
    with pytest.raises(ModelLoadError):
        check_tokenizer_path("/a/b/c:d")
    assert check_tokenizer_path("/data/x/tok") == "/data/x/tok"
