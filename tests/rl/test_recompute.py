"""Behaviour logprobs are recomputed whenever the sampling distribution is not the policy's.

The engine returns the logprobs of the distribution it draws from: temperature-scaled,
truncated to ``top_k`` / ``top_p`` and renormalised. Any of these makes them differ from
the policy's, so the default (``recompute_behavior_logprobs=None``) recomputes them, and
the entropy metrics say which distribution they measure.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, KLReferenceConfig, SingleTurnEnv
from mint_envkit.rl.diagnostics import recomputes_behavior_logprobs, sample_train_metrics
from mint_envkit.rl.train import main

MODEL = "mint-envkit/tiny-qwen3-small"
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(
    ("settings", "changes_distribution", "recomputes"),
    [
        ({}, False, False),
        ({"temperature": 0.7}, True, True),
        ({"top_k": 5}, True, True),
        ({"top_k": 1}, True, True),
        ({"top_p": 0.8}, True, True),
        ({"top_p": 0.999}, True, True),
        ({"temperature": 1.0, "top_k": -1, "top_p": 1.0}, False, False),
        ({"top_k": 5, "recompute_behavior_logprobs": False}, True, False),
        ({"top_p": 0.8, "recompute_behavior_logprobs": False}, True, False),
        ({"recompute_behavior_logprobs": True}, False, True),
    ],
)
def test_recompute_is_on_by_default_for_every_setting_that_changes_the_sampling_distribution(
    phase_config, settings, changes_distribution, recomputes
):
    from mint_envkit.rl.diagnostics import samples_from_policy  # the one deciding function

    config = attrs.evolve(phase_config, **settings)
    assert samples_from_policy(config) is not changes_distribution, settings
    assert recomputes_behavior_logprobs(config) is recomputes, settings


def test_entropy_is_of_the_sampled_logprobs_and_the_cross_entropy_of_the_recomputed():
    recomputed = [[-0.5, -1.0], [-2.0]]  # log pi of the drawn tokens
    sampled = [[-0.25, -0.75], [-1.5]]  # log q: truncated and renormalised, so >= log pi
    learner = [[-0.5, -0.8], [-1.0]]
    metrics = sample_train_metrics(recomputed, learner, sampled=sampled)
    assert metrics["optim/entropy"] == pytest.approx(2.5 / 3)  # H(q)
    assert metrics["optim/cross_entropy_policy"] == pytest.approx(3.5 / 3)  # E_q[-log pi]
    assert metrics["optim/kl_sample_train_v1"] == pytest.approx(-1.2 / 3)
    plain = sample_train_metrics(sampled, learner)  # nothing recomputed: no cross-entropy
    assert "optim/cross_entropy_policy" not in plain
    assert plain["optim/entropy"] == pytest.approx(2.5 / 3)


class HashRewardEnv(SingleTurnEnv):
    """Reward: a hash of the whole reply in [0, 1), so every group of distinct replies trains."""

    def score(self, message):
        import zlib

        from mint_envkit import MessageStepResult

        reward = (zlib.crc32(message["content"].encode()) % 1000) / 1000
        return MessageStepResult(reward=reward, episode_done=True, metrics={})


def _config(tmp_path: Path, server, **overrides) -> Config:
    builder = DatasetBuilder(
        env=HashRewardEnv,
        problems=[{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)],
        batch_size=2,
        group_size=8,
        score_truncated=True,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=6,  # the builder owns the reply limit
    )
    fields = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 1,
        "base_url": server.base_url,
        "backend": "local",
        "save_every": 0,
        "kl_penalty_coef": 0.05,
        "kl_reference_config": KLReferenceConfig(MODEL),
    }
    fields.update(overrides)
    return Config(**fields)


@pytest.mark.integration
@pytest.mark.parametrize("truncation", [{"top_k": 5}, {"top_p": 0.8}])
async def test_truncated_sampling_at_t1_recomputes_and_kl_to_the_base_is_zero_at_step_0(
    tmp_path, server, truncation
):
    metrics = (await main(_config(tmp_path, server, temperature=1.0, **truncation))).final_metrics
    assert metrics["train/datums"] > 0
    assert metrics["optim/behavior_logprobs_recomputed"] == 1.0
    # the policy is the base model before any update: recomputed logprobs match the reference
    assert abs(metrics["kl_policy_base"]) < 1e-3
    assert abs(metrics["optim/kl_sample_train_v1"]) < 1e-3
    # truncation renormalises, so log q >= log pi on every drawn token: H(q) <= E_q[-log pi]
    assert 0 < metrics["optim/entropy"] < metrics["optim/cross_entropy_policy"]


class ConstantEnv(SingleTurnEnv):
    """Reward 1 for every reply: every group is constant, so no step trains."""

    def score(self, message):
        from mint_envkit import MessageStepResult

        return MessageStepResult(reward=1.0, episode_done=True, metrics={})


@pytest.mark.integration
async def test_a_step_that_trains_nothing_logs_both_entropies_of_every_reply(tmp_path, server):
    config = _config(tmp_path, server, top_k=5, remove_constant_reward_groups=True)
    builder = attrs.evolve(config.dataset_builder, env=ConstantEnv)
    metrics = (await main(attrs.evolve(config, dataset_builder=builder))).final_metrics
    assert metrics["train/datums"] == 0
    assert metrics["optim/behavior_logprobs_recomputed"] == 1.0
    assert abs(metrics["optim/kl_sample_train_v1"]) < 1e-3
    assert 0 < metrics["optim/entropy"] < metrics["optim/cross_entropy_policy"]


def test_the_entropy_metrics_are_documented_with_what_they_measure():
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    for name in ("optim/entropy", "optim/cross_entropy_policy"):
        assert f"`{name}`" in text, name
    assert "top_k" in text and "top_p" in text
    assert "correction is exact." not in text  # it is exact only under conditions
