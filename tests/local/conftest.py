"""Fixtures of the local-backend tests: a small tied Llama model built here (no download)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def tied_model_dir(tmp_path_factory, chatml_tokenizer):
    """A tiny Llama with tied input/output embeddings and a ChatML tokenizer, as a HF directory.

    Like SmolLM2 (Llama architecture, ``tie_word_embeddings=True``, ChatML), at
    hidden 64 and 2 layers over the tiny 2048-token tokenizer; weights from seed 0.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = chatml_tokenizer
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=tok.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 0.125)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    target = tmp_path_factory.mktemp("models") / "tied" / "tiny-llama-tied"
    model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target
