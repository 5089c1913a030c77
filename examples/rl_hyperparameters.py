"""The main job: an RL hyperparameter sweep over the arithmetic environment.

    python examples/rl_hyperparameters.py

With no MINT_API_KEY it trains on the embedded local backend (the built-in
tiny model, offline); with MINT_API_KEY set, on MinT with Qwen/Qwen3-0.6B.
MINT_ENVKIT_BACKEND=local|mint forces a backend, MINT_BASE_MODEL a model.
The grid comes from MINT_RL_KL_COEFS, MINT_RL_TEMPS, MINT_RL_GROUPS and
MINT_RL_STEPS (default 2 x 2 x 2 configs, 1 step each); MINT_RL_BATCH,
MINT_RL_MAX_TOKENS, MINT_RL_LR, MINT_LORA_RANK and MINT_LOG_ROOT adjust the
rest. Each config is evaluated on 8 held-out problems before its first update
and after its last (the table's "Eval before" / "Eval after"); summary.png
shows both, and with MINT_RL_STEPS > 1 the reward per step. See docs/sweep.md.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arithmetic_env import ArithmeticEnv, arithmetic_problems

from mint_envkit import Config, DatasetBuilder, MintEnvkitError
from mint_envkit.rl import default_model
from mint_envkit.rollouts import resolve_connection
from mint_envkit.sweep import Sweep


def dataset_builder(model: str) -> DatasetBuilder:
    """The main job's problems: 64 to train on, 8 held out, in groups of 4."""
    return DatasetBuilder(
        env=ArithmeticEnv,
        problems=arithmetic_problems(64, seed=0),
        # Held out (another seed), the same for every config: evaluated before the
        # first update and, with the final weights, after the last one.
        test_problems=arithmetic_problems(8, seed=1),
        test_group_size=2,
        batch_size=2,
        group_size=4,
        model_name=model,
        renderer_name="qwen3_disable_thinking",
        max_generation_tokens=32,  # the reply limit: Config.max_tokens takes it
        seed=0,  # the data order (sampling has Config.sampling_seed)
        # A reply cut off at max_tokens earns ArithmeticEnv.reward_incorrect (-0.25), no
        # more than a wrong answer, or RL learns to run out of tokens instead of answering.
        context_overflow_reward=ArithmeticEnv.reward_incorrect,
    )


builder = dataset_builder(default_model("local"))
"""The main job's builder for the embedded backend's model (``audit``/``eval`` it by name:
``examples/rl_hyperparameters.py:builder``)."""


def main() -> int:
    connection = resolve_connection("auto")
    backend = connection.backend
    model = default_model(backend)
    print(f"backend: {backend} - training {model} on {connection.describe()}", flush=True)
    builder = dataset_builder(model)
    config = Config(
        dataset_builder=builder,  # owns the model, the renderer and the reply limit
        log_path=f"runs/rl_hyperparameters-{backend}",
        learning_rate=1e-4 if backend == "mint" else 3e-3,
        lora_rank=32 if backend == "mint" else 8,
        backend=backend,
        save_every=0,
        eval_every=1,
    )
    # On MinT the configs are independent runs: run them all at once.
    parallel = 8 if backend == "mint" else 1
    try:
        sweep = Sweep.from_env(config, root=f"runs/rl_hyperparameters-{backend}", parallel=parallel)
        results = asyncio.run(sweep.run())
    except MintEnvkitError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(sweep.table())
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
