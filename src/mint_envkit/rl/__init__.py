"""The training layer: the RL loop and its config, distillation, fine-tuning on rollouts.

It trains on what the rollout layer (:mod:`mint_envkit.rollouts`) samples and scores,
and evaluates with :func:`mint_envkit.evaluate`; :func:`default_model` names a base
model for a backend.

Example::

    # not run: needs a running backend (it trains) and a dataset builder
    import asyncio
    from mint_envkit.rl import Config, run_training

    asyncio.run(run_training(Config(dataset_builder=builder, model_name="mint-envkit/tiny-qwen3",
                                    log_path="runs/demo", max_steps=2)))
"""

from mint_envkit.rl.config import Config, KLReferenceConfig
from mint_envkit.rl.distill import run_distillation
from mint_envkit.rl.sft import (
    SFTResult,
    SupervisedExample,
    fine_tune_on_rollouts,
    good_rollouts,
    supervised_examples,
)
from mint_envkit.rl.train import RunResult, run_training
from mint_envkit.rollouts.backend import default_model

__all__ = [
    "Config",
    "KLReferenceConfig",
    "RunResult",
    "SFTResult",
    "SupervisedExample",
    "default_model",
    "fine_tune_on_rollouts",
    "good_rollouts",
    "run_distillation",
    "run_training",
    "supervised_examples",
]
