"""reasoning-gym tasks on SmolLM2: does GRPO through the loop learn them on a laptop?

    python benchmarks/reasoning_gym_tasks.py --task leg_counting --seed 0 --out runs/rg_tasks
    python benchmarks/reasoning_gym_tasks.py --summary runs/rg_tasks

One run trains SmolLM2-135M-Instruct on one reasoning-gym task (``ReasoningGymEnv``,
rewarded by the task's own ``score_answer``) with the learning demo's settings
(examples/learn_arithmetic.py: 8 steps of 8 problems x 4 samples at T=0.7, LoRA rank 16
on every linear layer without the unembedding, Adam lr 5e-4, ``sampling_seed`` the seed),
and reads the loop's claim (``RunResult.claim``): held-out greedy correctness
(``eval_temperature`` 1e-3) on 40 problems drawn with another seed (10,000 + seed; a
question also drawn for training is dropped), before the first step and after the last,
at a reply limit where the base model is not cut off (``Config.uncut_evals``: the loop
measures again at a larger limit when the base is cut off on more than 5%), beside the
best trivial baseline (``answers/baseline_correct`` and its name). The task's default
config is used; the reply limits per task are in ``TASKS``. It writes
``OUT/<task>/seed<N>/result.json`` (the claim, the per-step training figures, the wall
time and the load average at the start and the end) and prints the claim's line.

``--summary OUT`` prints the table of every result under OUT (markdown), one row per
task and seed, then per task the mean gain and whether it learned: every seed's gain
above 0 with the after model beating the baseline. benchmarks/reasoning_gym_tasks.sh
runs the tasks one after another (seed 0 of every task first) and then the summary.
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

from mint_envkit import Config, DatasetBuilder
from mint_envkit.envs import ReasoningGymEnv, reasoning_gym_problems
from mint_envkit.rl import run_training

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"
TASKS = {
    # task: (training reply limit, held-out evals' reply limit), in tokens
    "letter_counting": (32, 96),
    "spell_backward": (32, 96),
    "leg_counting": (32, 96),
    "simple_equations": (32, 96),
    "word_sorting": (64, 128),
}
"""The tasks measured, with reply limits that fit the answer in ``<answer>`` tags (a
number, a word, a list of up to 10 words)."""


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def problems(task: str, seed: int, n_train: int, n_eval: int) -> tuple[list, list]:
    """Training problems drawn with ``seed``; held-out ones with 10,000 + seed, none
    asking a training question."""
    train = reasoning_gym_problems(task, n_train, seed=seed)
    asked = {p["question"] for p in train}
    drawn = reasoning_gym_problems(task, 4 * n_eval, seed=10_000 + seed)
    held = [p for p in drawn if p["question"] not in asked][:n_eval]
    if len(held) < n_eval:
        raise SystemExit(f"{task}: only {len(held)} held-out problems unlike the training ones")
    return train, held


def worked_example(task: str, seed: int, avoid: set[str]) -> type[ReasoningGymEnv]:
    """``ReasoningGymEnv`` with one solved problem of the task before the question.

    The problem is drawn with seed 20,000 + ``seed`` and asks none of ``avoid`` (the
    training and held-out questions); its reply is the answer in the tags.
    """
    drawn = reasoning_gym_problems(task, 50, seed=20_000 + seed)
    example = next(p for p in drawn if p["question"] not in avoid)
    shot = [
        {"role": "user", "content": example["question"]},
        {"role": "assistant", "content": f"<answer>{example['answer']}</answer>"},
    ]
    return type("ReasoningGymWithExample", (ReasoningGymEnv,), {"few_shot": shot})


def run_dir(args: argparse.Namespace) -> Path:
    """``OUT/<task>/seed<N>``, or ``OUT/<task>+example/seed<N>`` with a worked example."""
    return args.out / (args.task + ("+example" if args.worked_example else "")) / f"seed{args.seed}"


def config(args: argparse.Namespace, out: Path) -> Config:
    train_tokens, eval_tokens = TASKS[args.task]
    train, held = problems(args.task, args.seed, args.batch * args.steps, args.eval_n)
    env = ReasoningGymEnv
    if args.worked_example:
        env = worked_example(args.task, args.seed, {p["question"] for p in train + held})
    builder = DatasetBuilder(
        env=env,
        problems=train,
        test_problems=held,
        batch_size=args.batch,
        group_size=args.group,
        model_name=SMOLLM2,
        seed=args.seed,
        max_generation_tokens=train_tokens,
    )
    return Config(
        dataset_builder=builder,
        model_name=SMOLLM2,
        log_path=str(out / "run"),
        learning_rate=args.lr,
        lora_rank=16,
        train_unembed=False,
        temperature=0.7,
        eval_temperature=1e-3,
        eval_max_tokens=eval_tokens,
        eval_every=args.steps,
        uncut_evals=True,
        max_steps=args.steps,
        save_every=0,
        backend="local",
        sampling_seed=args.seed,
    )


async def run_one(args: argparse.Namespace) -> dict[str, Any]:
    out = run_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    load_start, t0 = _load(), time.monotonic()
    cfg = config(args, out)
    result = await run_training(cfg)
    rows = [
        json.loads(line)
        for line in (Path(cfg.log_path) / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    by_step = {}  # one row per step (the first with training figures)
    for row in rows:
        if "env/all/correct" in row:
            by_step.setdefault(row["step"], row)
    steps = [
        {
            "step": step,
            "correct": row.get("env/all/correct"),
            "parsed": row.get("env/all/parsed"),
            "reward": row.get("env/all/reward/total"),
            "partial": row.get("env/all/reward/partial"),
        }
        for step, row in sorted(by_step.items())
    ]
    record = {
        "task": args.task,
        "worked_example": args.worked_example,
        "seed": args.seed,
        "model": SMOLLM2,
        "steps": args.steps,
        "reply_limits": dict(zip(("train", "eval"), TASKS[args.task], strict=True)),
        "held_out_n": args.eval_n,
        "claim": None if result.claim is None else result.claim.record(),
        "training": steps,
        "wall_s": round(time.monotonic() - t0, 1),
        "load_start": load_start,
        "load_end": _load(),
        "threads": os.environ.get("OMP_NUM_THREADS"),
    }
    (out / "result.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def summary(root: Path) -> str:
    """The markdown table of every result.json under ``root``."""
    results = [json.loads(p.read_text()) for p in sorted(root.glob("*/seed*/result.json"))]
    order = list(TASKS)
    results.sort(
        key=lambda r: (
            bool(r.get("worked_example")),
            order.index(r["task"]) if r["task"] in order else 99,
            r["seed"],
        )
    )
    lines = [
        "| task | seed | measured at | base truncated | before | after | gain (points) "
        "| parsed before -> after | best trivial baseline (after) | beats it "
        "| training parsed, most of a step (T=0.7) | wall (s) | load at start |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_task: dict[str, list[dict]] = {}
    for r in results:
        claim = r["claim"]
        task = r["task"] + (" + example" if r.get("worked_example") else "")
        by_task.setdefault(task, []).append(r)
        if claim is None:
            lines.append(f"| {task} | {r['seed']} | no claim | | | | | | | | | | |")
            continue
        uncut = claim["uncut_before"] is not None
        before = claim["uncut_before"] if uncut else claim["before"]
        after = claim["uncut_after"] if uncut else claim["after"]
        gain = claim["gain"]
        where = f"{before['max_tokens']} tokens" + (" (re-measured)" if uncut else "")
        if claim["cut_off"] and not uncut:
            where += ", base CUT OFF"
        beats = {True: "yes", False: "no", None: "n/a"}[claim["beats_baseline"]]
        lines.append(
            f"| {task} | {r['seed']} | {where} | {_pct(before['truncated_rate'])} | "
            f"{_pct(before['correct'])} | {_pct(after['correct'])} | "
            f"{'n/a' if gain is None else f'{100 * gain:+.1f}'} | "
            f"{_pct(before['parsed'])} -> {_pct(after['parsed'])} | "
            f"{_pct(after['answers/baseline_correct'])} ({after['baseline_name']}) | {beats} | "
            f"{_pct(max((s['parsed'] or 0.0) for s in r['training']) if r['training'] else None)}"
            f" | {r['wall_s']:.0f} | {r['load_start']} |"
        )
    lines.append("")
    for task, runs in by_task.items():
        gains = [r["claim"]["gain"] for r in runs if r["claim"] and r["claim"]["gain"] is not None]
        learned = len(gains) == len(runs) and all(
            g > 0 and r["claim"]["beats_baseline"] for g, r in zip(gains, runs, strict=True)
        )
        mean = f"{100 * statistics.mean(gains):+.1f}" if gains else "n/a"
        lines.append(
            f"- {task}: {len(runs)} seed(s), mean gain {mean} points; "
            f"{'learned' if learned else 'did not learn'} (learned: every seed's gain above 0 and its after model beating "
            f"the baseline); wall {statistics.mean(r['wall_s'] for r in runs):.0f} s a run"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=sorted(TASKS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=8, help="problems per step")
    p.add_argument("--group", type=int, default=4, help="samples per problem")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--eval-n", type=int, default=40)
    p.add_argument("--out", type=Path, default=Path("runs/rg_tasks"))
    p.add_argument(
        "--worked-example",
        action="store_true",
        help="one solved problem of the task (answer in the tags) before each question",
    )
    p.add_argument("--summary", type=Path, default=None, help="print the table of a folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summary is not None:
        print(summary(args.summary))
        return 0
    if args.task is None:
        raise SystemExit("give --task TASK (or --summary OUT)")
    record = asyncio.run(run_one(args))
    line = "no claim" if record["claim"] is None else record["claim"]["line"]
    print(f"{args.task} seed {args.seed}: {line}; wall {record['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
