"""The RL update has the right sign: group-relative importance sampling learns a toy reward.

Toy task: reward 1 when the first sampled token is a chosen token X (the base
model's most likely first token, which starts near 1% probability), else 0.
Each step samples a group per prompt from a fresh snapshot of the policy,
uses advantages ``reward - group mean`` on every sampled token, runs one
``importance_sampling`` forward_backward with the sampler's logprobs, and one
Adam step. The mean reward must climb from near 0 to at least 0.8 within 30
steps.

Why ``train_unembed=True`` on the small model: its hidden size is 64, and the
final RMSNorm caps the logit margin LoRA on attention and MLP can reach near
``sqrt(64) = 8`` for the chosen lm_head row, about 45% probability against
2047 others (measured: the reward plateaus at 0.4-0.5); LoRA on the output
layer removes the cap. Learning rate 5e-3 (the issue's measurement: near 1e-2
collapsed once in several seeds, 3e-3..5e-3 did not).
"""

from __future__ import annotations

import time

import pytest
import torch

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.models.loader import load_base_model

SMALL = "mint-envkit/tiny-qwen3-small"
PROMPTS = [[2044, 10 + i, 20 + i, 2045, 2044, 30] for i in range(4)]
GROUP = 16


def _chosen_token() -> int:
    model = load_base_model(SMALL, device="cpu").model
    with torch.no_grad():
        probs = model(torch.tensor(PROMPTS)).logits[:, -1].float().softmax(-1)
    return int(probs.mean(0).argmax())


def _run(engine: Engine, seed: int, steps: int = 30, lr: float = 5e-3) -> list[float]:
    target = _chosen_token()
    model_id = engine.create_lora(SMALL, rank=8, seed=seed, train_unembed=True)
    rewards: list[float] = []
    for step in range(steps):
        sampler, _ = engine.save_for_sampler(model_id, None)
        data = []
        batch_rewards: list[float] = []
        for p_index, prompt in enumerate(PROMPTS):
            seqs = engine.sample(
                sampler,
                prompt,
                num_samples=GROUP,
                max_tokens=2,
                seed=1000 * seed + 10 * step + p_index,
            )
            group = [1.0 if s.tokens[0] == target else 0.0 for s in seqs]
            mean = sum(group) / len(group)
            batch_rewards += group
            pad = len(prompt) - 1
            for s, r in zip(seqs, group, strict=True):
                data.append(
                    {
                        "model_input": prompt + s.tokens[:-1],
                        "loss_fn_inputs": {
                            "target_tokens": prompt[1:] + s.tokens,
                            "logprobs": [0.0] * pad + s.logprobs,
                            "advantages": [0.0] * pad + [r - mean] * len(s.tokens),
                        },
                    }
                )
        engine.release_sampler(sampler)
        rewards.append(sum(batch_rewards) / len(batch_rewards))
        if len(rewards) >= 2 and min(rewards[-2:]) >= 0.8:
            break
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
        engine.optim_step(model_id, learning_rate=lr)
    return rewards


@pytest.mark.parametrize("seed", [0, 2])
def test_importance_sampling_learns_first_token_reward(tmp_path, seed):
    engine = Engine(state_dir=tmp_path, num_threads=1)
    start = time.perf_counter()
    rewards = _run(engine, seed)
    elapsed = time.perf_counter() - start
    print(
        f"seed {seed}: {len(rewards)} steps, {elapsed:.1f}s, rewards",
        [round(r, 2) for r in rewards],
    )
    assert rewards[0] < 0.2, rewards
    assert len(rewards) <= 30 and min(rewards[-2:]) >= 0.8, rewards
