"""The device-agnostic decode loop on CPU: its policies, stops, independence of rows, fallback."""

from __future__ import annotations

import torch
from engine_kit import SMALL, spec

from mint_envkit.local.engine.decode import DecodePolicy, decode, draw, policy_for
from mint_envkit.local.engine.numerics import target_logprobs
from mint_envkit.rendering.tokenizer import get_tokenizer

CPU = DecodePolicy(sync_every=1, compile_step=False, static_shapes=False, min_rows=8)
# what CUDA runs (sync every few steps, full-width attention), here on CPU
DEVICE_LIKE = DecodePolicy(sync_every=4, compile_step=False, static_shapes=True)


def _same(a: list[list], b: list[list]) -> bool:
    """Same tokens and stop reasons; logprobs equal up to summation order (full-width attention)."""
    pairs = [(x, y) for xs, ys in zip(a, b, strict=True) for x, y in zip(xs, ys, strict=True)]
    return all(
        x.tokens == y.tokens
        and x.stop_reason == y.stop_reason
        and max(abs(p - q) for p, q in zip(x.logprobs, y.logprobs, strict=True)) < 1e-5
        for x, y in pairs
    )


def test_policies_per_device(monkeypatch):
    monkeypatch.delenv("MINT_ENVKIT_SYNC_EVERY", raising=False)
    monkeypatch.delenv("MINT_ENVKIT_COMPILE", raising=False)
    assert policy_for(torch.device("cpu")) == CPU
    cuda = policy_for(torch.device("cuda"))
    assert cuda == DecodePolicy(sync_every=16, compile_step=False, static_shapes=True)
    monkeypatch.setenv("MINT_ENVKIT_COMPILE", "1")
    monkeypatch.setenv("MINT_ENVKIT_SYNC_EVERY", "8")
    assert policy_for(torch.device("cuda")) == DecodePolicy(8, True, True)
    assert not policy_for(torch.device("cpu")).compile_step  # never compiled on CPU


def test_truncated_draws_are_the_argmax():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    noise = torch.empty_like(logits).exponential_()
    for options in ({"top_k": 1}, {"top_p": 1e-6}):
        tokens, logprobs = draw(logits, spec([1], **options), noise)
        assert torch.equal(tokens, logits.argmax(-1)) and logprobs.abs().max() < 1e-6


def test_device_policy_gives_the_cpu_results(small_model):
    base = [spec([2044, 10, 11], num_samples=4, max_tokens=12, seed=3)]
    ref = decode(small_model, base, CPU, None)[0]
    stop_id, stop_seq = ref[0].tokens[5], tuple(ref[1].tokens[2:4])
    text = get_tokenizer(SMALL).decode(ref[2].tokens[6:7])
    specs = [
        spec([2044, 10, 11], num_samples=4, max_tokens=12, seed=3, stop_ids=frozenset({stop_id})),
        spec([2044, 10, 11], num_samples=4, max_tokens=12, seed=3, stop_seqs=(stop_seq,)),
        spec([2044, 10, 11], num_samples=4, max_tokens=12, seed=3, stop_strs=(text,)),
        spec([7, 8, 9, 10, 11, 12], num_samples=2, max_tokens=5, seed=4, temperature=0.7),
    ]
    tokenizer = get_tokenizer(SMALL)
    cpu = decode(small_model, specs, CPU, tokenizer)
    assert _same(decode(small_model, specs, DEVICE_LIKE, tokenizer), cpu)
    assert cpu[0][0].stop_reason == "stop" and cpu[0][0].tokens[-1] == stop_id
    assert cpu[1][1].stop_reason == "stop" and tuple(cpu[1][1].tokens[-2:]) == stop_seq
    assert cpu[2][2].stop_reason == "stop" and len(cpu[2][2].tokens) <= 7
    # a sample's tokens do not depend on its siblings stopping: each is a prefix of its draw
    for got in cpu[:3]:
        for s, r in zip(got, ref, strict=True):
            assert s.tokens == r.tokens[: len(s.tokens)]
            assert s.stop_reason == "stop" or s.tokens == r.tokens


def test_fallback_cache_samples_like_its_learner(gpt2_model):
    prompts = [[5, 6, 7, 8], [9, 10]]
    specs = [spec(p, num_samples=3, max_tokens=6, seed=i) for i, p in enumerate(prompts)]
    got = decode(gpt2_model, specs, CPU, None)
    assert _same(decode(gpt2_model, specs, DEVICE_LIKE, None), got)
    for prompt, seqs in zip(prompts, got, strict=True):
        ids = torch.tensor([prompt + s.tokens[:-1] for s in seqs])
        targets = torch.tensor([prompt[1:] + s.tokens for s in seqs])
        with torch.no_grad():
            learner = target_logprobs(gpt2_model, ids, targets)[:, len(prompt) - 1 :]
        assert (learner - torch.tensor([s.logprobs for s in seqs])).abs().max() < 1e-4
