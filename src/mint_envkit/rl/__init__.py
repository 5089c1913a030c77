"""The RL layer: rollouts, advantages, the training loop and its config.

Which backend a script talks to is decided here too: :func:`resolve_connection`
(``"auto"``: MinT when ``MINT_API_KEY`` is set, else the embedded backend),
:func:`default_model` for it, and :func:`local_backend` to start the embedded server
for a script that drives the ``mint`` SDK itself (with :func:`local_api_key`).

Example::

    # not run: needs a running backend (it trains) and a dataset builder
    import asyncio
    from mint_envkit.rl import Config, run_training

    asyncio.run(run_training(Config(dataset_builder=builder, model_name="mint-envkit/tiny-qwen3",
                                    log_path="runs/demo", max_steps=2)))
"""

from mint_envkit.rl.backend import (
    Connection,
    local_api_key,
    local_backend,
    resolve_connection,
    shared_local_backend,
)
from mint_envkit.rl.config import Config, KLReferenceConfig, default_model
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
    "Connection",
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
    "default_model",
    "fine_tune_on_rollouts",
    "good_rollouts",
    "local_api_key",
    "local_backend",
    "resolve_connection",
    "rollout_groups",
    "run_distillation",
    "run_training",
    "shared_local_backend",
    "supervised_examples",
]
