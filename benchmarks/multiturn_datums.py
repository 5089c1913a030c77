"""One datum per multi-turn episode vs one datum per turn: tokens sent and forward_backward time.

The workload: guess the number (examples/guess_the_number.py) capped at 6
turns, played by a policy that always guesses 50 on secrets it never finds,
so every episode is exactly 6 turns; ``--groups`` groups of ``--group-size``
episodes through the real qwen3 renderer and the tiny tokenizer. The same
samples are turned into datums two ways:

- merged (what the training loop sends): each episode is ONE datum, the
  sampled tokens carry the advantage, the env's tokens zero
  (:func:`mint_envkit.rl.datums.to_datums`);
- per turn (the old way): one datum per reply, each with the whole prompt
  up to that turn (O(T^2) tokens).

Then one ``forward_backward`` (importance_sampling) per layout on the
embedded backend (LoRA rank 8), alternated, ``--runs`` times each. Prints a
table and writes ``benchmarks/results/multiturn_datums.json``.

Run::

    nice -n 5 python benchmarks/multiturn_datums.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

import attrs
from _common import DEFAULT_MODEL, EXAMPLES, machine_info, median, table, write_result

from mint_envkit import ScriptedPolicy
from mint_envkit.rl.datums import datum_metrics, plan_datums, to_datums, training_samples
from mint_envkit.rollouts import local_api_key, rollout_groups

TURNS = 6


def _samples(groups: int, group_size: int):
    sys.path.insert(0, str(EXAMPLES))
    import guess_the_number as example

    class SixTurns(example.GuessTheNumberEnv):
        max_turns = TURNS

    problems = [{"secret": 1 + i % 49} for i in range(groups)]  # never 50: never found
    builder = attrs.evolve(example.make_builder(problems), env=SixTurns, group_size=group_size)
    return builder, example


async def _rollouts(groups: int, group_size: int):
    builder, example = _samples(groups, group_size)
    train, _ = await builder()
    rollouts = await rollout_groups(train.get_batch(0), ScriptedPolicy(example.constant_policy))
    turns = {len(t.transitions) for r in rollouts for t in r.trajectories}
    if turns != {TURNS}:
        raise SystemExit(f"expected {TURNS} turns per episode, got {sorted(turns)}")
    spread = [1.0 - 2 * (m % 2) for m in range(group_size)]  # mixed advantages
    return training_samples(rollouts, {i: spread for i in range(len(rollouts))})


async def _time_forward_backward(training, data) -> float:
    start = time.perf_counter()
    future = await training.forward_backward_async(data, "importance_sampling")
    await future
    return time.perf_counter() - start


async def main(args: argparse.Namespace) -> None:
    import mint

    from mint_envkit.local.server import LocalServer

    samples = await _rollouts(args.groups, args.group_size)
    alone = [attrs.evolve(s, episode=None) for s in samples]
    layouts = {
        "merged": to_datums(samples, [s.token_advantages() for s in samples]),
        "per turn": to_datums(alone, [s.token_advantages() for s in alone]),
    }
    stats = {
        "merged": datum_metrics(samples, plan_datums(samples)),
        "per turn": datum_metrics(alone, plan_datums(alone)),
    }
    times: dict[str, list[float]] = {name: [] for name in layouts}
    with LocalServer(models=[args.model], num_threads=args.threads) as server:
        service = await asyncio.to_thread(
            mint.ServiceClient, base_url=server.base_url, api_key=local_api_key()
        )
        training = await service.create_lora_training_client_async(base_model=args.model, rank=8)
        for data in layouts.values():  # warm-up, untimed
            await _time_forward_backward(training, data)
        for _ in range(args.runs):
            for name, data in layouts.items():
                times[name].append(await _time_forward_backward(training, data))
    rows = []
    for name in layouts:
        rows.append(
            [
                name,
                stats[name]["train/datums"],
                stats[name]["train/datum_tokens"],
                median(times[name]),
            ]
        )
    tokens_ratio = stats["merged"]["train/datum_tokens"] / stats["per turn"]["train/datum_tokens"]
    time_ratio = median(times["merged"]) / median(times["per turn"])
    print(f"{args.groups} groups x {args.group_size} episodes x {TURNS} turns, model {args.model}")
    print(table(["layout", "datums", "tokens", "forward_backward s (median)"], rows, 3))
    print(f"merged / per turn: tokens {tokens_ratio:.3f}, time {time_ratio:.3f}")
    path = write_result(
        "multiturn_datums",
        {
            "args": vars(args),
            "stats": stats,
            "times": times,
            "tokens_ratio": tokens_ratio,
            "time_ratio": time_ratio,
            "machine": machine_info(),
        },
        args.out,
    )
    print(f"wrote {path}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default=None)
    return parser


if __name__ == "__main__":
    asyncio.run(main(_parser().parse_args()))
