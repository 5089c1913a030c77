"""The peer side of the benchmarks: tinker-cookbook 0.3.0, run in benchmarks/peer/.venv.

Not imported by mint_envkit. Two modes:

``train``  (benchmarks/loop_vs_peer.py) runs tinker-cookbook's own
    ``tinker_cookbook.rl.train.main`` (the synchronous on-policy loop the MinT
    recipe uses) on the arithmetic problems, with a cookbook-style
    ``MessageEnv`` behind the cookbook's ``EnvFromMessageEnv`` and its Qwen3
    renderer, against ``--base-url`` (the harness's embedded server). It
    records, at the start of the loop and at the end of every step, the wall
    clock and the server's request counts (``GET /api/v1/mint_envkit/stats``).

``envlayer`` (benchmarks/env_layer.py) runs episodes through the cookbook's
    ``do_group_rollout`` -> ``EnvFromMessageEnv`` -> qwen3 renderer -> the same
    ``MessageEnv``, with a scripted token policy (no model, no server).

The tokenizer is the harness's locally built tiny tokenizer, passed as a
directory (``--tokenizer``). The cookbook loads a directory offline
(``tokenizer_utils.get_tokenizer`` -> ``AutoTokenizer.from_pretrained(dir)``);
the model name ``mint-envkit/tiny-qwen3`` is also registered with
``tokenizer_utils.register_tokenizer`` so anything that looks the tokenizer up
by model name gets the same one. ``training_client.get_tokenizer()`` (called by
``rl.train.main``) loads the same directory from the server's ``get_info``.
"""

from __future__ import annotations

import time

PROCESS_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import chz  # noqa: E402

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
import tinker  # noqa: E402
from _bench_reward import SYSTEM_PROMPT, length_graded_reward  # noqa: E402
from _marks import Marks, on_first_snapshot  # noqa: E402
from tinker_cookbook import renderers, tokenizer_utils  # noqa: E402
from tinker_cookbook.completers import StopCondition, TokenCompleter, TokensWithLogprobs  # noqa: E402
from tinker_cookbook.rl.message_env import (  # noqa: E402
    EnvFromMessageEnv,
    MessageEnv,
    MessageStepResult,
)
from tinker_cookbook.rl.types import (  # noqa: E402
    Env,
    EnvGroupBuilder,
    RLDataset,
    RLDatasetBuilder,
)

# The same prompt and reward function as our side of benchmarks/loop_vs_peer.py
# (benchmarks/_bench_reward.py: 1.0 for a right first number, else minus the reply's
# length in characters over 100), so both loops get the same learning signal and train
# on every step; a reply cut at max_tokens -0.1 and one without the stop token -1.0
# (EnvFromMessageEnv's defaults, the same in the cookbook and in mint_envkit).


class ArithmeticMessageEnv(MessageEnv):
    """The MinT recipe's shape: system prompt, question, one reply scored by
    ``length_graded_reward`` (the same function our side uses)."""

    def __init__(self, question: str, answer: str) -> None:
        self.question = question
        self.answer = answer

    async def initial_observation(self) -> list[renderers.Message]:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.question},
        ]

    async def step(self, message: renderers.Message) -> MessageStepResult:
        text = renderers.get_text_content(message)
        reward, correct, parsed = length_graded_reward(text, self.answer)
        return MessageStepResult(
            reward=reward,
            episode_done=True,
            next_messages=[],
            metrics={"correct": float(correct), "parsed": float(parsed)},
        )


@dataclass(frozen=True)
class ArithmeticGroupBuilder(EnvGroupBuilder):
    """``group_size`` cookbook ``EnvFromMessageEnv``s on one problem."""

    renderer: renderers.Renderer
    question: str
    answer: str
    group_size: int

    async def make_envs(self) -> Sequence[Env]:
        return [
            EnvFromMessageEnv(self.renderer, ArithmeticMessageEnv(self.question, self.answer))
            for _ in range(self.group_size)
        ]

    def logging_tags(self) -> list[str]:
        return ["arithmetic"]


class ArithmeticDataset(RLDataset):
    """Batch ``i`` holds exactly the problems of the harness's batch ``i``."""

    def __init__(self, batches: list[list[dict]], renderer: renderers.Renderer, group_size: int):
        self.batches = batches
        self.renderer = renderer
        self.group_size = group_size

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        return [
            ArithmeticGroupBuilder(
                renderer=self.renderer,
                question=p["question"],
                answer=str(p["answer"]),
                group_size=self.group_size,
            )
            for p in self.batches[index]
        ]

    def __len__(self) -> int:
        return len(self.batches)


@chz.chz
class ArithmeticDatasetBuilder(RLDatasetBuilder):
    problems_file: str
    tokenizer_name: str
    renderer_name: str
    group_size: int

    async def __call__(self) -> tuple[ArithmeticDataset, None]:
        with open(self.problems_file) as f:
            batches = json.load(f)
        tokenizer = tokenizer_utils.get_tokenizer(self.tokenizer_name)
        renderer = renderers.get_renderer(self.renderer_name, tokenizer=tokenizer)
        return ArithmeticDataset(batches, renderer, self.group_size), None


def register_tiny_tokenizer(model_name: str, tokenizer_dir: str) -> None:
    tokenizer_utils.register_tokenizer(
        model_name, lambda: tokenizer_utils.get_tokenizer(tokenizer_dir)
    )


# ------------------------------------------------------------------- train


def install_hooks(marks: Marks) -> None:
    """Mark the loop start (first weight snapshot) and each step's end (its metrics line)."""
    from tinker_cookbook.utils import ml_log

    # the loop starts at its first weight snapshot, whichever call (sync or async) makes it
    on_first_snapshot(tinker.TrainingClient, lambda: marks.mark("loop_start"))

    original_log = ml_log.JsonLogger.log_metrics

    def log_metrics(self, metrics, step=None):
        original_log(self, metrics, step=step)
        if step is not None and "progress/batch" in metrics:
            marks.mark(f"step_end:{step}")

    ml_log.JsonLogger.log_metrics = log_metrics


async def run_train(args: argparse.Namespace) -> dict[str, Any]:
    from tinker_cookbook.rl import train

    marks = Marks(args.base_url, tinker)
    marks.mark("process_imported")
    install_hooks(marks)
    config = train.Config(
        learning_rate=args.learning_rate,
        dataset_builder=ArithmeticDatasetBuilder(
            problems_file=args.problems,
            tokenizer_name=args.tokenizer,
            renderer_name=args.renderer,
            group_size=args.group_size,
        ),
        model_name=args.model,
        max_tokens=args.max_tokens,
        log_path=args.log_path,
        renderer_name=args.renderer,
        lora_rank=args.lora_rank,
        temperature=args.temperature,
        eval_every=0,
        save_every=0,
        max_steps=args.steps,
        base_url=args.base_url,
    )
    await train.main(config)
    marks.mark("main_returned")
    metrics = []
    try:
        with open(f"{args.log_path}/metrics.jsonl") as f:
            metrics = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    return {"marks": marks.items, "metrics": metrics}


# ---------------------------------------------------------------- envlayer


class ScriptedTokenCompleter(TokenCompleter):
    """Replies in turn from a list, each ended with the renderer's stop token."""

    def __init__(self, tokenizer: Any, stop_token: int, replies: list[str]) -> None:
        self.tokenizer = tokenizer
        self.stop_token = stop_token
        self.replies = replies
        self.calls = 0

    async def __call__(self, model_input: tinker.ModelInput, stop: StopCondition):
        text = self.replies[self.calls % len(self.replies)]
        self.calls += 1
        tokens = list(self.tokenizer.encode(text, add_special_tokens=False))
        return TokensWithLogprobs(
            tokens=[*tokens, self.stop_token], maybe_logprobs=None, stop_reason="stop"
        )


async def run_envlayer(args: argparse.Namespace) -> dict[str, Any]:
    from tinker_cookbook.rl.rollouts import do_group_rollout

    with open(args.problems) as f:
        problems = json.load(f)
    replies = json.loads(args.replies)
    tokenizer = tokenizer_utils.get_tokenizer(args.tokenizer)
    renderer = renderers.get_renderer(args.renderer, tokenizer=tokenizer)
    stop = renderer.get_stop_sequences()[0]

    async def once(items: list[dict]) -> tuple[float, list[float]]:
        policy = ScriptedTokenCompleter(tokenizer, stop, replies)
        builders = [
            ArithmeticGroupBuilder(
                renderer=renderer,
                question=p["question"],
                answer=str(p["answer"]),
                group_size=args.group_size,
            )
            for p in items
        ]
        start = time.perf_counter()
        groups = await asyncio.gather(*(do_group_rollout(b, policy) for b in builders))
        seconds = time.perf_counter() - start
        rewards = [r for g in groups for r in g.get_total_rewards()]
        return seconds, rewards

    if args.warmup_problems:
        with open(args.warmup_problems) as f:
            await once(json.load(f))  # warm-up: imports, first renders
    else:
        await once(problems[: args.warmup_groups])
    runs = []
    for _ in range(args.repeats):
        seconds, rewards = await once(problems)
        runs.append(
            {
                "seconds": seconds,
                "episodes": len(rewards),
                "mean_reward": sum(rewards) / len(rewards),
            }
        )
    prompt = renderer.build_generation_prompt(
        [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": problems[0]["question"]},
        ]
    ).to_ints()
    return {"runs": runs, "first_prompt_tokens": prompt}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("train")
    t.add_argument("--base-url", required=True)
    t.add_argument("--log-path", required=True)
    t.add_argument("--steps", type=int, default=3)
    t.add_argument("--max-tokens", type=int, default=32)
    t.add_argument("--lora-rank", type=int, default=8)
    t.add_argument("--learning-rate", type=float, default=3e-3)
    t.add_argument("--temperature", type=float, default=1.0)
    for p in (t, sub.add_parser("envlayer")):
        p.add_argument("--tokenizer", required=True, help="the tiny tokenizer's directory")
        p.add_argument("--model", default="mint-envkit/tiny-qwen3")
        p.add_argument("--problems", required=True)
        p.add_argument("--group-size", type=int, default=4)
        p.add_argument("--renderer", default="qwen3_disable_thinking")
        p.add_argument("--out", required=True)
    e = sub.choices["envlayer"]
    e.add_argument("--replies", default='["42", "The answer is 7", "seven", "12"]')
    e.add_argument("--repeats", type=int, default=1)
    e.add_argument("--warmup-groups", type=int, default=50)
    e.add_argument("--warmup-problems", default=None, help="a JSON list; else the first groups")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    register_tiny_tokenizer(args.model, args.tokenizer)
    if args.mode == "train":
        result = asyncio.run(run_train(args))
    else:
        result = asyncio.run(run_envlayer(args))
    result["process_start"] = PROCESS_START
    result["process_end"] = time.time()
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
