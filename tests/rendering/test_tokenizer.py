"""The tiny tokenizer (built offline, deterministic, cached) and get_tokenizer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mint_envkit import TokenizerError
from mint_envkit.rendering import TINY_MODEL_NAME, get_tokenizer
from mint_envkit.rendering import tokenizer as tokenizer_module
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAMES, cache_dir, tiny_tokenizer_dir

SPECIAL_IDS = {
    "<|endoftext|>": 2043,
    "<|im_start|>": 2044,
    "<|im_end|>": 2045,
    "<think>": 2046,
    "</think>": 2047,
}

BUILD = (
    "from mint_envkit.rendering.tokenizer import tiny_tokenizer_dir; print(tiny_tokenizer_dir())"
)


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(TINY_MODEL_NAME)


def test_the_test_session_builds_into_its_own_cache():
    assert os.environ["MINT_ENVKIT_CACHE"]
    assert tiny_tokenizer_dir().is_relative_to(Path(os.environ["MINT_ENVKIT_CACHE"]).resolve())
    assert not tiny_tokenizer_dir().is_relative_to(Path.home() / ".cache")


def test_build_is_deterministic_across_processes_and_cache_dirs(tmp_path):
    """A fresh build in another process (other cache dir, other hash seed) gives the same
    bytes as this session's build."""
    here = tiny_tokenizer_dir()
    env = {**os.environ, "MINT_ENVKIT_CACHE": str(tmp_path), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    there = Path(out.stdout.strip().splitlines()[-1])
    assert there.is_relative_to(tmp_path) and not here.is_relative_to(tmp_path)
    assert there.name == here.name  # same recipe fingerprint
    for filename in ("tokenizer.json", "tokenizer_config.json"):
        assert (there / filename).read_bytes() == (here / filename).read_bytes(), filename


def test_vocab_size_and_special_token_ids(tok):
    assert len(tok) == 2048
    assert tok.convert_tokens_to_ids(list(SPECIAL_IDS)) == list(SPECIAL_IDS.values())
    assert tok.eos_token_id == SPECIAL_IDS["<|im_end|>"]
    assert tok.pad_token_id == SPECIAL_IDS["<|endoftext|>"]
    for token, token_id in SPECIAL_IDS.items():
        assert tok.encode(token, add_special_tokens=False) == [token_id]


def test_round_trip_of_text(tok):
    text = "What is 12 + 30? The answer is \\boxed{42}. Ünïcødé too, 数字 ４２."
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_tiny_names_share_one_tokenizer(tok):
    assert TINY_MODEL_NAME in TINY_MODEL_NAMES
    for name in TINY_MODEL_NAMES:
        assert get_tokenizer(name).get_vocab() == tok.get_vocab()


def test_chat_template_with_thinking(tok):
    text = tok.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=True,
    )
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    default = tok.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert default == text


def test_chat_template_without_thinking_prefills_an_empty_think_block(tok):
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Hi"}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def test_chat_template_keeps_only_the_latest_assistant_thinking(tok):
    conversation = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "thinking": "old thought"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2", "thinking": "new thought"},
    ]
    text = tok.apply_chat_template(conversation, tokenize=False)
    assert "old thought" not in text
    assert "<|im_start|>assistant\nA1<|im_end|>" in text
    assert "<|im_start|>assistant\n<think>\nnew thought\n</think>\n\nA2<|im_end|>" in text


def test_cache_is_reused_without_rebuilding(monkeypatch):
    first = tiny_tokenizer_dir()
    before = (first / "tokenizer.json").stat().st_mtime_ns

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached tokenizer was rebuilt")

    # (patching _build_tiny_tokenizer itself would change the recipe fingerprint)
    monkeypatch.setattr(tokenizer_module.tempfile, "mkdtemp", no_rebuild)
    assert tiny_tokenizer_dir() == first
    assert (first / "tokenizer.json").stat().st_mtime_ns == before
    assert [p.name for p in first.parent.iterdir() if p.name.startswith(".build-")] == []


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MINT_ENVKIT_CACHE", str(tmp_path / "explicit"))
    assert cache_dir() == (tmp_path / "explicit").resolve()
    monkeypatch.delenv("MINT_ENVKIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == (tmp_path / "xdg").resolve() / "mint_envkit"


@pytest.mark.parametrize("name", ["", "   ", None])
def test_empty_name_is_a_tokenizer_error(name):
    with pytest.raises(TokenizerError, match="needs a model name or a directory"):
        get_tokenizer(name)  # type: ignore[arg-type]


def test_missing_directory_is_a_tokenizer_error(tmp_path):
    missing = tmp_path / "no-such-dir"
    with pytest.raises(TokenizerError, match="does not exist") as info:
        get_tokenizer(str(missing))
    assert str(missing) in str(info.value)


def test_directory_without_a_tokenizer_is_a_tokenizer_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokenizerError, match="no tokenizer could be loaded"):
        get_tokenizer(str(tmp_path / "empty"))


def test_directory_with_a_broken_tokenizer_is_a_tokenizer_error(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="no tokenizer could be loaded"):
        get_tokenizer(str(tmp_path))


def test_uncached_hub_id_offline_is_a_tokenizer_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TokenizerError, match="HF_HUB_OFFLINE") as info:
        get_tokenizer("nobody-here/no-such-model-xyz")
    assert "nobody-here/no-such-model-xyz" in str(info.value)


def test_loads_a_local_directory_path(tok, tmp_path):
    directory = tiny_tokenizer_dir()
    loaded = get_tokenizer(str(directory))
    assert loaded.get_vocab() == tok.get_vocab()
    assert loaded.chat_template == tok.chat_template
    # a copy elsewhere, named relative to the working directory
    copy = tmp_path / "my-tokenizer"
    copy.mkdir()
    for item in directory.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    os.chdir(tmp_path)
    try:
        relative = get_tokenizer("./my-tokenizer")
    finally:
        os.chdir(Path(__file__).parent)
    assert relative.encode("2 + 3 = 5") == tok.encode("2 + 3 = 5")


def test_an_unknown_built_in_name_fails_at_once_naming_the_closest(monkeypatch):
    """A typo under the kit's prefix is not looked up on the hub (offline, that lookup
    waited about 40 s before failing): the error names the built-in names."""

    def no_hub(*args, **kwargs):
        raise AssertionError("the hub was asked for a built-in name")

    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_hub)
    with pytest.raises(TokenizerError, match="did you mean 'mint-envkit/tiny-qwen3'") as err:
        get_tokenizer("mint-envkit/tiny-llama")
    assert "'mint-envkit/smollm2-135m-instruct'" in str(err.value)
