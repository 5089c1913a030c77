"""The tiny random Llama the tests build in place of SmolLM2 (no download): one shape.

``tests/`` is on ``sys.path`` while pytest runs, so a test or fixture writes::

    from tiny_llama import tiny_llama

    model = tiny_llama(vocab_size=2048, tied=True, bos=2043, eos=2045, pad=2043)
    model.save_pretrained(str(target))  # then add a tokenizer to the directory
"""

from __future__ import annotations

from typing import Any

import torch


def tiny_llama(
    *, vocab_size: int, tied: bool, bos: int, eos: int, pad: int, seed: int = 0, **config: Any
) -> Any:
    """A fp32 ``LlamaForCausalLM`` (hidden 64, 2 layers, GQA 2:1), weights drawn from ``seed``.

    ``tied`` shares the output layer with the input embeddings, as SmolLM2 does;
    ``config`` adds ``LlamaConfig`` fields (``initializer_range=0.1``, ...).
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    llama = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        tie_word_embeddings=tied,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=pad,
        **config,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama).to(torch.float32)
    shared = model.lm_head.weight is model.model.embed_tokens.weight
    assert shared == tied  # the test model must be what its name says
    return model
