"""Engine training: the losses, gradient accumulation, the AdamW step."""

from __future__ import annotations

import math

import pytest
import torch
from engine_kit import PROMPT, SMALL, ce_data, lora_params, max_diff, rl_data, trained_lora

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import EngineError


def test_cross_entropy_loss_is_weighted_sum(engine):
    model_id = engine.create_lora(SMALL, rank=4, seed=0)
    out = engine.forward(model_id, ce_data(), "cross_entropy", None, backward=False)
    expected = -sum(
        w * lp
        for d, lps in zip(ce_data(), out.logprobs, strict=True)
        for w, lp in zip(d["loss_fn_inputs"]["weights"], lps, strict=True)
    )
    assert out.metrics["loss:sum"] == pytest.approx(expected, rel=1e-5)
    assert all(len(lp) == 5 for lp in out.logprobs)
    # logprobs of each datum do not depend on its batch neighbours (right padding)
    single = engine.forward(model_id, ce_data()[2:3], "cross_entropy", None, backward=False)
    assert max(abs(a - b) for a, b in zip(single.logprobs[0], out.logprobs[2], strict=True)) < 1e-5


def _with(data: list[dict], **arrays) -> list[dict]:
    out = []
    for i, d in enumerate(data):
        inputs = dict(d["loss_fn_inputs"])
        for key, per_datum in arrays.items():
            inputs[key] = per_datum[i]
        out.append({"model_input": d["model_input"], "loss_fn_inputs": inputs})
    return out


def test_importance_sampling_and_ppo_hand_checked(engine):
    model_id = trained_lora(engine, seed=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    data = rl_data(engine, sampler)
    learner = engine.forward(model_id, data, "cross_entropy", None, backward=False).logprobs
    lengths = [len(d["model_input"]) for d in data]
    zeros = [[0.0] * n for n in lengths]
    for fn in ("importance_sampling", "ppo"):
        out = engine.forward(model_id, _with(data, advantages=zeros), fn, None, backward=False)
        assert out.metrics["loss:sum"] == 0.0
    advs = [[0.1 * (i + 1) * ((j % 3) - 1) for j in range(n)] for i, n in enumerate(lengths)]
    total_adv = sum(map(sum, advs))
    # equal logprobs -> ratio 1 -> loss = -sum(adv), for IS and PPO alike
    same = _with(data, logprobs=learner, advantages=advs)
    for fn in ("importance_sampling", "ppo"):
        out = engine.forward(model_id, same, fn, None, backward=False)
        assert out.metrics["loss:sum"] == pytest.approx(-total_adv, abs=1e-4)
        for a, b in zip(out.logprobs, learner, strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-6
    # ratio 2 everywhere: IS = -2 sum(adv); PPO clips positive advantages at 1.2
    shifted = [[x - math.log(2.0) for x in lps] for lps in learner]
    pos = [[abs(a) for a in row] for row in advs]
    neg = [[-abs(a) for a in row] for row in advs]
    s_pos, s_neg = sum(map(sum, pos)), sum(map(sum, neg))
    d_pos = _with(data, logprobs=shifted, advantages=pos)
    d_neg = _with(data, logprobs=shifted, advantages=neg)
    is_pos = engine.forward(model_id, d_pos, "importance_sampling", None, backward=False)
    assert is_pos.metrics["loss:sum"] == pytest.approx(-2 * s_pos, rel=1e-4)
    ppo_pos = engine.forward(model_id, d_pos, "ppo", None, backward=False)
    assert ppo_pos.metrics["loss:sum"] == pytest.approx(-1.2 * s_pos, rel=1e-4)
    ppo_neg = engine.forward(model_id, d_neg, "ppo", None, backward=False)
    assert ppo_neg.metrics["loss:sum"] == pytest.approx(-2 * s_neg, rel=1e-4)
    cfg = {"clip_low_threshold": 0.5, "clip_high_threshold": 1.5}
    ppo_cfg = engine.forward(model_id, d_pos, "ppo", cfg, backward=False)
    assert ppo_cfg.metrics["loss:sum"] == pytest.approx(-1.5 * s_pos, rel=1e-4)


def test_gradients_accumulate_until_optim_step(engine):
    data = ce_data(4)
    a = engine.create_lora(SMALL, rank=4, seed=5)
    b = engine.create_lora(SMALL, rank=4, seed=5)
    assert max_diff(lora_params(engine, a), lora_params(engine, b)) == 0.0
    for model_id in (a, b):  # one step first, so lora_A gets gradients too
        engine.forward(model_id, data, "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2)
    engine.forward(a, data[:2], "cross_entropy", None, backward=True)
    engine.forward(b, [data[0]], "cross_entropy", None, backward=True)
    engine.forward(b, data[1:2], "cross_entropy", None, backward=True)
    engine.forward(a, data[2:], "cross_entropy", None, backward=True)
    engine.forward(b, data[2:], "cross_entropy", None, backward=True)
    na = engine.optim_step(a, learning_rate=1e-2)["grad_norm"]
    nb = engine.optim_step(b, learning_rate=1e-2)["grad_norm"]
    assert na == pytest.approx(nb, rel=1e-4)
    assert max_diff(lora_params(engine, a), lora_params(engine, b)) < 1e-5
    # ...and the step zeroed them: a step with no new gradient does not move the weights
    before = lora_params(engine, a)
    assert engine.optim_step(a, learning_rate=1e-2)["grad_norm"] == 0.0
    assert max_diff(before, lora_params(engine, a)) == 0.0
    # the forward-only pass adds no gradient
    engine.forward(a, data, "cross_entropy", None, backward=False)
    assert engine.optim_step(a, learning_rate=1e-2)["grad_norm"] == 0.0


def _two_steps(engine: Engine, **adam) -> dict[str, torch.Tensor]:
    model_id = engine.create_lora(SMALL, rank=4, seed=8)
    for i in range(2):
        data = ce_data(2 + 2 * i)  # different gradients per step
        engine.forward(model_id, data, "cross_entropy", None, backward=True)
        engine.optim_step(model_id, **{"learning_rate": 1e-2, **adam})
    params = lora_params(engine, model_id)
    engine.unload(model_id)
    return params


def test_every_adam_param_has_an_effect(engine):
    start = lora_params(engine, engine.create_lora(SMALL, rank=4, seed=8))
    assert max_diff(_two_steps(engine, learning_rate=0.0), start) == 0.0
    baseline = _two_steps(engine)
    assert max_diff(_two_steps(engine), baseline) == 0.0  # deterministic
    assert max_diff(baseline, start) > 1e-3
    for field, value in (
        ("learning_rate", 2e-2),
        ("beta1", 0.5),
        ("beta2", 0.5),
        ("eps", 1.0),
        ("weight_decay", 10.0),
        ("grad_clip_norm", 1e-3),
    ):
        assert max_diff(_two_steps(engine, **{field: value}), baseline) > 1e-7, field


def test_grad_clip_bounds_the_update_with_large_eps(engine):
    # With eps >> |grad| Adam's update is ~ lr * grad / eps: proportional to the gradient,
    # so clipping its norm bounds the size of the step.
    def step_size(clip: float) -> tuple[float, float]:
        model_id = engine.create_lora(SMALL, rank=4, seed=8)
        before = lora_params(engine, model_id)
        engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
        m = engine.optim_step(
            model_id, learning_rate=1.0, beta1=0.0, beta2=0.0, eps=1e6, grad_clip_norm=clip
        )
        after = lora_params(engine, model_id)
        delta = math.sqrt(sum(float(((after[k] - before[k]) ** 2).sum()) for k in before))
        return m["grad_norm"], delta

    norm, free = step_size(0.0)
    assert norm > 0.5
    _, clipped = step_size(0.5)
    assert clipped == pytest.approx(free * 0.5 / norm, rel=1e-3)


def _moments(engine: Engine, model_id: str) -> dict[str, torch.Tensor]:
    """A copy of the Adam moments of a training client, by parameter name and moment."""
    trainer = engine.registry.trainers[model_id]
    return {
        f"{name}:{key}": trainer.optimizer.state[p][key].detach().clone()
        for name, p in trainer.params.items()
        for key in ("exp_avg", "exp_avg_sq", "step")
    }


def test_an_update_that_would_make_weights_non_finite_is_refused_and_undone(engine):
    model_id = trained_lora(engine, seed=11, steps=1)
    sampler, _ = engine.save_for_sampler(model_id, None)
    before_lp = engine.compute_logprobs(sampler, PROMPT)
    before_seqs = engine.sample(sampler, PROMPT, num_samples=2, max_tokens=5, seed=3)
    weights = lora_params(engine, model_id)
    moments = _moments(engine, model_id)
    engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
    with pytest.raises(
        EngineError, match=r"optim_step 2 refused.*learning rate is likely too high"
    ):
        engine.optim_step(model_id, learning_rate=1e308)
    assert engine.model_info(model_id)["step"] == 1
    assert max_diff(lora_params(engine, model_id), weights) == 0.0
    assert max_diff(_moments(engine, model_id), moments) == 0.0
    again, _ = engine.save_for_sampler(model_id, None)
    assert engine.compute_logprobs(again, PROMPT) == before_lp
    seqs = engine.sample(again, PROMPT, num_samples=2, max_tokens=5, seed=3)
    assert [s.tokens for s in seqs] == [s.tokens for s in before_seqs]
    assert [s.logprobs for s in seqs] == [s.logprobs for s in before_seqs]
    # the next sane step trains as if the refused one never happened
    engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
    assert engine.optim_step(model_id, learning_rate=1e-2)["step"] == 2
    assert max_diff(lora_params(engine, model_id), weights) > 0


def test_a_non_finite_loss_is_refused_and_accumulates_nothing(engine):
    model_id = trained_lora(engine, seed=12, steps=1)
    sampler, _ = engine.save_for_sampler(model_id, None)
    good = rl_data(engine, sampler, seed=0, n=2)
    engine.forward(model_id, good, "importance_sampling", None, backward=True)
    params = engine.registry.trainers[model_id].params
    grads = {k: p.grad.clone() for k, p in params.items()}
    data = rl_data(engine, sampler, seed=0, n=2)
    for d in data:  # a sampler logprob this low makes the ratio, and the loss, infinite
        d["loss_fn_inputs"]["logprobs"] = [-1e30] * len(d["loss_fn_inputs"]["logprobs"])
        d["loss_fn_inputs"]["advantages"] = [1.0] * len(d["loss_fn_inputs"]["advantages"])
    with pytest.raises(EngineError, match=r"non-finite loss or logprobs.*importance ratio") as err:
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
    assert err.value.category == "user"
    assert all(torch.equal(p.grad, grads[k]) for k, p in params.items())  # as before the call


def test_a_non_finite_gradient_is_refused_with_the_likely_cause(engine):
    model_id = trained_lora(engine, seed=12, steps=1)
    weights = lora_params(engine, model_id)
    engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
    params = engine.registry.trainers[model_id].params
    first = next(iter(params.values()))
    first.grad = torch.full_like(first, math.inf)  # what a loss that overflowed would leave
    with pytest.raises(EngineError, match=r"optim_step 2 refused.*not finite.*NaN") as err:
        engine.optim_step(model_id, learning_rate=1e-2)
    assert err.value.category == "user"
    assert max_diff(lora_params(engine, model_id), weights) == 0.0
    assert engine.model_info(model_id)["step"] == 1
    assert all(p.grad is None for p in params.values())
