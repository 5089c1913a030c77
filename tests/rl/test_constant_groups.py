"""Steps where every group has a constant reward, through the real mint SDK and the embedded backend.

``Config.remove_constant_reward_groups=False`` (the default, as tinker-cookbook's)
keeps the constant groups in the update with advantages of 0: their datums get a
forward instead of a backward pass, and the optimizer step still runs on a gradient
of exactly 0. With ``True`` such a step trains nothing, yet it still logs
``optim/entropy`` and ``optim/kl_sample_train_v1|v2`` (from a forward pass without
gradient, which leaves the weights alone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv
from mint_envkit.errors import ConfigError
from mint_envkit.rl.train import main

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"
DIAGNOSTICS = ("optim/entropy", "optim/kl_sample_train_v1", "optim/kl_sample_train_v2")


class AlwaysCorrectEnv(SingleTurnEnv):
    """Every reply counts as correct: every group is constant (all correct)."""

    parser = staticmethod(lambda text: text or "empty")

    def check(self, parsed, answer):
        return True


def _config(tmp_path: Path, server, **overrides) -> Config:
    builder = DatasetBuilder(
        env=AlwaysCorrectEnv,
        problems=[{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)],
        batch_size=2,
        group_size=4,
        score_truncated=True,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=4,  # the builder owns the reply limit
    )
    fields = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 1,
        "base_url": server.base_url if server is not None else None,
        "backend": "local",
        "save_every": 0,
    }
    fields.update(overrides)
    return Config(**fields)


async def _logprobs_of_final_and_base(server, result) -> tuple[list[float], list[float]]:
    """Logprobs of a fixed token sequence under the run's final weights and under the base model.

    A fresh LoRA adapter starts with B = 0, so the two agree exactly until an update moves it.
    """
    import mint

    service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
    try:
        final = await service.create_sampling_client_async(
            model_path=result.final_checkpoint["sampler_path"]
        )
        base = await service.create_sampling_client_async(base_model=MODEL)
        tokens = mint.ModelInput.from_ints([5, 17, 42, 7, 99, 3, 11, 64])
        ours = await final.compute_logprobs_async(tokens)
        theirs = await base.compute_logprobs_async(tokens)
    finally:
        service.holder.close()  # stop its heartbeat before the server goes away
    return [float(v) for v in ours[1:]], [float(v) for v in theirs[1:]]


async def test_a_step_where_every_group_is_constant_logs_entropy_and_kl_and_keeps_the_weights(
    tmp_path, server
):
    server.reset_counts()
    result = await main(_config(tmp_path, server, remove_constant_reward_groups=True))
    metrics = result.final_metrics
    assert metrics["train/datums"] == 0  # every group dropped: nothing trains
    assert metrics["env/all/by_group/dropped_all_correct"] == 2
    assert metrics["optim/entropy"] > 0
    # step 0, temperature 1: the sampler and the learner hold the same weights
    assert abs(metrics["optim/kl_sample_train_v1"]) < 1e-3
    assert 0 <= metrics["optim/kl_sample_train_v2"] < 1e-3
    assert metrics["env/all/by_group/kept_constant"] == 0
    # measured by one forward pass: no backward, no optimizer step ...
    counts = server.request_counts()
    assert (counts["forward"], counts["forward_backward"], counts["optim_step"]) == (1, 0, 0)
    # ... so the final weights are still the initial ones (the base model's logprobs)
    ours, base = await _logprobs_of_final_and_base(server, result)
    assert ours == pytest.approx(base, abs=1e-6)


async def test_constant_groups_kept_in_the_update_train_and_log_the_same_diagnostics(
    tmp_path, server
):
    server.reset_counts()
    result = await main(_config(tmp_path, server, remove_constant_reward_groups=False))
    metrics = result.final_metrics
    assert metrics["train/datums"] == 8  # two groups of four, each reply one datum
    # kept, so not counted as dropped; still counted as all correct
    assert metrics["env/all/by_group/dropped"] == 0
    assert metrics["env/all/by_group/dropped_all_correct"] == 0
    assert metrics["env/all/by_group/kept_constant"] == 2
    assert metrics["env/all/by_group/frac_all_good"] == 1.0
    assert metrics["env/all/by_group/frac_mixed"] == 0.0
    assert set(DIAGNOSTICS) <= set(metrics)
    assert metrics["optim/entropy"] > 0
    assert abs(metrics["optim/kl_sample_train_v1"]) < 1e-3
    assert metrics["train/zero_advantage_datums"] == 8
    counts = server.request_counts()
    # the zero-advantage datums: one forward measures seven of them, the shortest gets the
    # backward pass so that the optimizer step sees its gradient of exactly 0
    assert (counts["forward"], counts["forward_backward"], counts["optim_step"]) == (1, 1, 1)
    # every advantage is 0: the policy gradient is 0, so the weights do not move either
    ours, base = await _logprobs_of_final_and_base(server, result)
    assert ours == pytest.approx(base, abs=1e-6)


async def test_both_settings_measure_the_same_entropy_and_kl(tmp_path, server):
    """The same seed samples the same replies: dropped or kept, the diagnostics agree."""
    dropped = (
        await main(_config(tmp_path / "dropped", server, remove_constant_reward_groups=True))
    ).final_metrics
    kept = (await main(_config(tmp_path / "kept", server))).final_metrics
    assert dropped["train/datums"] == 0 and kept["train/datums"] > 0
    for key in DIAGNOSTICS:
        assert dropped[key] == pytest.approx(kept[key], rel=1e-4, abs=1e-6), key


def test_kept_constant_groups_get_zero_advantages_and_are_not_counted_as_dropped():
    from mint_envkit.rl.advantages import batch_advantages

    groups = [
        ([1.0, 0.0], [{"correct": 1.0}, {"correct": 0.0}]),  # mixed
        ([1.0, 1.0], [{"correct": 1.0}, {"correct": 1.0}]),  # all correct
        None,  # failed
        ([0.3, 0.3, 0.3], [{}, {}, {}]),  # constant
    ]
    kept, metrics = batch_advantages(groups, remove_constant=False)
    assert kept == {0: [0.5, -0.5], 1: [0.0, 0.0], 3: [0.0, 0.0, 0.0]}
    assert metrics["env/all/by_group/kept_constant"] == 2
    assert metrics["env/all/by_group/dropped"] == 0
    assert metrics["env/all/by_group/dropped_all_correct"] == 0
    assert metrics["env/all/by_group/dropped_constant"] == 0
    # what the groups were does not depend on whether they train
    dropped, dropping = batch_advantages(groups, remove_constant=True)
    assert dropped == {0: [0.5, -0.5]}
    assert dropping["env/all/by_group/dropped"] == 2
    assert dropping["env/all/by_group/kept_constant"] == 0
    for key in ("frac_mixed", "frac_all_good", "frac_all_bad"):
        assert metrics[f"env/all/by_group/{key}"] == dropping[f"env/all/by_group/{key}"], key
    # the default keeps them, as tinker-cookbook 0.3.0 does
    assert batch_advantages(groups) == (kept, metrics)
    assert metrics["env/all/by_group/frac_mixed"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("value", ["no", 0, None])
def test_config_refuses_a_remove_constant_reward_groups_that_is_not_a_bool(tmp_path, value):
    with pytest.raises(ConfigError, match="remove_constant_reward_groups must be True or False"):
        _config(tmp_path, server=None, remove_constant_reward_groups=value)


def test_remove_constant_reward_groups_defaults_to_the_cookbooks_false(tmp_path):
    """tinker-cookbook 0.3.0: ``remove_constant_reward_groups: bool = False``
    (tinker_cookbook/rl/train.py, line 484 of the wheel)."""
    config = _config(tmp_path, server=None)
    assert config.remove_constant_reward_groups is False
    assert config.public_dict()["remove_constant_reward_groups"] is False
