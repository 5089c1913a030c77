"""Engine sampling: logprobs, temperature and truncation, seeds, stops, frozen snapshots, batching."""

from __future__ import annotations

import torch
from engine_kit import PROMPT, SMALL, ce_data, trained_lora

from mint_envkit.local.engine.records import EngineError, SampledSequence
from mint_envkit.local.models.loader import load_base_model
from mint_envkit.rendering.tokenizer import get_tokenizer


def test_sampled_logprobs_equal_forward_logprobs(engine):
    model_id = trained_lora(engine)
    sampler, path = engine.save_for_sampler(model_id, None)
    assert path == ""
    seqs = engine.sample(sampler, PROMPT, num_samples=5, max_tokens=12, seed=3)
    assert len(seqs) == 5 and all(isinstance(s, SampledSequence) for s in seqs)
    data = [
        {
            "model_input": PROMPT + s.tokens[:-1],
            "loss_fn_inputs": {"target_tokens": PROMPT[1:] + s.tokens},
        }
        for s in seqs
    ]
    out = engine.forward(model_id, data, "cross_entropy", None, backward=False)
    k = len(PROMPT) - 1
    for s, lp in zip(seqs, out.logprobs, strict=True):
        assert len(s.logprobs) == len(s.tokens) == 12
        assert max(abs(a - b) for a, b in zip(s.logprobs, lp[k:], strict=True)) < 1e-4
    # compute_logprobs on the sampler agrees too, and starts with None.
    lps = engine.compute_logprobs(sampler, PROMPT + seqs[0].tokens)
    assert lps[0] is None and len(lps) == len(PROMPT) + 12
    assert max(abs(a - b) for a, b in zip(lps[1:], out.logprobs[0], strict=True)) < 1e-4
    assert engine.compute_logprobs(sampler, [5]) == [None]


def test_logprobs_follow_temperature_and_truncation(engine):
    base = engine.create_sampler(base_model=SMALL)
    model = load_base_model(SMALL, device="cpu").model
    seq = engine.sample(base, PROMPT, max_tokens=4, temperature=0.5, seed=1)[0]
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT + seq.tokens])).logits[0].float()
    k = len(PROMPT) - 1
    for i, (tok, lp) in enumerate(zip(seq.tokens, seq.logprobs, strict=True)):
        expected = torch.log_softmax(logits[k + i] / 0.5, -1)[tok].item()
        assert abs(expected - lp) < 1e-4
    # top_k=1 / tiny top_p: one token left, probability 1, it is the argmax.
    for kwargs in ({"top_k": 1}, {"top_p": 1e-6}):
        greedy = engine.sample(base, PROMPT, max_tokens=4, seed=2, **kwargs)[0]
        assert all(abs(lp) < 1e-6 for lp in greedy.logprobs)
        with torch.no_grad():
            lg = model(torch.tensor([PROMPT + greedy.tokens])).logits[0]
        assert greedy.tokens == lg[k : k + 4].argmax(-1).tolist()
    # top_k=2: renormalised over the two best tokens.
    seq2 = engine.sample(base, PROMPT, max_tokens=1, top_k=2, seed=4)[0]
    top2 = torch.topk(logits[k], 2)
    renorm = torch.log_softmax(top2.values, -1)
    assert seq2.tokens[0] in top2.indices.tolist()
    assert abs(renorm[top2.indices.tolist().index(seq2.tokens[0])].item() - seq2.logprobs[0]) < 1e-4


def test_batched_sampling_is_seeded(engine):
    base = engine.create_sampler(base_model=SMALL)
    a = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=11)
    b = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=11)
    c = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=12)
    assert a == b
    assert a != c
    assert len({tuple(s.tokens) for s in a}) > 1  # rows are independent draws
    assert all(s.stop_reason == "length" and len(s.tokens) == 10 for s in a)


def test_stop_token_sequence_and_string(engine):
    base = engine.create_sampler(base_model=SMALL)
    ref = engine.sample(base, PROMPT, max_tokens=8, seed=5)[0]
    # a token id: stop at its first occurrence, included in tokens
    stop_tok = ref.tokens[3]
    first = ref.tokens.index(stop_tok)
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[stop_tok])[0]
    assert got.tokens == ref.tokens[: first + 1] and got.stop_reason == "stop"
    assert got.logprobs == ref.logprobs[: first + 1]
    # a token sequence
    seq = ref.tokens[2:4]
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[seq])[0]
    assert got.tokens[-2:] == seq and got.stop_reason == "stop" and len(got.tokens) <= 4
    # a string, checked in the decoded completion
    tok = get_tokenizer(SMALL)
    text = tok.decode(ref.tokens[4:5])
    assert text.strip()
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[text])[0]
    assert got.stop_reason == "stop" and len(got.tokens) <= 5
    assert text in tok.decode(got.tokens) and text not in tok.decode(got.tokens[:-1])
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=text)[0]  # a bare str
    assert got.stop_reason == "stop"
    # a stop that never matches -> length
    never = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=["\x00never\x00"])[0]
    assert never == ref and never.stop_reason == "length"


def test_rows_that_stop_stop_growing(engine):
    base = engine.create_sampler(base_model=SMALL)
    ref = engine.sample(base, PROMPT, num_samples=16, max_tokens=6, seed=9)
    stop_tok = ref[0].tokens[1]
    got = engine.sample(base, PROMPT, num_samples=16, max_tokens=6, seed=9, stop=[stop_tok])
    assert any(s.stop_reason == "stop" for s in got)
    for s in got:
        assert len(s.tokens) == len(s.logprobs) <= 6
        if s.stop_reason == "stop":
            assert s.tokens[-1] == stop_tok and stop_tok not in s.tokens[:-1]
        else:
            assert len(s.tokens) == 6 and stop_tok not in s.tokens


def test_old_sampler_is_frozen_new_snapshot_differs(engine):
    model_id = trained_lora(engine, seed=1)
    old, _ = engine.save_for_sampler(model_id, None)
    before = engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7)
    before_lp = engine.compute_logprobs(old, PROMPT)
    for _ in range(3):
        engine.forward(model_id, ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=2e-2)
    after = engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7)
    assert after == before
    assert engine.compute_logprobs(old, PROMPT) == before_lp
    new, _ = engine.save_for_sampler(model_id, None)
    assert engine.compute_logprobs(new, PROMPT) != before_lp
    # interleaving samplers of two shapes on one base keeps each one right
    other = engine.create_lora(SMALL, rank=2, seed=3, train_mlp=False)
    other_s, _ = engine.save_for_sampler(other, None)
    engine.sample(other_s, PROMPT, max_tokens=2, seed=0)
    assert engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7) == before


def test_sample_many_batches_requests_like_separate_calls(engine):
    model_id = trained_lora(engine, seed=8, steps=1)
    sampler, _ = engine.save_for_sampler(model_id, None)
    base_sampler = engine.create_sampler(base_model=SMALL)
    requests = [
        (sampler, [10, 11, 12], {"num_samples": 3, "max_tokens": 5, "seed": 1}),
        (
            sampler,
            [7, 8, 9, 10, 11, 12, 13],
            {"num_samples": 2, "max_tokens": 3, "seed": 2, "temperature": 0.5},
        ),
        (sampler, [30], {"num_samples": 1, "max_tokens": 6, "seed": 3, "top_k": 5}),
        (base_sampler, [10, 11, 12], {"num_samples": 2, "max_tokens": 4, "seed": 4}),
        (sampler, [], {"num_samples": 1}),  # invalid: empty prompt
        ("no-such-sampler", [1, 2], {}),
    ]
    batched = engine.sample_many(requests)
    assert isinstance(batched[4], EngineError) and "prompt" in str(batched[4])
    assert isinstance(batched[5], EngineError)
    for (sid, prompt, kwargs), got in zip(requests[:4], batched[:4], strict=True):
        alone = engine.sample(sid, prompt, **kwargs)
        assert [s.tokens for s in got] == [s.tokens for s in alone]
        assert [s.stop_reason for s in got] == [s.stop_reason for s in alone]
        for a, b in zip(got, alone, strict=True):
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
    # a padded batch still gives logprobs equal to a forward pass on the same weights
    seq0 = batched[0][0]
    forward0 = engine.compute_logprobs(sampler, [10, 11, 12, *seq0.tokens])[-len(seq0.tokens) :]
    assert max(abs(x - y) for x, y in zip(seq0.logprobs, forward0, strict=True)) < 1e-4
