"""The exact LoRA combination behind interpolate_checkpoints (plain tensors, no model)."""

from __future__ import annotations

import pytest
import torch

from mint_envkit.local.engine.interpolate import MAX_RANK, check_finite, combine
from mint_envkit.local.engine.records import EngineError, LoraSpec

ALPHA = 32.0
Q, V = (
    "base_model.model.model.layers.0.self_attn.q_proj",
    "base_model.model.model.layers.0.mlp.up_proj",
)


def _lora(rank: int, layers: list[str], seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for layer in layers:
        out[f"{layer}.lora_A.weight"] = torch.randn(rank, 6, generator=gen)
        out[f"{layer}.lora_B.weight"] = torch.randn(5, rank, generator=gen)
    return out


def _delta(spec: LoraSpec, tensors: dict[str, torch.Tensor], layer: str) -> torch.Tensor:
    a = tensors.get(f"{layer}.lora_A.weight")
    if a is None:
        return torch.zeros(5, 6)
    return ALPHA / spec.rank * tensors[f"{layer}.lora_B.weight"] @ a


def test_the_combination_is_the_linear_combination_of_the_deltas() -> None:
    a = (LoraSpec(rank=4, train_mlp=False), _lora(4, [Q], 0))
    b = (LoraSpec(rank=2, train_attn=False), _lora(2, [V], 1))
    c = (LoraSpec(rank=3), _lora(3, [Q, V], 2))
    coefs = [0.5, -1.5, 2.0]
    spec, tensors = combine([a, b, c], coefs)
    assert spec == LoraSpec(rank=9, train_mlp=True, train_attn=True, train_unembed=True)
    for layer in (Q, V):
        want = sum(k * _delta(s, t, layer) for (s, t), k in zip([a, b, c], coefs, strict=True))
        assert torch.allclose(_delta(spec, tensors, layer), want, atol=1e-5)


def test_zero_coefficients_drop_their_factors_and_all_zero_is_the_base() -> None:
    a = (LoraSpec(rank=4), _lora(4, [Q], 0))
    b = (LoraSpec(rank=2), _lora(2, [Q], 1))
    spec, tensors = combine([a, b], [1.0, 0.0])
    assert spec.rank == 4 and all(torch.equal(tensors[k], a[1][k]) for k in a[1])
    spec, tensors = combine([a, b], [0.0, 0.0])
    assert spec.rank == 4 and not tensors[f"{Q}.lora_B.weight"].any()


def test_a_combination_past_the_largest_rank_is_refused() -> None:
    big = (
        LoraSpec(rank=MAX_RANK),
        {
            f"{Q}.lora_A.weight": torch.zeros(MAX_RANK, 1),
            f"{Q}.lora_B.weight": torch.zeros(1, MAX_RANK),
        },
    )
    small = (LoraSpec(rank=1), _lora(1, [Q], 0))
    with pytest.raises(EngineError, match="rank"):
        combine([big, small], [0.5, 0.5])


def test_a_combination_that_overflows_float32_is_refused() -> None:
    huge = {k: v * 1e19 for k, v in _lora(2, [Q], 0).items()}  # finite, but B @ A is not
    spec, tensors = combine([(LoraSpec(rank=2), huge)], [1.0])
    with pytest.raises(EngineError, match=r"not finite at layer .*q_proj.*smaller coefficients"):
        check_finite(spec, tensors)
    check_finite(*combine([(LoraSpec(rank=2), _lora(2, [Q], 0))], [10.0]))  # the bound: fine
