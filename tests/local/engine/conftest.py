"""Fixtures of the engine tests: one Engine shared by all of them (as in one module before)."""

from __future__ import annotations

import pytest

from mint_envkit.local.engine.core import Engine


@pytest.fixture(scope="session")
def engine(tmp_path_factory) -> Engine:
    # One thread: on a shared, loaded 2-core machine two OpenMP threads can be 10x slower.
    return Engine(state_dir=tmp_path_factory.mktemp("state"), num_threads=1)


@pytest.fixture(scope="session")
def small_model():
    """The built-in tiny-qwen3-small in fp32 on CPU, built in memory (no engine around it)."""
    from mint_envkit.local.models.tiny import build_tiny_model

    return build_tiny_model("mint-envkit/tiny-qwen3-small")


@pytest.fixture(scope="session")
def gpt2_model():
    """A tiny random GPT-2 (a layout the static cache does not run: the fallback path)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=300, n_positions=128, n_embd=32, n_layer=2, n_head=2)
    return GPT2LMHeadModel(config).eval()
