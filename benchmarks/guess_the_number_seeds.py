"""Does the shipped guessing game learn on the laptop? SmolLM2 on guess the number, 3 seeds.

    python benchmarks/guess_the_number_seeds.py --out runs/guess_seeds [--steps 8] [--seeds 0 1 2]

Trains ``examples/guess_the_number.py``'s ``GuessTheNumberEnv`` (a secret in 1..100,
"Higher." / "Lower." after each guess, 7 turns; +1 for the turn that finds it, -0.1 for a
reply without a whole number, -0.5 for running out of turns or a reply cut off at the
limit) with ``run_training`` on the embedded server, SmolLM2-135M-Instruct, one run per
seed; its prompt is preceded by one worked game (:data:`WORKED_GAME`, the env's
``few_shot``), or not with ``--zero-shot``. Held out: ``--eval-n``
secrets drawn with another seed, never trained on, played greedily (T ~ 0) before the
first step and after the last; the success rate is the env's success metric (``solved``),
read through the run record (``find_eval`` of the loop's metrics). Beside it, the loop's
own best trivial game policy on the same held-out secrets (the final eval's baseline:
``mint_envkit.rollouts.game_policies``' random valid move, first option, repeated first
guess, options in order), whether the loop judged "after" beyond it, the truncation share
of the held-out replies (the reply limit must cut nothing off for the comparison to hold)
and each step's training health. ``--summarize`` trains nothing and re-reads the runs.

Each seed writes ``OUT/seed<N>/`` (the run: metrics.jsonl, rollouts.jsonl) and
``OUT/seed<N>.json``; the table (``OUT/summary.md``) is printed at the end. Run it on a
machine with nothing else heavy, or under ``flock /tmp/mint-heavy.lock``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from guess_the_number import GuessTheNumberEnv  # noqa: E402

from mint_envkit import Config, DatasetBuilder  # noqa: E402
from mint_envkit.rl import run_training  # noqa: E402
from mint_envkit.runs.record import FINAL, TEST, Figures, TrainingHealth, find_eval  # noqa: E402

MODEL = "mint-envkit/smollm2-135m-instruct"
WORKED_GAME = [
    {"role": "user", "content": "I am thinking of a number between 1 and 8."},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "Higher."},
    {"role": "assistant", "content": "6"},
    {"role": "user", "content": "Lower."},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "Correct, it was 5. New game."},
]
"""One worked game before the real one (the env's ``few_shot``): zero-shot, SmolLM2 does
not play (it writes "I'll give you a number between 1 and 100. I..." and is cut off on
every held-out game at 16 and at 48 tokens); with it, it replies with a number."""


class WorkedGuessEnv(GuessTheNumberEnv):
    """The shipped game, its prompt preceded by :data:`WORKED_GAME`."""

    few_shot = WORKED_GAME


EVAL_TEMPERATURE = 1e-3  # greedy in effect: the embedded backend takes temperatures > 0 only


def secrets(n: int, seed: int, exclude: frozenset[int] = frozenset()) -> list[dict[str, int]]:
    """``n`` distinct secrets in 1..100 drawn with ``seed``, none in ``exclude``."""
    pool = [s for s in range(1, 101) if s not in exclude]
    return [{"secret": s} for s in random.Random(seed).sample(pool, n)]


def builder(args: argparse.Namespace, seed: int) -> DatasetBuilder:
    train = secrets(args.batch * args.steps, seed)
    held = secrets(args.eval_n, 10_000 + seed, frozenset(p["secret"] for p in train))
    return DatasetBuilder(
        env=GuessTheNumberEnv if args.zero_shot else WorkedGuessEnv,
        problems=train,
        test_problems=held,
        batch_size=args.batch,
        group_size=args.group,
        model_name=args.model,
        seed=seed,
        max_generation_tokens=args.max_tokens,
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _game(figures: Figures) -> dict[str, Any]:
    """The game's figures of one held-out evaluation, read through the run record."""
    return {
        "solved": figures.answers.success,
        "reward": figures.mean_reward,
        "truncated": figures.truncated_rate,
    }


def read_seed(args: argparse.Namespace, seed: int, wall_s: float | None = None) -> dict[str, Any]:
    """One seed's figures from its run folder (``OUT/seed<N>``): the held-out evals before
    the first step and after the last, the loop's own best trivial game policy on the
    same secrets (the final eval's baseline), and each step's training health."""
    rows = _rows(args.out / f"seed{seed}" / "metrics.jsonl")
    first, last = find_eval(rows, TEST), find_eval(rows, FINAL, last=True)
    if first is None or last is None:
        raise SystemExit(f"seed {seed}: its run has no held-out eval before and after")
    answers = last[1].answers
    steps = []
    for row in rows:
        health = TrainingHealth.from_metrics(row)
        if health is not None:
            steps.append({"step": row["step"], **attrs.asdict(health)})
    return {
        "seed": seed,
        "model": args.model,
        "prompt": "zero-shot" if args.zero_shot else "one worked game",
        "steps": args.steps,
        "held_out_n": args.eval_n,
        "before": _game(first[1]),
        "after": _game(last[1]),
        "best_baseline": None
        if answers.baseline_correct is None
        else {"name": answers.baseline_name, "success": answers.baseline_correct},
        "beats_baseline": answers.beats_baseline,
        "train": steps,
        "wall_s": wall_s,
    }


async def one_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """Train one seed; its held-out figures before and after, and the trivial policies."""
    t0 = time.monotonic()
    made = builder(args, seed)
    config = Config(
        dataset_builder=made,
        model_name=args.model,
        log_path=str(args.out / f"seed{seed}"),
        learning_rate=args.lr,
        lora_rank=16,
        train_unembed=False,
        temperature=1.0,
        eval_temperature=EVAL_TEMPERATURE,
        eval_every=args.steps,
        uncut_evals=False,
        max_steps=args.steps,
        save_every=0,
        backend="local",
        local_threads=args.threads,
        sampling_seed=seed,
    )
    await run_training(config)
    return read_seed(args, seed, round(time.monotonic() - t0, 1))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _wall(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.0f}"


def summary(results: list[dict[str, Any]]) -> str:
    """The table of the seeds, with the means."""
    r0 = results[0]
    lines = [
        f"{r0['model']}, prompt {r0['prompt']}, {r0['steps']} steps, held-out "
        f"n={r0['held_out_n']} secrets (greedy)",
        "",
        "| seed | solved before | solved after | reward before | reward after | truncated "
        "before / after | best trivial game policy | wall (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        b, a, best = r["before"], r["after"], r["best_baseline"] or {}
        lines.append(
            f"| {r['seed']} | {_pct(b['solved'])} | {_pct(a['solved'])} | {b['reward']:+.3f} | "
            f"{a['reward']:+.3f} | {_pct(b['truncated'])} / {_pct(a['truncated'])} | "
            f"{_pct(best.get('success'))} ({best.get('name', 'n/a')}) | {_wall(r['wall_s'])} |"
        )
    before = statistics.mean(r["before"]["solved"] or 0.0 for r in results)
    after = statistics.mean(r["after"]["solved"] or 0.0 for r in results)
    base = statistics.mean((r["best_baseline"] or {}).get("success") or 0.0 for r in results)
    lines.append("")
    lines.append(
        f"mean solved: before {before:.1%}, after {after:.1%} ({100 * (after - before):+.1f} "
        f"points); best trivial game policy {base:.1%}"
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/guess_seeds"))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=8, help="games per step")
    p.add_argument("--group", type=int, default=4, help="episodes per game")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-tokens", type=int, default=16, help="the reply limit (a number)")
    p.add_argument(
        "--zero-shot", action="store_true", help="the shipped prompt alone (no worked game)"
    )
    p.add_argument("--eval-n", type=int, default=24)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--threads", type=int, default=None, help="torch threads of the server")
    p.add_argument(
        "--summarize",
        action="store_true",
        help="train nothing: read the runs already in OUT/seed<N> and print the table",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for seed in args.seeds:
        if args.summarize:
            earlier = args.out / f"seed{seed}.json"
            wall = json.loads(earlier.read_text()).get("wall_s") if earlier.is_file() else None
            result = read_seed(args, seed, wall)
        else:
            print(f"=== seed {seed} ({time.strftime('%H:%M:%S')})", flush=True)
            result = asyncio.run(one_seed(args, seed))
        (args.out / f"seed{seed}.json").write_text(json.dumps(result, indent=1) + "\n")
        results.append(result)
    table = summary(results)
    (args.out / "summary.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
