"""The RL layer: rollouts, advantages, the training loop and its config.

Example::

    import asyncio
    from mint_envkit.rl import Config, run_training

    asyncio.run(run_training(Config(dataset_builder=builder, model_name="mint-envkit/tiny-qwen3",
                                    log_path="runs/demo", max_steps=2)))
"""

from mint_envkit.rl.config import Config, KLReferenceConfig
from mint_envkit.rl.distill import run_distillation
from mint_envkit.rl.rollouts import Sampler, rollout_groups
from mint_envkit.rl.scripted import GroupReport, ScriptedPolicy, ScriptedReport
from mint_envkit.rl.sft import (
    SFTResult,
    SupervisedExample,
    fine_tune_on_rollouts,
    good_rollouts,
    supervised_examples,
)
from mint_envkit.rl.train import RunResult, run_training
from mint_envkit.rl.types import GroupRollout, Trajectory, Transition

__all__ = [
    "Config",
    "GroupReport",
    "GroupRollout",
    "KLReferenceConfig",
    "RunResult",
    "SFTResult",
    "Sampler",
    "ScriptedPolicy",
    "ScriptedReport",
    "SupervisedExample",
    "Trajectory",
    "Transition",
    "fine_tune_on_rollouts",
    "good_rollouts",
    "rollout_groups",
    "run_distillation",
    "run_training",
    "supervised_examples",
]
