"""Shared data and helpers of the engine tests (fixtures are in conftest.py).

Example::

    from engine_kit import SMALL, ce_data, trained_lora

    model_id = trained_lora(engine, seed=0)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import SampleSpec
from mint_envkit.rendering.tokenizer import tiny_tokenizer_dir
from tiny_llama import tiny_llama

SMALL = "mint-envkit/tiny-qwen3-small"
PROMPT = [2044, 100, 200, 300, 2045, 2044, 400]


def lora_params(engine: Engine, model_id: str) -> dict[str, torch.Tensor]:
    """A copy of a training client's LoRA tensors, by name."""
    return {k: p.detach().clone() for k, p in engine.registry.trainers[model_id].params.items()}


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest absolute difference between two sets of tensors with the same names."""
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def rel_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest absolute difference over the largest magnitude in ``b`` (same names).

    For results that sum the same terms in another order (micro-batches, other kernels):
    float32 rounding scales with the values, so an absolute bound would test the CPU.
    """
    assert set(a) == set(b) and a, "compare the same, non-empty sets of tensors"
    scale = max(float(b[k].abs().max()) for k in b)
    return max_diff(a, b) / max(scale, 1e-30)


def trained_lora(
    engine: Engine, seed: int = 0, steps: int = 1, rank: int = 4, train_unembed: bool = True
) -> str:
    """A LoRA whose B matrices are non-zero (so the adapter changes outputs)."""
    model_id = engine.create_lora(SMALL, rank=rank, seed=seed, train_unembed=train_unembed)
    for _ in range(steps):
        engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2)
    return model_id


def ce_data(n: int = 4) -> list[dict]:
    """``n`` cross-entropy datums of six tokens (the first one unweighted)."""
    data = []
    for i in range(n):
        toks = [2044, 10 + i, 20 + i, 30 + i, 40 + i, 50 + i]
        data.append(
            {
                "model_input": toks[:-1],
                "loss_fn_inputs": {"target_tokens": toks[1:], "weights": [0, 1, 1, 1, 1]},
            }
        )
    return data


def rl_data(engine: Engine, sampler: str, seed: int = 0, n: int = 4) -> list[dict]:
    """``n`` RL datums from completions of ``PROMPT`` sampled on ``sampler``."""
    seqs = engine.sample(sampler, PROMPT, num_samples=n, max_tokens=6, seed=seed)
    data = []
    for j, s in enumerate(seqs):
        k = len(PROMPT) - 1
        data.append(
            {
                "model_input": PROMPT + s.tokens[:-1],
                "loss_fn_inputs": {
                    "target_tokens": PROMPT[1:] + s.tokens,
                    "logprobs": [0.0] * k + s.logprobs,
                    "advantages": [0.0] * k + [float(j % 2) - 0.5] * len(s.tokens),
                },
            }
        )
    return data


def spec(prompt: list[int], **kwargs) -> SampleSpec:
    """A checked-free ``SampleSpec`` for driving the decode loop directly (defaults: 1 x 8)."""
    fields = {
        "num_samples": 1,
        "max_tokens": 8,
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "seed": 0,
        "stop_ids": frozenset(),
        "stop_seqs": (),
        "stop_strs": (),
    }
    fields.update(kwargs)
    return SampleSpec(prompt=list(prompt), **fields)


def tiny_llama_dir(target: Path, *, tied: bool, seed: int = 0) -> str:
    """Save a tiny random Llama (the tiny tokenizer's 2048 tokens) to ``target``; return its path.

    ``tied`` shares the output layer with the input embeddings (``tie_word_embeddings``),
    as SmolLM2 does. No download: the engine loads the directory by path.
    """
    model = tiny_llama(
        vocab_size=2048,
        tied=tied,
        bos=2043,
        eos=2045,
        pad=2043,
        seed=seed,
        initializer_range=0.1,
    )
    model.save_pretrained(str(target))
    for item in tiny_tokenizer_dir().iterdir():
        if item.is_file():
            shutil.copy2(item, target / item.name)
    return str(target)
