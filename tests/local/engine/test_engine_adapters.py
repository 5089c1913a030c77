"""Engine LoRA adapters: target modules, seeded init, the merged sampling copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_kit import PROMPT, SMALL, ce_data, lora_params, max_diff, tiny_llama_dir, trained_lora

from mint_envkit.local.engine.records import EngineError


def test_base_sampler_equals_fresh_lora(engine):
    model_id = engine.create_lora(SMALL, rank=4, seed=0)  # B = 0: same function as the base
    fresh, _ = engine.save_for_sampler(model_id, None)
    base = engine.create_sampler(base_model=SMALL)
    a = engine.compute_logprobs(fresh, PROMPT)
    b = engine.compute_logprobs(base, PROMPT)
    assert max(abs(x - y) for x, y in zip(a[1:], b[1:], strict=True)) < 1e-5


def test_a_fresh_adapter_samples_on_the_base_model_with_no_adapter_in_the_way(engine):
    """B = 0 adds exact zeros: a fresh snapshot samples as the base (no slot, no merge)."""
    model_id = engine.create_lora(SMALL, rank=4, seed=3)
    fresh, _ = engine.save_for_sampler(model_id, None)
    base, snap = engine.registry.sampler(fresh)
    assert snap.adds_nothing
    kept, base.merged = base.merged, None  # the peft path, as SmolLM2-135M samples
    try:
        slots = dict(base.slots)
        got = engine.sample(fresh, PROMPT, num_samples=2, max_tokens=5, seed=1)
        assert base.slots == slots  # no scratch adapter filled for it
        ref = engine.create_sampler(base_model=SMALL)
        want = engine.sample(ref, PROMPT, num_samples=2, max_tokens=5, seed=1)
        assert [s.tokens for s in got] == [s.tokens for s in want]
        assert [s.logprobs for s in got] == [s.logprobs for s in want]
    finally:
        base.merged = kept
    engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
    engine.optim_step(model_id, learning_rate=1e-2)
    trained, _ = engine.save_for_sampler(model_id, None)
    assert not engine.registry.sampler(trained)[1].adds_nothing
    engine.unload(model_id)


def test_lora_flags_choose_target_modules(engine):
    only_unembed = engine.create_lora(
        SMALL, rank=2, seed=0, train_mlp=False, train_attn=False, train_unembed=True
    )
    names = list(lora_params(engine, only_unembed))
    assert names and all("lm_head" in n for n in names)
    attn = engine.create_lora(SMALL, rank=2, seed=0, train_mlp=False, train_unembed=False)
    names = list(lora_params(engine, attn))
    assert any("q_proj" in n for n in names) and not any(
        "mlp" in n or "lm_head" in n for n in names
    )
    mlp = engine.create_lora(SMALL, rank=3, seed=0, train_attn=False, train_unembed=False)
    params = lora_params(engine, mlp)
    assert all("mlp" in n for n in params)
    assert any(p.shape[0] == 3 for n, p in params.items() if "lora_A" in n)
    info = engine.model_info(mlp)
    assert info["lora_rank"] == 3 and info["arch"] == "qwen3" and info["base_model"] == SMALL
    assert Path(info["tokenizer_dir"]).is_absolute() and info["tokenizer_dir"].count("/") != 2
    # the same seed gives the same init; another seed another one
    again = lora_params(
        engine, engine.create_lora(SMALL, rank=3, seed=0, train_attn=False, train_unembed=False)
    )
    assert max_diff(params, again) == 0.0
    other = lora_params(
        engine, engine.create_lora(SMALL, rank=3, seed=1, train_attn=False, train_unembed=False)
    )
    assert max_diff(params, other) > 0
    for model_id in (only_unembed, attn, mlp):
        engine.unload(model_id)
    with pytest.raises(EngineError, match="unknown model_id"):
        engine.model_info(mlp)


def test_merged_sampling_copy_matches_the_peft_path(engine):
    """Sampling uses a merged copy of the weights; it must agree with the LoRA forward."""
    model_id = trained_lora(engine, seed=5, steps=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    prompt = [10, 11, 12, 13, 14]
    merged = engine.sample(sampler, prompt, num_samples=3, max_tokens=6, seed=9)
    base, _ = engine.registry.sampler(sampler)
    assert base.merged is not None  # the tiny model keeps a merged copy
    kept, base.merged = base.merged, None
    try:
        through_peft = engine.sample(sampler, prompt, num_samples=3, max_tokens=6, seed=9)
    finally:
        base.merged = kept
    for a, b in zip(merged, through_peft, strict=True):
        assert a.tokens == b.tokens
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5


def test_a_released_snapshot_never_serves_stale_merged_weights(engine):
    first = trained_lora(engine, seed=6, steps=1)
    second = trained_lora(engine, seed=7, steps=3)
    prompt = [20, 21, 22]
    s1, _ = engine.save_for_sampler(first, None)
    out1 = engine.compute_logprobs(s1, prompt)
    engine.release_sampler(s1)
    s2, _ = engine.save_for_sampler(second, None)
    out2 = engine.compute_logprobs(s2, prompt)
    s1_again, _ = engine.save_for_sampler(first, None)
    assert engine.compute_logprobs(s1_again, prompt) == pytest.approx(out1, abs=1e-6)
    assert out2 != pytest.approx(out1, abs=1e-6)


@pytest.fixture(scope="module")
def llama_dirs(tmp_path_factory) -> dict[bool, str]:
    """A tiny tied and a tiny untied Llama, saved once for this module (no download)."""
    root = tmp_path_factory.mktemp("llamas")
    return {tied: tiny_llama_dir(root / f"tied-{tied}", tied=tied) for tied in (True, False)}


@pytest.mark.parametrize("train_unembed", [True, False])
@pytest.mark.parametrize("tied", [True, False])
def test_sampled_logprobs_equal_the_learner_on_tied_and_untied_models(
    engine, llama_dirs, tied, train_unembed
):
    """The merged sampling copy must not add the lm_head delta to a tied input embedding."""
    model_id = engine.create_lora(llama_dirs[tied], rank=4, seed=1, train_unembed=train_unembed)
    for _ in range(3):
        engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=2e-2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    seqs = engine.sample(sampler, PROMPT, num_samples=3, max_tokens=8, seed=4)
    for s in seqs:
        tokens = PROMPT + s.tokens
        datum = {
            "model_input": tokens[:-1],
            "loss_fn_inputs": {"target_tokens": tokens[1:]},
        }
        learner = engine.forward(model_id, [datum], "cross_entropy", None, backward=False)
        learner_lps = learner.logprobs[0]
        assert s.logprobs == pytest.approx(learner_lps[len(PROMPT) - 1 :], abs=1e-4)
        assert engine.compute_logprobs(sampler, tokens)[1:] == pytest.approx(learner_lps, abs=1e-4)
    engine.unload(model_id)


def test_the_merged_copy_owns_only_the_layers_a_snapshot_adapts(engine):
    """Memory: the copy shares every other weight with the base model, which never changes."""
    import torch

    attn = engine.create_lora(SMALL, rank=2, seed=0, train_mlp=False, train_unembed=False)
    for _ in range(2):
        engine.forward(attn, ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(attn, learning_rate=1e-2)
    sampler, _ = engine.save_for_sampler(attn, None)
    base, _ = engine.registry.sampler(sampler)
    before = {k: v.clone() for k, v in base.loaded.model.state_dict().items() if "lora" not in k}
    engine.sample(sampler, PROMPT, num_samples=2, max_tokens=4, seed=0)
    own = {
        name
        for name, p in base.merged.named_parameters()
        if all(p is not q for q in base.loaded.model.parameters())
    }
    assert own and all("self_attn" in name for name in own)
    ref = engine.create_sampler(base_model=SMALL)
    engine.sample(ref, PROMPT, num_samples=2, max_tokens=4, seed=0)
    assert not base.merged_originals  # back to sharing every weight
    after = base.loaded.model.state_dict()
    assert all(torch.equal(v, after[k]) for k, v in before.items())
    engine.unload(attn)
