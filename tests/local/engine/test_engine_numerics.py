"""fp32 head and log-softmax: plain and LoRA heads, the learner's logprobs, bf16 fidelity."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from engine_kit import spec

from mint_envkit.local.engine import numerics
from mint_envkit.local.engine.decode import DecodePolicy, decode
from mint_envkit.local.engine.numerics import head_logits, head_logprobs, target_logprobs

PROMPT = [2044] + [(37 * i + 11) % 2000 for i in range(15)]


def test_head_logits_run_in_fp32_whatever_the_model_dtype():
    gen = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(64, 300, bias=False).to(torch.bfloat16)
    hidden = torch.randn(4, 64, generator=gen).to(torch.bfloat16)
    got = head_logits(head, hidden)
    assert got.dtype == torch.float32
    assert torch.equal(got, F.linear(hidden.float(), head.weight.float()))
    # the bf16 matmul rounds its output: that is what the fp32 head avoids
    assert (head(hidden).float() - got).abs().max() > 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_a_frozen_head_gives_autograd_s_logprobs_and_gradient_without_keeping_logits(
    monkeypatch, dtype, bias
):
    """Several targets per position, positions in chunks smaller than the input: the values
    and the gradient to the hidden states are those of logits + log_softmax + autograd."""
    monkeypatch.setattr(numerics, "HEAD_CHUNK_LOGITS", 300 * 3)  # 3 positions per chunk
    gen = torch.Generator().manual_seed(2)
    head = torch.nn.Linear(64, 300, bias=bias).to(dtype).requires_grad_(False)
    hidden = torch.randn(7, 64, generator=gen).to(dtype).requires_grad_(True)
    targets = torch.randint(0, 300, (7, 2), generator=gen)
    upstream = torch.randn(7, 2, generator=gen)
    assert numerics.frozen_head(head)
    got = head_logprobs(head, hidden, targets)
    (grad,) = torch.autograd.grad((got * upstream).sum(), hidden)
    ref_hidden = hidden.detach().clone().requires_grad_(True)
    logits = head_logits(head, ref_hidden)
    want = logits.gather(-1, targets) - torch.logsumexp(logits, dim=-1, keepdim=True)
    (ref_grad,) = torch.autograd.grad((want * upstream).sum(), ref_hidden)
    assert got.dtype == torch.float32 and grad.dtype == dtype
    # one float32 computation in another order: ~1e-7 relative, bounded well above it
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    tol = 1e-5 if dtype == torch.float32 else 1e-2  # the bf16 gradient is rounded to bf16
    assert torch.allclose(grad.float(), ref_grad.float(), rtol=tol, atol=tol)
    with torch.no_grad():  # no gradient wanted: the same values
        assert torch.allclose(head_logprobs(head, hidden, targets), want, rtol=1e-5, atol=1e-5)


def test_a_frozen_head_skips_the_gradient_where_none_can_arrive():
    """``need`` false where the upstream gradient is zero (a prompt position): same gradient."""
    gen = torch.Generator().manual_seed(3)
    head = torch.nn.Linear(32, 100, bias=False).requires_grad_(False)
    hidden = torch.randn(6, 32, generator=gen).requires_grad_(True)
    targets = torch.randint(0, 100, (6, 1), generator=gen)
    need = torch.tensor([False, False, True, False, True, True])
    upstream = torch.randn(6, 1, generator=gen) * need[:, None]
    (skipped,) = torch.autograd.grad(
        (head_logprobs(head, hidden, targets, need) * upstream).sum(), hidden
    )
    (full,) = torch.autograd.grad((head_logprobs(head, hidden, targets) * upstream).sum(), hidden)
    assert torch.equal(skipped[~need], torch.zeros_like(skipped[~need]))
    assert torch.allclose(skipped, full, rtol=1e-6, atol=1e-7)


def test_a_trained_or_wrapped_head_is_not_frozen():
    head = torch.nn.Linear(8, 20)
    assert not numerics.frozen_head(head)  # its weight trains
    assert numerics.frozen_head(head.requires_grad_(False))
    assert not numerics.frozen_head(torch.nn.Sequential(head))


def test_head_logits_include_an_unmerged_lora_delta(small_model):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(
        copy.deepcopy(small_model), LoraConfig(r=4, lora_alpha=8, target_modules=["lm_head"])
    )
    head = model.get_base_model().lm_head
    with torch.no_grad():
        for p in head.lora_B.parameters():
            p.normal_(0.0, 0.5, generator=torch.Generator().manual_seed(1))
        hidden = torch.randn(3, small_model.config.hidden_size)
        plain = F.linear(hidden, head.base_layer.weight)
        got = head_logits(head, hidden)
        assert torch.allclose(got, head(hidden), atol=1e-5)
        assert (got - plain).abs().max() > 1e-2  # the adapter is in it


def test_target_logprobs_equal_the_model_log_softmax(small_model):
    ids = torch.tensor([PROMPT, PROMPT[::-1]])
    targets = torch.roll(ids, -1, dims=1)
    with torch.no_grad():
        got = target_logprobs(small_model, ids, targets)
        logits = small_model(input_ids=ids).logits.float()
    want = logits.log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
    assert got.dtype == torch.float32 and (got - want).abs().max() < 1e-5


# Sampled vs learner logprobs of the same tokens, per dtype (max, mean over 8 x 32 tokens).
# fp32: both paths differ only in summation order, < 1e-4 (measured 2e-6).
# bf16: the head and log-softmax are fp32 on both paths, so what is left is the bf16 body:
# one-token decode steps and the full-sequence forward run different matmul shapes, and
# transformers' own cache path differs from its full forward by the same amount (up to 0.07
# nats over the whole vocabulary, measured on tiny-qwen3). On tiny-qwen3-small, CPU, seeds 0-2:
# max 0.007-0.011, mean 0.0011-0.0014 (a bf16 head on both paths: max 0.043). The bounds are
# about 2.5x the measured values, for other CPUs' bf16 kernels.
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (0.03, 0.004)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_sampled_logprobs_match_the_learner_per_dtype(small_model, dtype):
    model = copy.deepcopy(small_model).to(dtype)
    policy = DecodePolicy(sync_every=1, compile_step=False, static_shapes=False)
    seqs = decode(model, [spec(PROMPT, num_samples=8, max_tokens=32, seed=1)], policy, None)[0]
    ids = torch.tensor([PROMPT + s.tokens[:-1] for s in seqs])
    targets = torch.tensor([PROMPT[1:] + s.tokens for s in seqs])
    with torch.no_grad():
        learner = target_logprobs(model, ids, targets)[:, len(PROMPT) - 1 :]
    diff = (learner - torch.tensor([s.logprobs for s in seqs])).abs()
    max_bound, mean_bound = TOLERANCE[dtype]
    assert diff.max() < max_bound and diff.mean() < mean_bound
