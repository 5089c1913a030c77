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


def _meta(engine, path: str) -> dict:
    """A checkpoint's meta.json, read from the engine's state directory."""
    import json

    run, kind, name = path.removeprefix("tinker://").split("/", 2)
    return json.loads((engine.state_dir / run / kind / name / "meta.json").read_text())


def test_a_chain_of_interpolations_is_bounded_over_the_chain(engine) -> None:
    """issue 46: each call was bounded alone (|c| <= 10), so chaining x10 interpolations
    multiplied a trained delta by 10 per call (a uniform-logprob model from the 6th
    call on, no error). Each checkpoint now records its gain, and a combination's gain
    (sum of |c| x the sources' gains) is bounded by COEFFICIENT_MAX."""
    from engine_kit import SMALL, trained_lora

    from mint_envkit.local.bounds import COEFFICIENT_MAX
    from mint_envkit.local.engine.interpolate import interpolate_checkpoints

    model_id = trained_lora(engine, seed=3)
    trained = engine.save_state(model_id, "chain-0", kind="sampler")
    out = f"tinker://{model_id}/sampler_weights/"
    ten = interpolate_checkpoints(engine, [trained], [COEFFICIENT_MAX], output=out + "chain-1")
    assert _meta(engine, ten)["gain"] == COEFFICIENT_MAX
    mixed = interpolate_checkpoints(engine, [ten, SMALL], [0.5, 0.5], output=out + "chain-mix")
    assert _meta(engine, mixed)["gain"] == COEFFICIENT_MAX / 2
    with pytest.raises(
        EngineError, match=r"would hold 100 trained deltas .*source_paths\[0\] already 10"
    ):
        interpolate_checkpoints(engine, [ten], [COEFFICIENT_MAX], output=out + "chain-2")
    with pytest.raises(EngineError, match="over the bound of 10"):
        interpolate_checkpoints(engine, [ten, trained], [1.0, 0.5], output=out + "chain-3")
    # trained further from the x10 checkpoint: what it saves keeps the gain
    again = engine.create_lora_from_state(ten, with_optimizer=False)
    resaved = engine.save_state(again, "chain-resaved", kind="sampler")
    assert _meta(engine, resaved)["gain"] == COEFFICIENT_MAX
    with pytest.raises(EngineError, match="over the bound of 10"):
        interpolate_checkpoints(
            engine, [resaved], [2.0], output=f"tinker://{again}/sampler_weights/chain-4"
        )
