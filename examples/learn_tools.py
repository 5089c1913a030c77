"""Tool use that learns locally: GRPO teaches SmolLM2-135M to call a ``multiply`` tool.

    python examples/learn_tools.py --seed 0 --steps 4 --out runs/learn_tools

The task: "What is 37 * 48?" (two-digit factors). SmolLM2-135M cannot multiply
in its head (its greedy correctness is near 0), but it has a ``multiply`` tool:
the right move is to call it with the question's two numbers, then copy the
number it returns. SmolLM2's chat template has no tools slot, so the renderer
writes the tool's schema into the system message (docs/tools.md); the prompt
also holds two worked examples (``few_shot``: a question, the tool-call turn, the
tool's result, the final answer), which are the format hint. The reward is 1 for
a right final number, 0 otherwise, plus 0.2 when every call of the episode ran
(``ToolMultiplyEnv.reward_tool_ok``).

Before the first step and after the last, the model is evaluated greedily on
held-out problems (another seed, no factor pair shared with training): the lines
show correctness, the tool-call rate (episodes with at least one call), the rate
of episodes whose calls all ran, and the best trivial baseline (see
``mint_envkit.rollouts.answers``). ``benchmarks/learn_tools_seeds.sh`` runs three seeds
and tabulates them (docs/benchmarks.md, "Tool use on the real local model").

Without SmolLM2 (``mint-envkit install-model smollm2``) it says so and runs the
same task on the random tiny model (only the plumbing is exercised: that model
does not write tool calls).

Checked offline, with no model (a scripted call, then the answer)::

    mint-envkit check examples/learn_tools.py:builder --groups 1 --reply \\
        '["<tool_call>\\n{\\"name\\": \\"multiply\\", \\"arguments\\": {\\"a\\": 60, \\"b\\": 64}}\\n</tool_call>", "3840"]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_arithmetic import EVAL_TEMPERATURE, TINY, held_out, held_out_line

from mint_envkit import (
    Config,
    DatasetBuilder,
    Feedback,
    Message,
    ToolEnv,
    evaluate,
    last_number,
    tool,
)
from mint_envkit.evaluation import learning_claim
from mint_envkit.rl import run_training
from mint_envkit.rollouts import (
    SamplingSettings,
    local_backend,
    pretrained_local_model,
    resolve_connection,
    sampling_client,
    service_client,
)

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers.

    Args:
        a: the first factor.
        b: the second factor.
    """
    return a * b


def _example(a: int, b: int) -> list[Message]:
    """One worked example: the question, the tool-call turn, the tool's result, the answer."""
    call = {
        "type": "function",
        "id": "call_0",
        "function": {"name": "multiply", "arguments": json.dumps({"a": a, "b": b})},
    }
    return [
        {"role": "user", "content": f"What is {a} * {b}?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "multiply", "tool_call_id": "call_0", "content": str(a * b)},
        {"role": "assistant", "content": str(a * b)},
    ]


class ToolMultiplyEnv(ToolEnv):
    """ "What is a * b?" with a ``multiply`` tool; the last number of the final reply is the answer.

    Reward: 1 for a right final number, 0 otherwise, plus ``reward_tool_ok`` (0.2) when the
    episode made at least one tool call and every call ran (a readable call of a known tool
    with fitting arguments): a small push toward well-formed calls while they are rare.
    """

    system_prompt = (
        "You are a careful assistant with a calculator. For every question, first call "
        "the multiply tool, then reply with only the number it returns."
    )
    tools: ClassVar[list[Any]] = [multiply]
    few_shot: ClassVar[list[Message]] = [*_example(12, 34), *_example(57, 23)]
    parser = last_number
    reward_correct = 1.0
    reward_incorrect = 0.0
    reward_tool_ok: ClassVar[float] = 0.2
    max_turns = 3
    max_tool_calls = 2
    tool_timeout_s = 2.0
    optional_fields: ClassVar[dict[str, Any]] = {"pair": None}

    async def respond(self, message: Message) -> Feedback:
        """As :class:`~mint_envkit.ToolEnv`, with the bonus added to the final turn's reward."""
        feedback = await super().respond(message)
        counts = self.counts
        ran = counts["tool_calls"] > 0 and counts["invalid_tool_calls"] + counts["tool_errors"] == 0
        if feedback.done and ran:
            return attrs.evolve(feedback, reward=feedback.reward + self.reward_tool_ok)
        return feedback


def multiply_problems(n: int, seed: int, exclude: frozenset = frozenset()) -> list[dict[str, Any]]:
    """``n`` distinct problems a * b (a, b in 11..99) drawn with ``seed``, none in ``exclude``."""
    rng, seen, problems = random.Random(seed), set(exclude), []
    while len(problems) < n:
        a, b = rng.randint(11, 99), rng.randint(11, 99)
        if (a, b) not in seen:
            seen.add((a, b))
            problems.append(
                {"question": f"What is {a} * {b}?", "answer": str(a * b), "pair": [a, b]}
            )
    return problems


def splits(n_train: int, n_held_out: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Training problems and held-out ones (another seed; no factor pair in both)."""
    train = multiply_problems(n_train, seed=seed)
    held_out = multiply_problems(
        n_held_out, seed=10_000 + seed, exclude=frozenset(tuple(p["pair"]) for p in train)
    )
    return train, held_out


builder = DatasetBuilder(
    env=ToolMultiplyEnv,
    problems=multiply_problems(4, seed=0),
    batch_size=4,
    group_size=1,
    model_name=SMOLLM2,
    renderer_name="chat_template",
    shuffle=False,
)
"""Four problems on SmolLM2's tokenizer, for ``mint-envkit check``."""


def tool_figures(rollouts: list[Any]) -> dict[str, float]:
    """Per episode: ``tool_call_rate`` (at least one call) and ``tool_ok_rate`` (calls, all ran)."""
    episodes = [t for r in rollouts if r.error is None for t in r.trajectories]
    if not episodes:
        return {"tool_call_rate": 0.0, "tool_ok_rate": 0.0}
    called = [t.metrics.get("tool_calls", 0.0) > 0 for t in episodes]
    ok = [
        c and t.metrics.get("invalid_tool_calls", 0.0) + t.metrics.get("tool_errors", 0.0) == 0
        for c, t in zip(called, episodes, strict=True)
    ]
    return {"tool_call_rate": sum(called) / len(episodes), "tool_ok_rate": sum(ok) / len(episodes)}


def build_config(args: argparse.Namespace, model: str, url: str) -> tuple[Config, DatasetBuilder]:
    """The training config and the held-out builder."""
    train, held_out = splits(args.batch * args.steps, args.eval_n, args.seed)
    common = {
        "env": ToolMultiplyEnv,
        "model_name": model,
        "seed": args.seed,
        "group_size": args.group,
        "renderer_name": "chat_template" if model == SMOLLM2 else "qwen3",
    }
    train_builder = DatasetBuilder(problems=train, batch_size=args.batch, **common)
    eval_builder = attrs.evolve(
        train_builder, problems=held_out, batch_size=args.eval_n, group_size=1, shuffle=False
    )
    config = Config(
        dataset_builder=attrs.evolve(train_builder, max_generation_tokens=args.max_tokens),
        model_name=model,
        log_path=str(args.out / "run"),
        learning_rate=args.lr,
        lora_rank=16,
        train_unembed=False,
        temperature=args.temperature,
        max_steps=max(args.steps, 1),
        save_every=0,
        backend="local",
        base_url=url,
        sampling_seed=args.seed,
    )
    return config, eval_builder


async def held_out_eval(config: Config, client: Any, builder: DatasetBuilder) -> dict[str, Any]:
    """Greedy held-out figures (one :func:`mint_envkit.evaluate`): correctness, parse and
    truncation rates, the best trivial baseline, and the tool-call rates."""
    greedy = SamplingSettings(temperature=EVAL_TEMPERATURE, max_tokens=config.max_tokens)
    result = await evaluate(builder, client=client, samples=1, sampling=greedy, quiet=True)
    figures = held_out(result.metrics("eval"), "eval")
    return {
        **figures,
        "tool_calls_mean": figures.get("tool_calls", 0.0),
        **tool_figures(result.rollouts),
        "summary": result.summary,
    }


def eval_line(when: str, n: int, figures: dict[str, Any]) -> str:
    """The held-out line of learn_arithmetic plus the tool-call rates."""
    return (
        held_out_line(when, n, figures)
        + f"\n  tool-call rate {figures['tool_call_rate']:.1%}  "
        + f"all calls ran {figures['tool_ok_rate']:.1%}  parsed {figures['parsed']:.1%}"
    )


async def learn(args: argparse.Namespace, model: str) -> dict[str, Any]:
    """Start the server, evaluate, train, evaluate again; return the curve."""
    t0 = time.monotonic()
    async with local_backend([model]) as url:
        config, eval_builder = build_config(args, model, url)
        async with service_client(resolve_connection("local", url)) as service:
            base = await sampling_client(service, model)
            start = await held_out_eval(config, base, eval_builder)
            print(eval_line("before", args.eval_n, start), flush=True)
            end, steps = start, []
            if args.steps > 0:
                result = await run_training(config)
                path = result.final_checkpoint["sampler_path"]
                trained = await sampling_client(service, model, path)
                end = await held_out_eval(config, trained, eval_builder)
                steps = [_step(m) for m in _metrics(Path(config.log_path))]
    return {
        "model": model,
        "task": ToolMultiplyEnv.__name__,
        "seed": args.seed,
        "held_out": {"before": start, "after": end, "n": args.eval_n},
        "steps": steps,
        "wall_s": round(time.monotonic() - t0, 1),
    }


def _step(m: dict[str, Any]) -> dict[str, Any]:
    calls = m.get("env/all/tool_calls") or 0.0
    return {
        "step": m["step"],
        "correct": m.get("env/all/correct") or 0.0,
        "tool_calls": calls,
        "datums": m.get("train/datums", 0),
    }


def _metrics(log_path: Path) -> list[dict[str, Any]]:
    lines = (log_path / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def table(curve: dict[str, Any]) -> str:
    """The curve as text: held-out before, one row per step, held-out after."""
    held = curve["held_out"]
    rows = [f"{curve['task']} on {curve['model']} (seed {curve['seed']})"]
    rows.append(eval_line("before", held["n"], held["before"]))
    rows.append("step  correct  tool calls/episode  trained datums")
    for s in curve["steps"]:
        rows.append(
            f"{s['step']:>4}  {s['correct']:7.1%}  {s['tool_calls']:18.2f}  {s['datums']:>14}"
        )
    rows.append(eval_line("after ", held["n"], held["after"]))
    if curve["steps"]:
        claim = learning_claim(held["before"]["summary"], held["after"]["summary"])
        rows.append(claim.line())
    rows.append(f"wall {curve['wall_s']:.0f} s")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=4, help="0: only the held-out eval of the base")
    p.add_argument("--out", type=Path, default=Path("runs/learn_tools"))
    p.add_argument(
        "--model", default=None, help="default: SmolLM2 if installed, else the tiny model"
    )
    p.add_argument("--batch", type=int, default=8, help="problems per step")
    p.add_argument("--group", type=int, default=4, help="samples per problem")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=40, help="new tokens per turn")
    p.add_argument("--eval-n", type=int, default=20)
    return p.parse_args(argv)


def choose_model(requested: str | None) -> str:
    """``requested``, else SmolLM2 when installed, else the tiny model (saying so)."""
    if requested:
        return requested
    model = pretrained_local_model()
    if model == TINY:
        print("The random tiny model writes no tool calls: plumbing only.", flush=True)
    return model


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = choose_model(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    curve = asyncio.run(learn(args, model))
    print(table(curve))
    (args.out / "curve.json").write_text(json.dumps(curve, indent=1) + "\n")
    print(f"curve: {args.out / 'curve.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
