"""GRPO vs on-policy distillation vs SFT-on-good-rollouts-then-GRPO, on one wall-clock budget.

    flock /tmp/mint-heavy.lock .venv/bin/python benchmarks/distill_compare.py \\
        --budget 75 --seeds 0 1 2 --envs arithmetic yes_no --out runs/distill_compare

For each env (examples/arithmetic_env.py's ArithmeticEnv; ``arithmetic_last_number``,
the same problems read by the ``last_number`` parser; examples/yes_no.py's YesNoEnv)
and seed, each method trains SmolLM2-135M-Instruct (the tiny random
model with ``--model tiny``) on the embedded backend for ``--budget`` seconds of
wall clock, counted from the method's first call; then its last checkpoint is
evaluated greedily (temperature 1e-3, one sample each) on held-out problems that
are the same for every method and seed and never trained on:

- ``grpo``: :func:`run_training` (importance sampling, group-relative advantages);
- ``distill``: :func:`run_distillation`, the teacher is the same base model shown the
  reference answer (the env's ``teacher_messages`` hook), reverse KL per token;
- ``sft_grpo``: sample the first training problems with the base model, keep the
  correct replies (:func:`good_rollouts`), fine-tune on them with ``cross_entropy``
  (:func:`fine_tune_on_rollouts`), then GRPO from that checkpoint
  (``Config.load_checkpoint_path``) for the rest of the budget.

The runs checkpoint every step; when the budget runs out the run is cancelled and
its last saved checkpoint is evaluated (the base model when none was saved). The
constant-answer baseline (always the most common held-out answer) and the base
model's own held-out correctness are reported beside them. Results go to
``OUT/results.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from arithmetic_env import ArithmeticEnv, arithmetic_problems  # noqa: E402
from distill_arithmetic import TeacherSeesTheAnswer  # noqa: E402
from yes_no import YesNoEnv, comparison_problems  # noqa: E402

from mint_envkit import Config, DatasetBuilder, last_number  # noqa: E402
from mint_envkit.evaluation import evaluate as evaluate_once  # noqa: E402
from mint_envkit.rl import (  # noqa: E402
    fine_tune_on_rollouts,
    good_rollouts,
    run_distillation,
    run_training,
    supervised_examples,
)
from mint_envkit.rollouts import RunFiles, local_api_key, local_backend  # noqa: E402

MODELS = {"smollm2": "mint-envkit/smollm2-135m-instruct", "tiny": "mint-envkit/tiny-qwen3"}
METHODS = ("grpo", "distill", "sft_grpo")


class PrivilegedArithmeticEnv(TeacherSeesTheAnswer, ArithmeticEnv):
    """The arithmetic env whose teacher reads the answer."""


class PrivilegedYesNoEnv(TeacherSeesTheAnswer, YesNoEnv):
    """The yes/no env whose teacher reads the answer."""


class LastNumberArithmeticEnv(ArithmeticEnv):
    """The arithmetic env read leniently: the reply's last number is the answer.

    SmolLM2 restates the question ("12 + 45 = 57"), which the strict ``only_a_number``
    parser never accepts; with it, no group varies within a short budget. This is the
    parser of examples/learn_arithmetic.py.
    """

    parser = last_number


class PrivilegedLastNumberArithmeticEnv(TeacherSeesTheAnswer, LastNumberArithmeticEnv):
    """The lenient arithmetic env whose teacher reads the answer."""


def _disjoint(train: list[dict], held: list[dict]) -> list[dict]:
    seen = {p["question"] for p in train}
    return [p for p in held if p["question"] not in seen]


ENVS: dict[str, dict[str, Any]] = {
    "arithmetic": {
        "env": ArithmeticEnv,
        "privileged": PrivilegedArithmeticEnv,
        "train": lambda: arithmetic_problems(64, seed=0),
        "held_out": lambda: arithmetic_problems(64, seed=1000),
    },
    "arithmetic_last_number": {
        "env": LastNumberArithmeticEnv,
        "privileged": PrivilegedLastNumberArithmeticEnv,
        "train": lambda: arithmetic_problems(64, seed=0),
        "held_out": lambda: arithmetic_problems(64, seed=1000),
    },
    "yes_no": {
        "env": YesNoEnv,
        "privileged": PrivilegedYesNoEnv,
        "train": lambda: comparison_problems(64, seed=0),
        "held_out": lambda: comparison_problems(64, seed=1000),
    },
}


def _builders(
    args: argparse.Namespace, name: str, seed: int, privileged: bool
) -> tuple[DatasetBuilder, DatasetBuilder]:
    spec = ENVS[name]
    env = spec["privileged"] if privileged else spec["env"]
    train = spec["train"]()
    held = _disjoint(train, spec["held_out"]())[: args.eval_n]
    common = {"env": env, "model_name": args.model_name, "seed": seed}
    builder = DatasetBuilder(problems=train, batch_size=args.batch, group_size=args.group, **common)
    eval_builder = DatasetBuilder(
        problems=held, batch_size=len(held), group_size=1, shuffle=False, **common
    )
    return builder, eval_builder


def _config(
    args: argparse.Namespace, builder: DatasetBuilder, url: str, log: Path, seed: int, **fields: Any
) -> Config:
    values = {
        "dataset_builder": attrs.evolve(builder, max_generation_tokens=args.max_tokens),
        "log_path": str(log),
        "learning_rate": args.lr,
        "lora_rank": 16,
        "train_unembed": False,
        "temperature": 0.7,
        "max_steps": 10_000,
        "save_every": 1,
        "keep_checkpoints": None,
        "backend": "local",
        "base_url": url,
        "sampling_seed": seed,
        **fields,
    }
    return Config(**values)


async def evaluate(config: Config, client: Any, eval_builder: DatasetBuilder) -> dict[str, Any]:
    """Greedy held-out correctness, parse rate and the best trivial baseline (one
    :func:`mint_envkit.evaluate`)."""
    greedy = attrs.evolve(config.sampling, temperature=1e-3)
    result = await evaluate_once(eval_builder, client=client, sampling=greedy, quiet=True)
    summary = result.summary
    failures = summary.get("parse_failure_rate")
    return {
        "correct": summary.get("correct"),
        "parsed": None if failures is None else 1.0 - failures,
        "baseline": summary.get("answers/baseline_correct"),
        "baseline_name": summary.get("answers/baseline_name"),
        "top": summary.get("answers/top"),
        "top_share": summary.get("answers/top_share"),
    }


async def _bounded(work: Any, deadline: float) -> bool:
    """Run ``work`` until it ends or ``deadline`` (monotonic) passes; True when it finished."""
    try:
        await asyncio.wait_for(work, timeout=max(0.1, deadline - time.monotonic()))
        return True
    except TimeoutError:
        return False


async def _sft_then_grpo(
    args: argparse.Namespace, config: Config, log: Path, deadline: float, service: Any
) -> dict[str, Any]:
    """Sample the first problems with the base model, keep the right replies, SFT, then GRPO."""
    train, _ = await config.dataset_builder()
    groups = [g for i in range(args.sft_batches) for g in train.get_batch(i)]
    base = await service.create_sampling_client_async(base_model=args.model_name)
    # the base model's rollouts, written like any eval's (out_dir/base/rollouts.jsonl)
    sampled = await evaluate_once(
        groups, client=base, sampling=config.sampling, out_dir=str(log / "base"), quiet=True
    )
    kept = good_rollouts(log / "base" / "base" / "rollouts.jsonl", correct=True)
    info: dict[str, Any] = {
        "sampled": sum(len(r.trajectories) for r in sampled.rollouts),
        "kept": len(kept),
    }
    if not kept:
        info["note"] = "no correct base reply: GRPO from the base model"
        await _bounded(run_training(attrs.evolve(config, log_path=str(log / "rl"))), deadline)
        return info
    examples = supervised_examples(kept, groups[0].renderer())
    sft_config = attrs.evolve(config, log_path=str(log / "sft"), learning_rate=args.sft_lr)
    sft_done = await _bounded(
        fine_tune_on_rollouts(sft_config, examples, epochs=args.sft_epochs, batch_size=8),
        deadline,
    )
    info["sft_finished"] = sft_done
    if not sft_done:
        return info
    sft = RunFiles(sft_config.log_path).last_checkpoint()
    info["sft_losses"] = [m["sft/loss"] for m in RunFiles(sft_config.log_path).metrics()]
    rl = attrs.evolve(config, log_path=str(log / "rl"), load_checkpoint_path=sft["state_path"])
    await _bounded(run_training(rl), deadline)
    return info


def _last_sampler(log: Path) -> tuple[str | None, int]:
    """The newest sampler checkpoint under ``log`` (RL dir first, then SFT), and its step."""
    for sub in ("rl", "", "sft"):
        files = RunFiles(log / sub) if sub else RunFiles(log)
        if files.checkpoints_path.exists():
            last = files.last_checkpoint()
            if last is not None:
                return last["sampler_path"], int(last["step"])
    return None, 0


async def run_method(
    args: argparse.Namespace, method: str, env_name: str, seed: int, url: str, service: Any
) -> dict[str, Any]:
    """Train one method for the budget, then evaluate its last checkpoint."""
    log = args.out / env_name / f"{method}-s{seed}"
    builder, eval_builder = _builders(args, env_name, seed, privileged=method == "distill")
    config = _config(args, builder, url, log, seed)
    t0 = time.monotonic()
    deadline = t0 + args.budget
    info: dict[str, Any] = {}
    if method == "grpo":
        await _bounded(run_training(config), deadline)
    elif method == "distill":
        await _bounded(run_distillation(config, teacher=args.model_name), deadline)
    else:
        info = await _sft_then_grpo(args, config, log, deadline, service)
    trained_s = time.monotonic() - t0
    await asyncio.sleep(0.5)  # let a cancelled request's reply land before the eval
    sampler, steps = _last_sampler(log)
    client = (
        await service.create_sampling_client_async(model_path=sampler)
        if sampler
        else await service.create_sampling_client_async(base_model=args.model_name)
    )
    figures = await evaluate(config, client, eval_builder)
    row = {
        "env": env_name,
        "method": method,
        "seed": seed,
        "steps": steps,
        "train_s": round(trained_s, 1),
        **figures,
        **info,
    }
    print(json.dumps(row), flush=True)
    return row


def summary(rows: list[dict[str, Any]], base: dict[str, dict[str, Any]]) -> str:
    """A markdown table: per env and method, held-out correctness per seed and the mean."""
    lines = [
        "| env | method | seeds: held-out correct | mean | steps (per seed) |",
        "|---|---|---|---|---|",
    ]
    for env_name, figures in base.items():
        lines.append(
            f"| {env_name} | base model (no training) | {figures['correct']:.1%} | "
            f"{figures['correct']:.1%} | 0 |"
        )
        lines.append(
            f"| {env_name} | best trivial baseline ({figures.get('baseline_name')}) | "
            f"{figures['baseline']:.1%} | {figures['baseline']:.1%} | - |"
        )
        for method in METHODS:
            mine = [r for r in rows if r["env"] == env_name and r["method"] == method]
            if not mine:
                continue
            values = [r["correct"] or 0.0 for r in mine]
            lines.append(
                f"| {env_name} | {method} | {', '.join(f'{v:.1%}' for v in values)} | "
                f"{statistics.mean(values):.1%} | {', '.join(str(r['steps']) for r in mine)} |"
            )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    import mint

    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MINT_ENVKIT_STATE_DIR", str(args.out / "state"))
    rows: list[dict[str, Any]] = []
    base: dict[str, dict[str, Any]] = {}
    t0 = time.monotonic()
    async with local_backend([args.model_name]) as url:
        service = mint.ServiceClient(base_url=url, api_key=local_api_key())
        for env_name in args.envs:
            builder, eval_builder = _builders(args, env_name, 0, privileged=False)
            client = await service.create_sampling_client_async(base_model=args.model_name)
            base[env_name] = await evaluate(
                _config(args, builder, url, args.out, 0), client, eval_builder
            )
            print(json.dumps({"env": env_name, "method": "base", **base[env_name]}), flush=True)
            for seed in args.seeds:
                for method in args.methods:
                    rows.append(await run_method(args, method, env_name, seed, url, service))
    table = summary(rows, base)
    result = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "base": base,
        "rows": rows,
        "wall_s": round(time.monotonic() - t0, 1),
    }
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    print(table)
    print(f"wall {result['wall_s']} s")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    parser.add_argument("--budget", type=float, default=75.0, help="seconds per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--envs", nargs="+", choices=sorted(ENVS), default=["arithmetic", "yes_no"])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--batch", type=int, default=4, help="problems per step")
    parser.add_argument("--group", type=int, default=4, help="samples per problem")
    parser.add_argument("--max-tokens", type=int, default=12)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--sft-lr", type=float, default=5e-4)
    parser.add_argument("--sft-epochs", type=int, default=2)
    parser.add_argument(
        "--sft-batches",
        type=int,
        default=2,
        help="training batches sampled with the base model for SFT",
    )
    parser.add_argument("--eval-n", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("runs/distill_compare"))
    args = parser.parse_args(argv)
    args.model_name = MODELS[args.model]
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main_async(parse_args())))
