"""forward on datums that share a prompt: the prefix runs once, the result is the unshared one."""

from __future__ import annotations

import pytest
from engine_kit import SMALL, rel_diff, trained_lora

from mint_envkit.local.engine import prefix, training
from mint_envkit.local.engine.core import Engine

PROMPT = [2044] + [(53 * i) % 1900 + 5 for i in range(29)]  # 30 tokens, the group's prompt


def _group(engine: Engine, sampler: str, loss_fn: str) -> list[dict]:
    """Four datums of one prompt and sampled replies of different lengths, then one alone."""
    seqs = engine.sample(sampler, PROMPT, num_samples=4, max_tokens=7, seed=4)
    seqs = [s.tokens[: 3 + j] for j, s in enumerate(seqs)]
    data = []
    k = len(PROMPT) - 1
    for j, reply in enumerate([*seqs, [7, 8, 9]]):
        prompt = PROMPT if j < 4 else [2044, 11, 12, 13]
        tokens = prompt + reply
        n = len(tokens) - 1
        inputs = {"target_tokens": tokens[1:]}
        if loss_fn == "cross_entropy":
            inputs["weights"] = [0.0] * (len(prompt) - 1) + [1.0] * len(reply)
        else:
            inputs["logprobs"] = [-1.0] * n
            inputs["advantages"] = [0.0] * k + [float(j % 2) - 0.5] * (n - k)
            if j == 4:
                inputs["advantages"] = [0.0] * 3 + [1.0] * (n - 3)
        data.append({"model_input": tokens[:-1], "loss_fn_inputs": inputs})
    return data


def _forward_backward(engine: Engine, model_id: str, data: list[dict], loss_fn: str):
    out = engine.forward(model_id, data, loss_fn, None, backward=True)
    params = engine.registry.trainers[model_id].params
    grads = {k: p.grad.detach().clone() for k, p in params.items() if p.grad is not None}
    for p in params.values():
        p.grad = None
    return out, grads


def _two_groups(engine: Engine, sampler: str, loss_fn: str) -> list[dict]:
    """Two prompts of different lengths (30 and 24 tokens), four replies each, then a datum alone."""
    first = _group(engine, sampler, loss_fn)[:4]
    short = [
        {
            "model_input": d["model_input"][6:],
            "loss_fn_inputs": {k: v[6:] for k, v in d["loss_fn_inputs"].items()},
        }
        for d in first
    ]
    return first + short + _group(engine, sampler, loss_fn)[4:]


def _compare(shared, shared_grads, apart, apart_grads, data) -> None:
    # fp32: the same sums over other matmul shapes (the prefix once, then the rest through
    # the KV cache), so the rounding differs at ~1e-7 relative; bounded relative to the
    # values as the micro-batch test is (docs/architecture.md, "Numerics in the tests").
    assert shared.metrics["loss:sum"] == pytest.approx(apart.metrics["loss:sum"], rel=1e-5)
    assert len(shared.logprobs) == len(apart.logprobs) == len(data)
    for a, b, d in zip(shared.logprobs, apart.logprobs, data, strict=True):
        assert len(a) == len(d["model_input"])
        assert a == pytest.approx(b, rel=1e-5, abs=1e-5)
    assert set(shared_grads) == set(apart_grads) and shared_grads
    assert rel_diff(shared_grads, apart_grads) < 1e-5


def _shared_and_apart(engine, monkeypatch, model_id, data, loss_fn):
    """forward_backward with prompt sharing (and the shared_logprobs calls), then without."""
    runs = []
    real = training.shared_logprobs
    with monkeypatch.context() as patch:
        patch.setattr(training, "shared_logprobs", lambda *a: runs.append(a) or real(*a))
        shared = _forward_backward(engine, model_id, data, loss_fn)
    with monkeypatch.context() as patch:
        patch.setattr(training, "SHARED_PREFIX_MIN_TOKENS", 10**9)  # sharing off
        patch.setattr(training, "shared_logprobs", None)
        apart = _forward_backward(engine, model_id, data, loss_fn)
    return runs, shared, apart


@pytest.mark.parametrize("loss_fn", ["cross_entropy", "importance_sampling", "ppo"])
@pytest.mark.parametrize("train_unembed", [True, False])
@pytest.mark.parametrize("packed", [True, False])
def test_two_prompts_of_different_lengths_share_one_pass_with_the_unshared_results(
    engine, monkeypatch, loss_fn, train_unembed, packed
):
    """Both groups in one pass: one packed row (float32), or the prefixes as one padded
    batch and every rest as another through the KV cache (the bfloat16 path, forced here);
    a frozen head (train_unembed=False) keeps no logits and computes its gradient on the
    way."""
    assert prefix.packs_exactly(engine.registry.base(SMALL).loaded.model)  # float32
    for module in (prefix, training):
        monkeypatch.setattr(module, "packs_exactly", lambda model: packed)
    model_id = trained_lora(engine, seed=32, steps=1, train_unembed=train_unembed)
    sampler, _ = engine.save_for_sampler(model_id, None)
    data = _two_groups(engine, sampler, loss_fn)
    runs, (shared, shared_grads), (apart, apart_grads) = _shared_and_apart(
        engine, monkeypatch, model_id, data, loss_fn
    )
    assert [[u.shared for u in run[1]] for run in runs] == [[len(PROMPT), len(PROMPT) - 6]]
    _compare(shared, shared_grads, apart, apart_grads, data)


def test_groups_that_share_a_system_prompt_are_cut_one_unit_per_group():
    system = list(range(100, 125))  # 25 tokens every group has, then its own 13
    items = [
        {"tokens": system + [300 + g] * 13 + [1000 + 16 * g + s] * 15}
        for g in range(8)
        for s in range(4)
    ]
    units = prefix.plan(items, per_batch=242, min_shared=16)
    # not 7 datums sharing the 25 system tokens (25 + 7 * 28 = 221 tokens a unit)
    assert [(len(u.items), u.shared) for u in units] == [(4, 38)] * 8
    assert [u.items for u in units] == [items[4 * g : 4 * g + 4] for g in range(8)]


def test_shared_passes_pack_units_within_the_budget():
    unit = prefix.Unit(items=[{"tokens": [1] * 40 + [2 + i] * 5} for i in range(4)], shared=40)
    assert prefix.pass_cost([unit]) == 40 + 4 * 5
    assert [len(p) for p in prefix.pack([unit] * 5, budget=130)] == [2, 2, 1]
    assert [len(p) for p in prefix.pack([unit] * 3, budget=10)] == [1, 1, 1]  # one at least
    other = prefix.Unit(items=[{"tokens": [3] * 30 + [4] * 20}] * 2, shared=30)
    assert prefix.pass_cost([unit, other]) == (40 + 4 * 5) + (30 + 2 * 20)  # no padding


@pytest.mark.parametrize("loss_fn", ["cross_entropy", "importance_sampling", "ppo"])
def test_a_shared_prompt_gives_the_loss_logprobs_and_gradients_of_the_unshared_pass(
    engine, monkeypatch, loss_fn
):
    model_id = trained_lora(engine, seed=31, steps=1)
    sampler, _ = engine.save_for_sampler(model_id, None)
    data = _group(engine, sampler, loss_fn)
    items = [{"tokens": d["model_input"]} for d in data]
    units = prefix.plan(items, per_batch=4096, min_shared=prefix.SHARED_PREFIX_MIN_TOKENS)
    assert [(len(u.items), u.shared) for u in units] == [(4, len(PROMPT)), (1, 0)]
    runs, (shared, shared_grads), (apart, apart_grads) = _shared_and_apart(
        engine, monkeypatch, model_id, data, loss_fn
    )
    assert len(runs) == 1  # the four datums of the prompt ran as one shared unit
    _compare(shared, shared_grads, apart, apart_grads, data)


def test_a_shared_unit_stays_within_the_budget_and_leaves_every_datum_a_rest():
    items = [{"tokens": [1] * 20 + [2 + i] * (3 + i)} for i in range(4)]
    items.append({"tokens": [1] * 20})  # all prefix: the shared part stops one token short
    units = prefix.plan(items, per_batch=4096, min_shared=16)
    assert [(len(u.items), u.shared) for u in units] == [(5, 19)]
    small = prefix.plan(items, per_batch=40, min_shared=16)  # all five: 19 + 23 > 40
    assert [(len(u.items), u.shared) for u in small] == [(4, 20), (1, 0)]  # 20 + 18, 20
    assert prefix.plan(items, per_batch=4096, min_shared=21) == [prefix.Unit([i]) for i in items]


def test_a_packed_row_stays_within_its_mask_budget_whatever_the_pass_budget(engine, monkeypatch):
    """Five groups of a 400-token prompt (2,100 tokens) on an engine allowed 65,536 tokens a
    pass: not one (2,100, 2,100) mask, passes of at most PACKED_ROW_MAX_TOKENS (2,048)."""
    model_id = engine.create_lora(SMALL, rank=4, seed=0)
    data = []
    for g in range(5):
        prompt = [2044] + [(7 * g + 13 * j) % 1900 + 5 for j in range(399)]
        for s in range(4):
            tokens = prompt + [(11 * s + j + g) % 1900 + 5 for j in range(6)]
            n = len(tokens) - 1
            data.append(
                {
                    "model_input": tokens[:-1],
                    "loss_fn_inputs": {
                        "target_tokens": tokens[1:],
                        "logprobs": [-1.0] * n,
                        "advantages": [0.0] * 399 + [1.0] * (n - 399),
                    },
                }
            )
    runs = []
    real = training.shared_logprobs
    monkeypatch.setattr(training, "shared_logprobs", lambda *a: runs.append(a[1]) or real(*a))
    before = engine.max_tokens_per_pass
    engine.max_tokens_per_pass = 65536
    try:
        out = engine.forward(model_id, data, "importance_sampling", None, backward=False)
    finally:
        engine.max_tokens_per_pass = before
    assert len(out.logprobs) == 20 and sum(len(units) for units in runs) == 5
    assert len(runs) >= 2
    assert all(prefix.pass_cost(units) <= prefix.PACKED_ROW_MAX_TOKENS for units in runs)
