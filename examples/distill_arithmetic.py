"""On-policy distillation from a privileged teacher: the same model, shown the answer.

    python examples/distill_arithmetic.py --steps 6 --out runs/distill_arithmetic

The student samples the arithmetic env's problems (examples/arithmetic_env.py) with
its current weights; every reply is scored by a teacher that is the *same base
model* reading a system prompt that also holds the reference answer (the env's
``teacher_messages`` hook, :class:`TeacherSeesTheAnswer` below). The student is
trained by the per-token reverse KL to that teacher
(``mint.mint.forward_backward_reverse_kl``), a denser signal than one reward per
episode; rewards are still computed and logged. The loop evaluates the held-out
problems greedily before the first step and after the last; the example prints both
beside the best trivial baseline, and the run's before/after line (the gain split into
format and content, measured where the base model is not cut off).

Offline, on the embedded backend: SmolLM2-135M-Instruct when installed
(``mint-envkit install-model smollm2``), else the built-in random tiny model (which
learns nothing useful here, but shows the workflow). On MinT the same code runs
with ``MINT_API_KEY`` set and ``--backend mint``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arithmetic_env import ArithmeticEnv, arithmetic_problems

from mint_envkit import Config, DatasetBuilder, Message
from mint_envkit.rl import run_distillation
from mint_envkit.rollouts import RunFiles, pretrained_local_model


class TeacherSeesTheAnswer:
    """A mixin: the teacher's system prompt also says the reference answer (``self.answer``).

    Put it before the env class: ``class MyEnv(TeacherSeesTheAnswer, ArithmeticEnv)``.
    """

    answer: Any

    def teacher_messages(self, messages: list[Message]) -> list[Message]:
        hint = f"The correct answer is {self.answer}."
        if messages and messages[0].get("role") == "system":
            system = {**messages[0], "content": f"{messages[0]['content']} {hint}"}
            return [system, *messages[1:]]
        return [{"role": "system", "content": hint}, *messages]


class PrivilegedArithmeticEnv(TeacherSeesTheAnswer, ArithmeticEnv):
    """The arithmetic env; its distillation teacher reads the answer too."""


def held_out_line(metrics: dict[str, Any], prefix: str) -> str:
    """A held-out eval of the loop (``test/env`` or ``test_final/env``) as one line."""
    head = f"{prefix}/all/"
    correct, baseline = metrics[head + "correct"], metrics[head + "answers/baseline_correct"]
    name = metrics.get(head + "answers/baseline_name", "")
    return f"correct {correct:.1%} (best trivial baseline {baseline:.1%}: {name})"


async def main(args: argparse.Namespace) -> None:
    model = args.model or pretrained_local_model()
    train = arithmetic_problems(64, seed=0)
    seen = {p["question"] for p in train}
    test = [p for p in arithmetic_problems(64, seed=1000) if p["question"] not in seen][:24]
    builder = DatasetBuilder(
        env=PrivilegedArithmeticEnv,
        problems=train,
        test_problems=test,
        batch_size=4,
        group_size=4,
        model_name=model,
        max_generation_tokens=args.max_tokens,
        seed=args.seed,
    )
    config = Config(
        dataset_builder=builder,
        log_path=str(args.out),
        learning_rate=5e-4,
        lora_rank=16,
        train_unembed=False,
        temperature=0.7,
        eval_temperature=1e-3,  # greedy held-out evals, before the first step and after the last
        eval_every=args.steps,
        max_steps=args.steps,
        save_every=0,
        backend="local",
        sampling_seed=args.seed,
    )
    result = await run_distillation(config, teacher=model)  # the same base model
    metrics = RunFiles(result.log_path).metrics()
    print(f"{model} before: {held_out_line(metrics[0], 'test/env')}")
    print(f"{model} after {result.steps} steps: {held_out_line(metrics[-1], 'test_final/env')}")
    if result.claim is not None:
        print(result.claim.line())
    kl = [m.get("distill/reverse_kl") for m in metrics]
    print("reverse KL per reply token, by step: " + ", ".join(f"{k:.3f}" for k in kl if k))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="on-policy distillation, privileged teacher")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="default: SmolLM2 if installed, else tiny")
    parser.add_argument("--out", type=Path, default=Path("runs/distill_arithmetic"))
    parser.add_argument("--max-tokens", type=int, default=12, help="the reply limit")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
