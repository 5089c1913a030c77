"""The RL layer: rollouts, advantages, the training loop and its config.

Example::

    import asyncio
    from mint_envkit.rl import Config, run_training

    asyncio.run(run_training(Config(dataset_builder=builder, model_name="mint-envkit/tiny-qwen3",
                                    log_path="runs/demo", max_steps=2)))
"""

from mint_envkit.rl.advantages import (
    batch_advantages,
    constant_reason,
    group_advantages,
    kl_adjusted_advantages,
)
from mint_envkit.rl.backend import resolve_backend
from mint_envkit.rl.config import LOSS_FNS, Config, KLReferenceConfig
from mint_envkit.rl.distill import run_distillation
from mint_envkit.rl.rollouts import Sampler, SampleRequest, rollout_group, rollout_groups
from mint_envkit.rl.scripted import GroupReport, ScriptedPolicy, ScriptedReport
from mint_envkit.rl.sft import (
    SFTResult,
    SupervisedExample,
    fine_tune_on_rollouts,
    good_rollouts,
    supervised_examples,
)
from mint_envkit.rl.train import RunResult, run_training
from mint_envkit.rl.types import GroupRollout, SampledTokens, Trajectory, Transition

__all__ = [
    "LOSS_FNS",
    "Config",
    "GroupReport",
    "GroupRollout",
    "KLReferenceConfig",
    "RunResult",
    "SFTResult",
    "SampleRequest",
    "SampledTokens",
    "Sampler",
    "ScriptedPolicy",
    "ScriptedReport",
    "SupervisedExample",
    "Trajectory",
    "Transition",
    "batch_advantages",
    "constant_reason",
    "fine_tune_on_rollouts",
    "good_rollouts",
    "group_advantages",
    "kl_adjusted_advantages",
    "resolve_backend",
    "rollout_group",
    "rollout_groups",
    "run_distillation",
    "run_training",
    "supervised_examples",
]
