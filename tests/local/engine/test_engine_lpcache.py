"""compute_logprobs answered from the prefill of the one-token sample the SDK sends first."""

from __future__ import annotations

import pytest
import torch
from engine_kit import SMALL, trained_lora

from mint_envkit.local.engine import sampling
from mint_envkit.local.engine.lpcache import (
    Followup,
    FollowupCache,
    PromptHiddenCache,
    PromptLogprobCache,
)

TOKENS = [2044, 100, 200, 300, 2045, 2044, 400, 17, 18, 19, 20]


def _no_pass(*args, **kwargs):
    raise AssertionError("compute_logprobs ran a model pass")


def test_a_one_token_sample_scores_its_prompt_for_the_next_compute_logprobs(engine, monkeypatch):
    model_id = trained_lora(engine, seed=3, steps=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    fresh = engine.compute_logprobs(sampler, TOKENS)  # no sample before: a model pass
    other = engine.create_sampler(base_model=SMALL)
    # the SDK's compute_logprobs: sample 1 token with prompt_logprobs, then score
    engine.sample_many(
        [(sampler, TOKENS, {"max_tokens": 1}), (other, TOKENS[:-2], {"max_tokens": 1})]
    )
    with monkeypatch.context() as patch:
        patch.setattr(sampling, "logprobs_batch", _no_pass)
        kept = engine.compute_logprobs(sampler, TOKENS)
        kept_other = engine.compute_logprobs(other, TOKENS[:-2])
        with pytest.raises(Exception, match="ran a model pass"):  # taken once only
            engine.compute_logprobs(sampler, TOKENS)
    assert kept[0] is None and len(kept) == len(TOKENS)
    assert max(abs(a - b) for a, b in zip(kept[1:], fresh[1:], strict=True)) < 1e-5
    base_fresh = engine.compute_logprobs(other, TOKENS[:-2])
    assert max(abs(a - b) for a, b in zip(kept_other[1:], base_fresh[1:], strict=True)) < 1e-5
    assert max(abs(a - b) for a, b in zip(kept[1:9], kept_other[1:], strict=True)) > 1e-3


def test_the_cache_is_bounded_and_keyed_by_snapshot_and_tokens():
    cache = PromptLogprobCache(max_tokens=4)
    cache.put("a", [1, 2, 3], [-1.0, -2.0])
    cache.put("b", [1, 2, 3], [-3.0, -4.0])
    cache.put("a", [1, 2], [-5.0])  # over 4: the oldest entry goes
    assert cache.take("a", [1, 2, 3]) is None
    assert cache.take("b", [1, 2, 3]) == [None, -3.0, -4.0]
    assert cache.take("a", [1, 2]) == [None, -5.0] and len(cache) == 0
    cache.put("a", [1, 2, 3], [-1.0])  # wrong length: not kept
    assert len(cache) == 0


def test_recomputing_sampled_replies_reuses_the_sampler_logits(engine, monkeypatch):
    """The RL recompute: compute_logprobs (a one-token sample + score) of each sampled reply."""
    model_id = trained_lora(engine, seed=4, steps=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    prompt = TOKENS[:7]
    seqs = engine.sample(
        sampler, prompt, num_samples=4, max_tokens=6, temperature=0.7, top_k=50, seed=2
    )
    seqs += engine.sample(sampler, prompt, num_samples=2, max_tokens=6, seed=3, stop=[2045])
    passes = []
    real = sampling.logprobs_batch
    with monkeypatch.context() as patch:
        patch.setattr(sampling, "decode", _no_pass)
        patch.setattr(sampling, "logprobs_batch", lambda *a: passes.append(a) or real(*a))
        kept = []
        for seq in seqs:
            [[drawn]] = engine.sample_many([(sampler, prompt + seq.tokens, {"max_tokens": 1})])
            assert len(drawn.tokens) == 1
            kept.append(engine.compute_logprobs(sampler, prompt + seq.tokens))
    assert passes == []  # the prompt's logprobs come from the sampling prefill's states
    for seq, got in zip(seqs, kept, strict=True):
        fresh = engine.compute_logprobs(sampler, prompt + seq.tokens)
        assert got[0] is None and len(got) == len(fresh)
        assert max(abs(a - b) for a, b in zip(got[1:], fresh[1:], strict=True)) < 1e-5
    # the recomputed reply logprobs are the model's own (T=1), not the T=0.7 top-k ones
    assert max(abs(a - b) for a, b in zip(kept[0][7:], seqs[0].logprobs, strict=True)) > 1e-3


def test_a_one_token_continuation_draws_what_a_fresh_pass_draws(engine):
    sampler = engine.create_sampler(base_model=SMALL)
    [seq] = engine.sample(sampler, TOKENS[:5], num_samples=1, max_tokens=5, seed=0)
    tokens = TOKENS[:5] + seq.tokens
    kw = {"max_tokens": 1, "num_samples": 6, "seed": 9, "temperature": 0.8}
    key, followups = engine.registry.samplers[sampler].key, engine.registry.bases[SMALL].followups
    assert followups.get(key, tokens) is not None  # the sample kept its next logits
    [[*from_kept]] = engine.sample_many([(sampler, tokens, kw)])
    assert followups.take(key, tokens) is not None
    [[*fresh]] = engine.sample_many([(sampler, tokens, kw)])
    assert [s.tokens for s in from_kept] == [s.tokens for s in fresh]
    assert (
        max(abs(a.logprobs[0] - b.logprobs[0]) for a, b in zip(from_kept, fresh, strict=True))
        < 1e-5
    )


def test_a_reply_sampled_twice_is_recomputed_twice_without_a_pass(engine, monkeypatch):
    """A group's samples often give the same reply: each of its compute_logprobs is kept."""
    model_id = trained_lora(engine, seed=5, steps=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    prompt = TOKENS[:7]
    seqs = engine.sample(sampler, prompt, num_samples=8, max_tokens=2, temperature=0.05, seed=1)
    replies = [tuple(s.tokens) for s in seqs]
    assert len(set(replies)) < len(replies)  # near-greedy: the same reply several times
    with monkeypatch.context() as patch:
        patch.setattr(sampling, "logprobs_batch", _no_pass)
        patch.setattr(sampling, "decode", _no_pass)
        kept = [engine.compute_logprobs(sampler, prompt + list(r)) for r in replies]
        with pytest.raises(Exception, match="ran a model pass"):  # every count taken
            engine.compute_logprobs(sampler, prompt + list(replies[0]))
    for reply, got in zip(replies, kept, strict=True):
        fresh = engine.compute_logprobs(sampler, prompt + list(reply))
        assert max(abs(a - b) for a, b in zip(got[1:], fresh[1:], strict=True)) < 1e-5


def test_followups_count_repeats_and_hidden_states_are_bounded():
    followups = FollowupCache(max_floats=16)
    first = Followup(2, [-0.5], torch.zeros(8))
    followups.put("k", [1, 2, 3], first)
    followups.put("k", [1, 2, 3], Followup(2, [-0.7], torch.ones(8)))  # the same sequence again
    assert len(followups) == 1
    assert followups.take("k", [1, 2, 3]) is first and followups.take("k", [1, 2, 3]) is first
    assert followups.take("k", [1, 2, 3]) is None
    hidden = PromptHiddenCache(max_floats=12)
    hidden.put("k", [1, 2, 3], torch.zeros(2, 4))
    hidden.put("k", [4, 5], torch.zeros(1, 4))
    hidden.put("k", [6, 7], torch.zeros(1, 4))  # 16 floats > 12: the oldest goes
    assert hidden.take("k", [1, 2, 3]) is None and len(hidden) == 2
    hidden.put("k", [8, 9, 10], torch.zeros(1, 4))  # wrong number of rows: not kept
    assert hidden.take("k", [8, 9, 10]) is None
    assert hidden.take("k", [4, 5]).shape == (1, 4) and hidden.take("k", [4, 5]) is None
