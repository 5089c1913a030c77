"""The engine on CUDA (bf16): device sampling, its policy, compiled steps, logprob fidelity.

Skipped where ``torch.cuda.is_available()`` is False (CI, the development machines);
``benchmarks/gpu_check.sh`` runs them on a GPU machine.
"""

from __future__ import annotations

import copy

import pytest
import torch
from engine_kit import PROMPT, SMALL, spec

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.decode import DecodePolicy, decode, policy_for
from mint_envkit.local.engine.numerics import target_logprobs

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)"
)


def _fidelity(model, policy: DecodePolicy) -> torch.Tensor:
    seqs = decode(model, [spec(PROMPT, num_samples=8, max_tokens=64, seed=1)], policy, None)[0]
    ids = torch.tensor([PROMPT + s.tokens[:-1] for s in seqs], device="cuda")
    targets = torch.tensor([PROMPT[1:] + s.tokens for s in seqs], device="cuda")
    with torch.no_grad():
        learner = target_logprobs(model, ids, targets)[:, len(PROMPT) - 1 :]
    return (learner - torch.tensor([s.logprobs for s in seqs], device="cuda")).abs()


def test_cuda_engine_samples_on_the_device_seeded():
    engine = Engine(device="cuda")
    sampler = engine.create_sampler(base_model=SMALL)
    a = engine.sample(sampler, PROMPT, num_samples=8, max_tokens=32, seed=5)
    assert a == engine.sample(sampler, PROMPT, num_samples=8, max_tokens=32, seed=5)
    batched = engine.sample_many(
        [
            (sampler, PROMPT, {"num_samples": 8, "max_tokens": 32, "seed": 5}),
            (sampler, [2044, 7], {"num_samples": 3, "max_tokens": 9, "seed": 6}),
        ]
    )
    assert [s.tokens for s in batched[0]] == [s.tokens for s in a]


@pytest.mark.parametrize("compile_step", [False, True], ids=["eager", "compiled"])
def test_cuda_bf16_logprobs_match_the_learner(small_model, compile_step):
    # Same bounds as the CPU bf16 test (test_engine_numerics.py): fp32 head and
    # log-softmax on both paths, the bf16 body's rounding left.
    model = copy.deepcopy(small_model).to("cuda", torch.bfloat16)
    policy = DecodePolicy(sync_every=16, compile_step=compile_step, static_shapes=True)
    diff = _fidelity(model, policy)
    assert diff.max() < 0.03 and diff.mean() < 0.004


def test_cuda_policy_is_the_device_one():
    policy = policy_for(torch.device("cuda"))
    assert policy.static_shapes and policy.sync_every >= 1
