"""The main job: an RL hyperparameter sweep over the arithmetic environment, in the seed's shape.

    bash scripts/sweep.sh              # = python examples/rl_hyperparameters.py
    bash scripts/sweep.sh --fresh      # delete this sweep's earlier results, train again
    bash scripts/sweep.sh --tiny       # the smoke run: the random tiny model (plumbing only)
    bash scripts/sweep.sh --loop cookbook  # each config trained by tinker-cookbook's rl.train.main

The MinT quickstart's recipe (``recipes/rl_hyperparameters.py``) on our loop: its env (a
calculator system prompt, "What is a + b? Answer with only the number.", reward 1.0 when
the reply's first number is the answer, else -0.25), its training values
(``learning_rate=1e-5``, ``lora_rank=16``, ``max_tokens=64``,
``loss_fn="importance_sampling"``, one step per config, ``KLReferenceConfig(base_model=
<the model>)`` for the KL configs) and its ``MINT_RL_*`` overrides: the grid from
MINT_RL_KL_COEFS, MINT_RL_TEMPS and MINT_RL_GROUPS (default 2 x 2 x 2 configs),
MINT_RL_STEPS (1), MINT_RL_BATCH, MINT_RL_MAX_TOKENS, MINT_RL_LR, MINT_LORA_RANK,
MINT_LOG_ROOT and MINT_BASE_MODEL. One difference: the seed trains one of its four fixed
problems a step (``MINT_RL_BATCH=1``); here a step is 8 problems of 64 (sums to 99 and
products to 12), so that on SmolLM2 every config has groups whose rewards differ and
trains a real update (``MINT_RL_BATCH=1`` gives the seed's batch).

With no MINT_API_KEY it trains on the embedded local backend, offline:
SmolLM2-135M-Instruct, the real pretrained model that scripts/setup.sh installs
(without it the first line says so and the random tiny model stands in). With
MINT_API_KEY set it trains on MinT with Qwen/Qwen3-0.6B. MINT_ENVKIT_BACKEND=local|mint
forces a backend. Each config trains one step from a fresh adapter and saves a
checkpoint; the table ends with one paragraph per config saying what it trained, and
the KL configs the KL of the updated policy to the reference after the step. One step
from a fresh adapter is a smoke test of the path (sampling, training, the KL reference,
the checkpoint), as in the seed, not a measure of quality: for learning, see
examples/learn_arithmetic.py. A config that finished earlier is not run again: a
second run reprints the table and says how to start from scratch (--fresh). See
docs/sweep.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arithmetic_env import arithmetic_problems

from mint_envkit import Config, DatasetBuilder, MintEnvkitError, SingleTurnEnv, first_number
from mint_envkit.adapters import to_cookbook
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rl import default_model
from mint_envkit.rollouts import (
    idle_machine_threads,
    pretrained_local_model,
    resolve_connection,
    shared_local_backend,
)
from mint_envkit.sweep import Sweep, log_root_from_env

LEARNING_DEMO = "examples/learn_arithmetic.py"
"""Where a reader of the table goes to see a model learn (this job takes one step)."""


class SeedArithmeticEnv(SingleTurnEnv):
    """The seed's ``ArithmeticMessageEnv``: the reply's first number against the answer.

    1.0 when it is the answer, -0.25 otherwise, also when the reply holds no number
    (the seed logs that as ``invalid_format``; here it is ``parsed`` 0). The seed's
    reward, flaw included: restating the question ("What is 7 * 1? ...") reads as the
    answer 7, which ``mint-envkit audit examples/rl_hyperparameters.py:builder`` flags
    (docs/audit.md); ``ArithmeticEnv`` in ``arithmetic_env.py`` is the fixed env.
    """

    system_prompt = "You are a precise calculator. Reply with only the final number."
    parser = first_number
    reward_correct = 1.0
    reward_incorrect = -0.25
    reward_unparsed = -0.25


def seed_problems(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` problems of ``arithmetic_problems``, asked as the seed asks them."""
    return [
        {**problem, "question": f"{problem['question']} Answer with only the number."}
        for problem in arithmetic_problems(n, seed=seed)
    ]


def dataset_builder(model: str) -> DatasetBuilder:
    """The main job's problems and env: 64 to train on (8 groups a step), 8 held out."""
    # Qwen3 (MinT, and the tiny models' tokenizer) without thinking; any other model
    # (SmolLM2) with the renderer that fits it (its own chat template).
    qwen3 = {"renderer_name": "qwen3_disable_thinking"} if "qwen3" in model.lower() else {}
    return DatasetBuilder(
        env=SeedArithmeticEnv,
        problems=seed_problems(64, seed=0),
        # for `mint-envkit eval` / `audit` of this builder; the sweep itself evaluates
        # nothing (the seed does not: one step from a fresh adapter changes no answer)
        test_problems=seed_problems(8, seed=1),
        batch_size=8,
        group_size=4,
        model_name=model,
        **qwen3,
        max_generation_tokens=64,  # the seed's max_tokens: Config.max_tokens takes it
        max_trajectory_tokens=512,  # the seed's
        score_truncated=True,  # the seed scores the first number of any reply
        seed=0,  # the data order (sampling has Config.sampling_seed)
    )


builder = dataset_builder(default_model("local"))
"""The main job's problems and env on the built-in tiny model (``audit``/``eval`` it by name:
``examples/rl_hyperparameters.py:builder``; ``--model`` picks another model)."""


def choose_model(backend: str, *, tiny: bool = False) -> tuple[str, str]:
    """The model to train and the words that say why: ``(model, reason)``.

    ``MINT_BASE_MODEL`` when set; on MinT Qwen/Qwen3-0.6B; locally the tiny model with
    ``tiny``, else SmolLM2-135M-Instruct, or the tiny model when SmolLM2 is missing.
    """
    if os.environ.get("MINT_BASE_MODEL", "").strip() or backend != "local":
        return default_model(backend), ""
    if tiny:
        return TINY_MODEL_NAME, " (--tiny: the smoke run; a random model learns nothing)"
    model = pretrained_local_model(say=False)
    if model == TINY_MODEL_NAME:
        return model, (
            " instead of SmolLM2-135M-Instruct, which is not installed (install it with "
            "`mint-envkit install-model smollm2`, or run bash scripts/setup.sh); a random "
            "model learns nothing"
        )
    return model, ""


def results_root(backend: str, *, loop: str = "ours", tiny: bool = False) -> str:
    """Where a run of the main job keeps its results: one folder per backend, loop and
    model kind, so the smoke run (``--tiny``) and the real one never share one (nor does
    ``--fresh`` of one delete the other's).

    Example::

        results_root("local", tiny=True)   # 'runs/rl_hyperparameters-local-tiny'
    """
    suffix = ("-cookbook" if loop == "cookbook" else "") + ("-tiny" if tiny else "")
    return f"runs/rl_hyperparameters-{backend}{suffix}"


def base_config(backend: str, model: str) -> Config:
    """What every config of the grid starts from: the seed's values."""
    return Config(
        dataset_builder=dataset_builder(model),  # owns the model, renderer and reply limit
        log_path=f"runs/rl_hyperparameters-{backend}",
        learning_rate=1e-5,
        lora_rank=16,
        loss_fn="importance_sampling",
        backend=backend,
        save_every=0,  # the final checkpoint only
        eval_every=0,  # as the seed: no held-out eval
        # the KL configs: the KL of the updated policy to the reference after the step
        # (kl_post_reference_v2), the figure that shows the reference was used
        compute_post_kl=True,
        local_threads=idle_machine_threads(model),  # the embedded server's torch threads
    )


def clear_sweep_root(sweep: Sweep) -> str | None:
    """Delete an earlier sweep's directory and the checkpoints its runs saved, for
    ``--fresh``; say what was deleted.

    Only a directory holding a ``sweep.json`` (a sweep root) is deleted; anything else
    there is an error rather than a loss. The checkpoints (in the backend's store, not
    under the root) go too: ``Sweep.clear``.
    """
    said = sweep.clear()
    return None if said is None else f"--fresh: {said}"


def rerun_hint(results: Sequence, root: str) -> str | None:
    """What to say when every config had finished earlier, so this run trained nothing."""
    if results and all(r.skipped for r in results):
        return (
            f"Nothing was trained: all {len(results)} configs finished earlier in {root} "
            "(the table is theirs). To train again from scratch: bash scripts/sweep.sh --fresh "
            "(python examples/rl_hyperparameters.py --fresh), or set MINT_LOG_ROOT to a new "
            "directory."
        )
    return None


async def cookbook_runner(config: Config) -> dict:
    """``--loop cookbook``: train one config with tinker-cookbook's own ``rl.train.main``."""
    return await to_cookbook(config.dataset_builder).train(config)


async def run_sweep(sweep: Sweep, loop: str, backend: str, model: str) -> list:
    """Run the sweep; the cookbook's loop on the embedded backend shares one server."""
    if loop == "cookbook" and backend == "local":
        async with shared_local_backend([model], threads=idle_machine_threads(model)):
            return await sweep.run()
    return await sweep.run()


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The main job: an RL hyperparameter sweep.")
    parser.add_argument(
        "--fresh", action="store_true", help="delete this sweep's earlier results and train again"
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="the smoke run: the built-in random tiny model instead of SmolLM2 (local only)",
    )
    parser.add_argument(
        "--loop",
        choices=("ours", "cookbook"),
        default="ours",
        help="train each config with our loop or tinker-cookbook's rl.train.main (docs/adapters.md)",
    )
    args = parser.parse_args(argv)
    connection = resolve_connection("auto")
    backend = connection.backend
    model, why = choose_model(backend, tiny=args.tiny)
    print(f"backend: {backend} - training {model}{why} on {connection.describe()}", flush=True)
    config = base_config(backend, model)
    # On MinT the configs are independent runs: run them all at once.
    parallel = 8 if backend == "mint" else 1
    root = results_root(backend, loop=args.loop, tiny=args.tiny)
    runner = cookbook_runner if args.loop == "cookbook" else None
    try:
        root = log_root_from_env(environ, default=root)
        sweep = Sweep.from_env(config, root=root, environ=environ, parallel=parallel, runner=runner)
        if args.fresh and (said := clear_sweep_root(sweep)):
            print(said, flush=True)
        results = asyncio.run(run_sweep(sweep, args.loop, backend, model))
    except MintEnvkitError as err:
        print(f"error: {err}", file=sys.stderr)
        if not args.fresh and (Path(root) / "sweep.json").is_file():
            print(f"(--fresh deletes the earlier results in {root} first)", file=sys.stderr)
        return 2
    print(sweep.table())
    print(f"\n{sweep.summary().trained()}")
    print(
        f"\nTo watch a model learn (many steps, held out, beside baselines): python {LEARNING_DEMO}"
    )
    if hint := rerun_hint(results, sweep.root):
        print(f"\n{hint}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
