"""Does GRPO teach SmolLM2-135M a TextArena game on a laptop? (issue 47, item 4)

    python benchmarks/textarena_learning.py --seeds 0 1 --out runs/ta_learning
    python benchmarks/textarena_learning.py --summary runs/ta_learning

The game: TextArena's ``TicTacToe-v0`` through :func:`mint_envkit.adapters.from_textarena`,
the model playing player 0 (it moves first) against the fixed ``"random"`` opponent (a
random move among the ones the game lists), with the game's own reward (+1 win, 0 draw,
-1 loss) and its invalid-move rule (one warning, then the move that breaks it loses); the
env's success metric is ``won``. A problem is a seed (the opponent's moves): training
seeds are 0..N-1, the held-out ones start at 1,000,000 (never trained on).

Per sampling seed, :func:`mint_envkit.rl.run_training` on the embedded server (LoRA rank
16, ``--steps`` steps of ``--batch`` seeds x ``--group`` games at T=1.0; a training reply
cut off at ``--max-tokens`` is still played, ``score_truncated``: the game reads its first
bracketed move). The loop's own held-out evals play every held-out seed once, greedily
(T=1e-3), at ``--eval-max-tokens``, before the first step and after the last; when the
first cuts off more than 5% of the replies the loop repeats both at a limit where it does
not (``Config.uncut_evals``). Their figures are read from the run record
(:mod:`mint_envkit.runs.record`): ``won`` (the env's success) and the mean reward before and
after, the truncation share, and the best trivial game policy on the same seeds with
whether the trained model beats it beyond noise (:mod:`mint_envkit.rollouts.game_policies`:
a random offered move, always the first, repeating the first, the moves in order; each
policy's own figures are in the table too). ``OUT/seed<N>/`` holds the run
(metrics.jsonl, rollouts.jsonl: every held-out game's moves), ``OUT/seed<N>.json`` the
figures and the held-out transcripts; ``--summary OUT`` reprints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from mint_envkit import Config
from mint_envkit.adapters import from_textarena
from mint_envkit.rl import run_training
from mint_envkit.rollouts.game_policies import game_baselines
from mint_envkit.runs.files import read_jsonl
from mint_envkit.runs.record import FINAL, FINAL_UNCUT, TEST, UNCUT, eval_prefix, find_eval

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"
GAME = "TicTacToe-v0"
SYSTEM_PROMPT = "You play a game. Reply with your move only, in square brackets, such as [4]."
EXAMPLE = [
    {
        "role": "user",
        "content": "[GAME] Example. Current Board:\n\n O | 1 | X \n---+---+---\n 3 | 4 | 5 "
        "\n---+---+---\n 6 | 7 | 8 \n\nAvailable Moves: '[1]', '[3]', '[4]', '[5]', '[6]', "
        "'[7]', '[8]'",
    },
    {"role": "assistant", "content": "[4]"},
]
"""One worked move, the format hint (the example board is not a position of the game)."""
GREEDY = 1e-3  # the embedded backend takes temperatures > 0 only


def builder(args: argparse.Namespace) -> Any:
    """Training seeds 0..steps*batch-1, held-out seeds from 1,000,000 (one game each)."""
    return from_textarena(
        GAME,
        opponent="random",
        seeds=args.batch * max(args.steps, 1),
        test_seeds=args.eval_n,
        system_prompt=SYSTEM_PROMPT,
        few_shot=EXAMPLE if args.example else (),
        max_turns=10,
        model_name=args.model,
        renderer_name="chat_template",
        batch_size=args.batch,
        group_size=args.group,
        max_generation_tokens=args.max_tokens,
        score_truncated=True,  # a reply cut off still moves: the game reads its first [cell]
        seed=args.seed,
    )


def _game(rows: list[dict[str, Any]], split: str, *, last: bool) -> dict[str, Any] | None:
    """One held-out eval of the record: its figures, and the game's invalid moves per game."""
    found = find_eval(rows, split, last=last)
    if found is None:
        return None
    row, figures = found
    return {
        "max_tokens": figures.max_tokens,
        "won": figures.answers.success,
        "reward": figures.mean_reward,
        "truncated": figures.truncated_rate,
        "invalid_moves": row.get(f"{eval_prefix(split)}/all/invalid_moves"),
        "draw": row.get(f"{eval_prefix(split)}/all/draw"),
        "best_trivial": figures.answers.baseline_name,
        "best_trivial_won": figures.answers.baseline_correct,
        "beats_trivial": figures.answers.beats_baseline,
    }


def transcripts(run: Path, split: str) -> list[dict[str, Any]]:
    """The held-out games of one eval: the seed, the model's moves, the reward, the reason."""
    return [
        {
            "seed": r["problem"].get("seed"),
            "max_tokens": r.get("max_tokens"),
            "moves": r.get("replies"),
            "reward": r.get("reward"),
            "reason": (r.get("logs") or {}).get("reason"),
        }
        for r in read_jsonl(run / "rollouts.jsonl")
        if r.get("split") == split and "replies" in r
    ]


async def one_seed(args: argparse.Namespace) -> dict[str, Any]:
    """Train one seed; the held-out figures before and after, and the trivial policies."""
    t0 = time.monotonic()
    made = builder(args)
    _train, test = await made()
    trivial = await game_baselines(test.groups(), seed=args.seed)
    run = args.out / f"seed{args.seed}"
    config = Config(
        dataset_builder=made,
        model_name=args.model,
        log_path=str(run),
        learning_rate=args.lr,
        lora_rank=16,
        train_unembed=False,
        temperature=1.0,
        eval_temperature=GREEDY,
        eval_max_tokens=args.eval_max_tokens,
        eval_every=max(args.steps, 1),
        max_steps=max(args.steps, 1),
        save_every=0,
        backend="local",
        local_threads=args.threads,
        sampling_seed=args.seed,
    )
    result = await run_training(config)
    rows = read_jsonl(run / "metrics.jsonl")
    steps = [
        {
            "step": r["step"],
            "reward": r.get("env/all/reward/total"),
            "won": r.get("env/all/won"),
            "invalid_moves": r.get("env/all/invalid_moves"),
            "truncated": r.get("env/all/truncated"),
            "datums": r.get("train/datums"),
        }
        for r in rows
        if "env/all/reward/total" in r
    ]
    return {
        "game": GAME,
        "model": args.model,
        "seed": args.seed,
        "steps": args.steps,
        "batch": args.batch,
        "group": args.group,
        "lr": args.lr,
        "train_max_tokens": args.max_tokens,
        "held_out_n": args.eval_n,
        "before": _game(rows, TEST, last=False),
        "after": _game(rows, FINAL, last=True),
        "uncut_before": _game(rows, UNCUT, last=False),
        "uncut_after": _game(rows, FINAL_UNCUT, last=True),
        "claim": None if result.claim is None else result.claim.line(),
        "trivial": {b.name: {"won": b.success, "reward": b.mean_reward} for b in trivial},
        "training": steps,
        "held_out_games": {
            "before": transcripts(run, TEST),
            "after": transcripts(run, FINAL),
        },
        "wall_s": round(time.monotonic() - t0, 1),
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _num(value: float | None, fmt: str = "+.3f") -> str:
    return "n/a" if value is None else format(value, fmt)


def summary(runs: list[dict[str, Any]]) -> str:
    """The table of the seeds: held-out figures where nothing is cut off, the trivial policies."""
    if not runs:
        return "no results"
    r0 = runs[0]
    rows = [
        f"{r0['game']} vs a random listed move, {r0['model']}, {r0['steps']} steps x "
        f"{r0['batch']} seeds x {r0['group']} games, lr {r0['lr']}, training reply limit "
        f"{r0['train_max_tokens']}; held-out n={r0['held_out_n']} seeds, greedy",
        "",
        "| seed | reply limit | won before | won after | reward before | reward after "
        "| invalid moves/game before / after | cut off before / after "
        "| best trivial policy: won | after beats it | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        uncut = r["uncut_before"] is not None and r["uncut_after"] is not None
        b, a = (r["uncut_before"], r["uncut_after"]) if uncut else (r["before"], r["after"])
        if b is None or a is None:
            rows.append(f"| {r['seed']} | the run logged no before/after evals | | | | | | | | |")
            continue
        beats = {True: "yes", False: "no"}.get(a["beats_trivial"], "n/a")
        rows.append(
            f"| {r['seed']} | {b['max_tokens']} | {_pct(b['won'])} | {_pct(a['won'])} | "
            f"{_num(b['reward'])} | {_num(a['reward'])} | {_num(b['invalid_moves'], '.2f')} / "
            f"{_num(a['invalid_moves'], '.2f')} | {_pct(b['truncated'])} / "
            f"{_pct(a['truncated'])} | {a['best_trivial']}: {_pct(a['best_trivial_won'])} | "
            f"{beats} | {r['wall_s']:.0f} |"
        )
    rows += ["", "the loop's before/after line:"]
    rows += [f"- seed {r['seed']}: {r['claim']}" for r in runs]
    rows += ["", "trivial game policies on the same held-out seeds (won, mean reward):"]
    for r in runs:
        parts = [f"{n} {_pct(v['won'])}, {_num(v['reward'])}" for n, v in r["trivial"].items()]
        rows.append(f"- seed {r['seed']}: " + "; ".join(parts))
    rows += ["", "training (T=1.0, each step's seeds new): step: reward / won / invalid / cut off"]
    for r in runs:
        curve = ", ".join(
            f"{s['step']}: {_num(s['reward'], '+.2f')} / {_pct(s['won'])} / "
            f"{_num(s['invalid_moves'], '.2f')} / {_pct(s['truncated'])}"
            for s in r["training"]
        )
        rows.append(f"- seed {r['seed']}: {curve}")
    return "\n".join(rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch", type=int, default=2, help="training seeds per step")
    p.add_argument("--group", type=int, default=4, help="games per training seed")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-tokens", type=int, default=16, help="training reply limit")
    p.add_argument("--eval-max-tokens", type=int, default=32, help="held-out reply limit")
    p.add_argument("--eval-n", type=int, default=12, help="held-out seeds")
    p.add_argument("--model", default=SMOLLM2)
    p.add_argument("--example", type=int, default=1, help="1: one worked move (few_shot)")
    p.add_argument("--threads", type=int, default=None, help="torch threads of the server")
    p.add_argument("--out", type=Path, default=Path("runs/ta_learning"))
    p.add_argument("--summary", type=Path, default=None, help="print the table of a run dir")
    return p.parse_args(argv)


def _results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("seed*.json"))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summary is not None:
        print(summary(_results(args.summary)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        print(f"=== seed {seed} ({time.strftime('%H:%M:%S')})", flush=True)
        run = argparse.Namespace(**{**vars(args), "seed": seed})
        result = asyncio.run(one_seed(run))
        (args.out / f"seed{seed}.json").write_text(json.dumps(result, indent=1) + "\n")
    table = summary(_results(args.out))
    (args.out / "summary.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
