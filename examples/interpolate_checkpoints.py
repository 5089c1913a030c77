"""Interpolate two trained checkpoints and evaluate every mix, offline on the embedded backend.

    python examples/interpolate_checkpoints.py --steps 4 --out runs/interpolate

Two short GRPO runs on the embedded backend give two checkpoints, A and B; then
``interpolation_sweep`` writes the mix ``(1 - a) * A + a * B`` of their weights
(MinT's ``interpolate_checkpoints``: the LoRA deltas combined exactly, see
docs/local-backend.md) for every ``a`` of ``--grid`` and evaluates each on held-out
problems: mean reward, correctness beside the best trivial baseline, pass@k. The
table is printed and written to ``OUT/sweep/interpolation.csv``, the figure to
``OUT/sweep/interpolation.png``; running the command again skips finished points.

With SmolLM2 installed (``mint-envkit install-model smollm2``) both runs learn
"What is a + b?" with different seeds (a two-ingredient model soup). Without it,
the built-in random tiny model is used on two opposite first-token tasks it can
learn in a few steps: A is rewarded for saying something, B for ending its turn
at once. The sweep then evaluates the mixes on A's task, so the reward moves from
A's towards B's along the grid.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path
from typing import Any

import attrs

from mint_envkit import Config, DatasetBuilder, ParseResult, SingleTurnEnv, last_number
from mint_envkit.interpolation import interpolation_sweep
from mint_envkit.rl import run_training
from mint_envkit.rollouts import (
    BackendSettings,
    SamplingSettings,
    pretrained_local_model,
    shared_local_backend,
)


class AdditionEnv(SingleTurnEnv):
    """ "What is a + b?"; the last number of the reply is the answer."""

    system_prompt = "You are a precise calculator. Reply with only the final number."
    parser = last_number
    reward_correct = 1.0
    reward_incorrect = 0.0
    reward_unparsed = 0.0


class SpeakUpEnv(SingleTurnEnv):
    """The tiny model's task A: a reply is right when it is not empty."""

    system_prompt = "Say something."
    reward_correct = 1.0
    reward_incorrect = 0.0
    reward_unparsed = 0.0

    def parse(self, message: Any) -> ParseResult:
        content = message.get("content")
        return ParseResult(value=content if isinstance(content, str) else "", status="ok")

    def check(self, parsed: str, answer: Any) -> bool:
        return parsed.strip() != ""


class StaySilentEnv(SpeakUpEnv):
    """The tiny model's task B: a reply is right when it is empty (the opposite of A)."""

    def check(self, parsed: str, answer: Any) -> bool:
        return parsed.strip() == ""


def addition_problems(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` problems a + b (a, b in 0..30) drawn with ``seed``."""
    rng = random.Random(seed)
    pairs = [(rng.randint(0, 30), rng.randint(0, 30)) for _ in range(n)]
    return [{"question": f"What is {a} + {b}?", "answer": str(a + b)} for a, b in pairs]


def item_problems(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` prompts "Item k." (k drawn with ``seed``) for the tiny model's tasks."""
    rng = random.Random(seed)
    return [{"question": f"Item {rng.randint(0, 10_000)}.", "answer": ""} for _ in range(n)]


def choose_model(requested: str | None) -> str:
    """``requested``, else SmolLM2 when installed, else the built-in tiny model."""
    return requested or pretrained_local_model()


def run_configs(args: argparse.Namespace, model: str) -> list[Config]:
    """The two training runs: A and B (same task and other seeds, or opposite tasks)."""
    tiny = model.startswith("mint-envkit/tiny-")
    configs = []
    for name, env, seed in (("A", SpeakUpEnv, 1), ("B", StaySilentEnv, 2)):
        if not tiny:
            env = AdditionEnv
        make = item_problems if tiny else addition_problems
        builder = DatasetBuilder(
            env=env,
            problems=make(args.batch * args.steps, seed=seed),
            batch_size=args.batch,
            group_size=args.group,
            model_name=model,
            seed=seed,
            score_truncated=tiny,  # the random model rarely ends a reply: score cut-off ones too
        )
        configs.append(
            Config(
                dataset_builder=attrs.evolve(builder, max_generation_tokens=args.max_tokens),
                model_name=model,
                log_path=str(args.out / f"run-{name}"),
                learning_rate=3e-3 if tiny else 5e-4,
                lora_rank=8,
                train_unembed=False,
                temperature=0.7,
                max_steps=args.steps,
                save_every=0,
                backend="local",
                sampling_seed=seed,
            )
        )
    return configs


async def sweep(args: argparse.Namespace) -> Any:
    """Train A and B on one embedded server, then interpolate and evaluate on it."""
    model = choose_model(args.model)
    tiny = model.startswith("mint-envkit/tiny-")
    grid = [float(a) for a in args.grid.split(",")]
    async with shared_local_backend([model]):
        paths = []
        for config in run_configs(args, model):
            result = await run_training(config)
            paths.append(result.final_checkpoint["sampler_path"])
            print(f"trained {config.log_path}: {paths[-1]}")
        held_out = DatasetBuilder(
            env=SpeakUpEnv if tiny else AdditionEnv,
            problems=item_problems(args.eval_n, 99) if tiny else addition_problems(args.eval_n, 99),
            batch_size=args.eval_n,
            group_size=args.samples,
            model_name=model,
            shuffle=False,
            score_truncated=tiny,  # as in training
        )
        return await interpolation_sweep(
            held_out,
            model_name=model,
            checkpoints=paths,
            grid=grid,
            root=args.out / "sweep",
            samples=args.samples,
            sampling=SamplingSettings(max_tokens=args.max_tokens, temperature=0.7),
            backend=BackendSettings(backend="local"),
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="default: SmolLM2 if installed, else tiny")
    parser.add_argument("--steps", type=int, default=4, help="training steps of each run")
    parser.add_argument("--batch", type=int, default=4, help="problems per step")
    parser.add_argument("--group", type=int, default=4, help="samples per problem")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--grid", default="0,0.25,0.5,0.75,1", help="the coefficients a of B")
    parser.add_argument("--samples", type=int, default=4, help="eval samples per problem (K)")
    parser.add_argument("--eval-n", type=int, default=16, help="held-out problems")
    parser.add_argument("--out", type=Path, default=Path("runs/interpolate"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the example; print the sweep's table."""
    args = parse_args(argv)
    result = asyncio.run(sweep(args))
    print(result.table())
    print(f"table: {args.out / 'sweep' / 'interpolation.csv'}")
    return 0 if all(p.status == "ok" for p in result.points) else 1


if __name__ == "__main__":
    sys.exit(main())
