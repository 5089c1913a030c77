"""Does GRPO teach SmolLM2-135M a TextArena game on a laptop? (issue 47, item 4)

    python benchmarks/textarena_learning.py --seeds 0 1 2 --out runs/ta_learning
    python benchmarks/textarena_learning.py --summary runs/ta_learning

The game: TextArena's ``TicTacToe-v0`` through :func:`mint_envkit.adapters.from_textarena`,
the model playing player 0 (it moves first) against the fixed ``"random"`` opponent (a
random move among the ones the game lists), with the game's own reward (+1 win, 0 draw,
-1 loss) and its invalid-move rule (one warning, then the move that breaks it loses).
A problem is a seed (the opponent's moves); training seeds are 0..N-1, the held-out ones
start at 1,000,000 (never trained on).

Per sampling seed: the held-out games are played greedily (T=1e-3) by the base model,
then ``--steps`` GRPO steps train it (LoRA rank 16, ``--batch`` seeds x ``--group``
games per step at T=1.0; a training reply cut off at ``--max-tokens`` is still played,
``score_truncated``: the game reads its first bracketed move), then the held-out games
are played again by the trained model.
Each held-out evaluation is one :func:`mint_envkit.evaluate` at a reply limit where the
base model is not cut off (``--eval-max-tokens``; the cut-off share is reported, and a
claim is only made where it is at most 5%). Beside them, two trivial policies play the
same held-out seeds through the same env: ``random``, a random listed move (8 games per
seed), and ``first``, the first listed move. The summary says, per seed, the mean reward,
win / draw / loss rates and invalid moves per game, before and after, and whether the
after model beats the random-move policy beyond noise (a one-sided Welch test at 5%
on the per-game rewards).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

import attrs

from mint_envkit import Config, evaluate
from mint_envkit.adapters import from_textarena
from mint_envkit.rl import run_training
from mint_envkit.rollouts import (
    SamplingSettings,
    ScriptedPolicy,
    local_backend,
    resolve_connection,
    sampling_client,
    service_client,
)

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


def builder(args: argparse.Namespace, model: str) -> Any:
    """The training builder (train seeds) and the held-out one (test seeds, one game each)."""
    train = from_textarena(
        GAME,
        opponent="random",
        seeds=args.batch * max(args.steps, 1),
        system_prompt=SYSTEM_PROMPT,
        few_shot=EXAMPLE if args.example else (),
        max_turns=10,
        model_name=model,
        renderer_name="chat_template",
        batch_size=args.batch,
        group_size=args.group,
        max_generation_tokens=args.max_tokens,
        score_truncated=True,  # a reply cut off still moves: the game reads its first [cell]
        seed=args.seed,
    )
    held_out = from_textarena(
        GAME,
        opponent="random",
        seeds=list(range(1_000_000, 1_000_000 + args.eval_n)),
        system_prompt=SYSTEM_PROMPT,
        few_shot=EXAMPLE if args.example else (),
        max_turns=10,
        model_name=model,
        renderer_name="chat_template",
        batch_size=args.eval_n,
        group_size=1,
        shuffle=False,
        max_generation_tokens=args.eval_max_tokens,
    )
    return train, held_out


def games(rollouts: list[Any]) -> list[dict[str, float]]:
    """Each game's reward and its last step's metrics (won, draw, lost, invalid_moves...)."""
    out = []
    for rollout in rollouts:
        if rollout.error is not None:
            raise RuntimeError(f"a held-out game failed: {rollout.error}")
        for trajectory in rollout.trajectories:
            metrics = dict(trajectory.metrics)
            metrics["reward"] = sum(t.reward for t in trajectory.transitions)
            out.append(metrics)
    return out


def figures(played: list[dict[str, float]]) -> dict[str, Any]:
    """Mean reward, win / draw / loss rates, invalid moves per game, cut-off rate."""

    def mean(key: str) -> float:
        return statistics.fmean(g.get(key, 0.0) for g in played)

    return {
        "n": len(played),
        "reward": mean("reward"),
        "won": mean("won"),
        "draw": mean("draw"),
        "lost": mean("lost"),
        "invalid_moves": mean("invalid_moves"),
        "cut_off": mean("truncated") + mean("context_overflow"),
        "no_stop": mean("parse_error"),
        "rewards": [g["reward"] for g in played],
    }


async def held_out_eval(client: Any, held: Any, max_tokens: int) -> dict[str, Any]:
    greedy = SamplingSettings(temperature=GREEDY, max_tokens=max_tokens)
    result = await evaluate(held, client=client, samples=1, sampling=greedy, quiet=True)
    return figures(games(result.rollouts))


def random_move(messages: list[dict[str, Any]]) -> str:
    """A random listed move, drawn from the game so far (so each game draws its own)."""
    from mint_envkit.adapters.textarena import listed_moves

    rng = random.Random(zlib.crc32(json.dumps(messages).encode()))
    moves = listed_moves(messages[-1]["content"])
    return rng.choice(moves) if moves else "[0]"


def first_move(messages: list[dict[str, Any]]) -> str:
    from mint_envkit.adapters.textarena import listed_moves

    moves = listed_moves(messages[-1]["content"])
    return moves[0] if moves else "[0]"


async def trivial(held: Any) -> dict[str, Any]:
    """The two trivial policies on the held-out seeds (random: 8 games per seed)."""
    many = attrs.evolve(held, group_size=8)
    out = {}
    for name, policy, source in (("random", random_move, many), ("first", first_move, held)):
        report = await ScriptedPolicy(policy).run(source)
        played = [
            {**m, "reward": r}
            for group in report.groups
            for r, m in zip(group.rewards, group.metrics, strict=True)
        ]
        out[name] = figures(played)
    return out


def beats(after: list[float], baseline: list[float]) -> tuple[bool, float]:
    """One-sided Welch t-test at 5% (normal approximation): is ``after``'s mean higher?"""
    ma, mb = statistics.fmean(after), statistics.fmean(baseline)
    va = statistics.variance(after) if len(after) > 1 else 0.0
    vb = statistics.variance(baseline) if len(baseline) > 1 else 0.0
    se = math.sqrt(va / len(after) + vb / len(baseline))
    if se == 0:
        return ma > mb, 0.0 if ma > mb else 1.0
    z = (ma - mb) / se
    p = 0.5 * math.erfc(z / math.sqrt(2))
    return p < 0.05, p


async def one_seed(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic()
    model = args.model
    train, held = builder(args, model)
    async with local_backend([model]) as url:
        config = Config(
            dataset_builder=train,
            model_name=model,
            log_path=str(args.out / f"seed{args.seed}" / "run"),
            learning_rate=args.lr,
            lora_rank=16,
            train_unembed=False,
            temperature=1.0,
            max_steps=max(args.steps, 1),
            save_every=0,
            eval_every=0,
            backend="local",
            base_url=url,
            sampling_seed=args.seed,
        )
        async with service_client(resolve_connection("local", url)) as service:
            base = await sampling_client(service, model)
            before = await held_out_eval(base, held, args.eval_max_tokens)
            print(f"seed {args.seed} before: {line(before)}", flush=True)
            after, steps = before, []
            if args.steps > 0:
                result = await run_training(config)
                trained = await sampling_client(
                    service, model, result.final_checkpoint["sampler_path"]
                )
                after = await held_out_eval(trained, held, args.eval_max_tokens)
                steps = step_lines(Path(config.log_path))
            print(f"seed {args.seed} after:  {line(after)}", flush=True)
    return {
        "game": GAME,
        "model": model,
        "seed": args.seed,
        "steps": args.steps,
        "batch": args.batch,
        "group": args.group,
        "lr": args.lr,
        "train_max_tokens": args.max_tokens,
        "eval_max_tokens": args.eval_max_tokens,
        "before": before,
        "after": after,
        "trivial": await trivial(held),
        "training": steps,
        "wall_s": round(time.monotonic() - t0, 1),
    }


def step_lines(log_path: Path) -> list[dict[str, Any]]:
    rows = []
    for text in (log_path / "metrics.jsonl").read_text().splitlines():
        m = json.loads(text)
        rows.append(
            {
                "step": m.get("step"),
                "reward": m.get("env/all/reward/total", m.get("env/all/reward")),
                "won": m.get("env/all/won"),
                "invalid_moves": m.get("env/all/invalid_moves"),
                "cut_off": m.get("env/all/truncated"),
                "datums": m.get("train/datums"),
            }
        )
    return rows


def line(f: dict[str, Any]) -> str:
    return (
        f"reward {f['reward']:+.3f}  won {f['won']:.1%}  draw {f['draw']:.1%}  lost {f['lost']:.1%}"
        f"  invalid moves/game {f['invalid_moves']:.2f}  cut off {f['cut_off']:.1%} (n={f['n']})"
    )


def summary(out: Path) -> str:
    runs = [json.loads(p.read_text()) for p in sorted(out.glob("seed*/result.json"))]
    if not runs:
        return f"no results under {out}"
    r0 = runs[0]
    rows = [
        f"{r0['game']} vs a random listed move, {r0['model']}, {r0['steps']} steps x "
        f"{r0['batch']} seeds x {r0['group']} games, lr {r0['lr']}, reply limit "
        f"{r0['train_max_tokens']} (train) / {r0['eval_max_tokens']} (held-out, greedy), "
        f"held-out n={r0['before']['n']}",
        "",
        "| seed | reward before | after | won before | after | invalid moves/game before "
        "| after | cut off before | after | random move: reward, won | first move: reward, won "
        "| after beats random move (p) | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        b, a, rnd, first = r["before"], r["after"], r["trivial"]["random"], r["trivial"]["first"]
        ok, p = beats(a["rewards"], rnd["rewards"])
        uncut = b["cut_off"] <= 0.05
        verdict = ("yes" if ok else "no") if uncut else "n/a (base cut off)"
        rows.append(
            f"| {r['seed']} | {b['reward']:+.3f} | {a['reward']:+.3f} | {b['won']:.1%} | "
            f"{a['won']:.1%} | {b['invalid_moves']:.2f} | {a['invalid_moves']:.2f} | "
            f"{b['cut_off']:.1%} | {a['cut_off']:.1%} | {rnd['reward']:+.3f}, {rnd['won']:.1%} "
            f"| {first['reward']:+.3f}, {first['won']:.1%} | {verdict} ({p:.3f}) | {r['wall_s']:.0f} |"
        )
    rows.append("")
    rows.append("training (sampled at T=1.0, each step's seeds new): step, reward, won, invalid")
    for r in runs:
        curve = ", ".join(
            f"{s['step']}: {s['reward']:+.2f} / {s['won'] or 0:.0%} / {s['invalid_moves'] or 0:.2f}"
            for s in r["training"]
            if s["reward"] is not None
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
    p.add_argument("--out", type=Path, default=Path("runs/ta_learning"))
    p.add_argument("--summary", type=Path, default=None, help="print the table of a run dir")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.summary is not None:
        print(summary(args.summary))
        return
    for seed in args.seeds:
        run = argparse.Namespace(**{**vars(args), "seed": seed})
        result = asyncio.run(one_seed(run))
        path = args.out / f"seed{seed}" / "result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
    print(summary(args.out))


if __name__ == "__main__":
    main()
