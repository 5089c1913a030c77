"""The adapters' parity figures of docs/adapters.md: the same replies, the same scores.

- ``cookbook``: seeded scripted replies (right, wrong, unparsed, cut off, without a stop
  token, empty) through our ``rollout_group`` and through tinker-cookbook 0.3.0's
  ``do_single_rollout`` over ``to_cookbook``'s envs (the harness is
  ``tests/adapter_parity.py``): the arithmetic env (one reply) and guess-the-number
  (up to 7 turns); every observation token, action, per-step reward, metric and total
  compared.
- ``trl``: the same single-reply scripts (a reply without its stop token is a cut one in
  TRL, whose generation stops only at the end-of-turn token or the length limit) through
  ``to_trl``'s environments (``reset``, ``mint_envkit_reply``, ``get_reward``) against our loop.
- ``door``: greedy evaluation of the arithmetic env through ``mint-envkit serve``'s
  OpenAI-compatible door (``OpenAIEndpoint``) and through the SDK, on SmolLM2-135M-Instruct
  (``--door-model``; the random tiny model's greedy reply is its end-of-turn token): the
  replies and rewards compared.

Example (shell)::

    .venv/bin/python benchmarks/adapter_parity.py --seeds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "examples")]

from guess_the_number import GuessTheNumberEnv  # noqa: E402

from adapter_parity import ScriptSampler, reply_tokens, run_parity, scripts  # noqa: E402
from mint_envkit import DatasetBuilder, evaluate  # noqa: E402
from mint_envkit.adapters import to_trl  # noqa: E402
from mint_envkit.rendering import TINY_MODEL_NAME  # noqa: E402
from mint_envkit.rollouts import BackendSettings, OpenAIEndpoint, SamplingSettings  # noqa: E402
from shared_envs import ArithmeticEnv  # noqa: E402

ARITHMETIC = [
    {"question": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(10) for b in range(5)
]
SECRETS = [{"secret": s} for s in range(3, 100, 4)]


def _builder(env, problems, group_size):
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=len(problems),
        group_size=group_size,
        model_name=TINY_MODEL_NAME,
        max_generation_tokens=8,
    )


async def _groups(builder):
    train, _ = await builder()
    return [g for i in range(len(train)) for g in train.get_batch(i)]


async def cookbook(seeds: int) -> dict:
    out = {}
    for name, env, problems, kind, turns in (
        ("arithmetic", ArithmeticEnv, ARITHMETIC, "arithmetic", 1),
        ("guess_the_number", GuessTheNumberEnv, SECRETS, "guess", 8),
    ):
        groups = await _groups(_builder(env, problems, 8))
        runs = [await run_parity(groups, kind, turns, seed=1000 * s) for s in range(seeds)]
        out[name] = {
            "episodes": sum(r["episodes"] for r in runs),
            "transitions": sum(r["transitions"] for r in runs),
            "differences": sum(len(r["differences"]) for r in runs),
        }
    return out


async def trl(seeds: int) -> dict:
    from mint_envkit.adapters.trl import mint_envkit_reply
    from mint_envkit.rollouts.run import rollout_group

    spec = to_trl(_builder(ArithmeticEnv, ARITHMETIC, 8))
    episodes, differences, largest = 0, 0, 0.0
    for seed in range(seeds):
        for index, group in enumerate(spec.groups):
            script = [
                [r if r[1] != "nostop" else (r[0], "length") for r in env]
                for env in scripts("arithmetic", group.group_size, 1, 1000 * seed + index)
            ]
            ours = (await rollout_group(group, ScriptSampler(script), fail_fast=True)).rewards
            renderer = group.renderer()
            envs = [spec.environment_factory() for _ in script]
            for env in envs:
                env.reset(**spec.train_dataset[index])
            mint_envkit_reply(
                completion_ids=[reply_tokens(renderer, s[0]).tokens for s in script],
                environments=envs,
            )
            theirs = [env.get_reward() for env in envs]
            episodes += len(theirs)
            differences += sum(a != b for a, b in zip(ours, theirs, strict=True))
            largest = max([largest, *(abs(a - b) for a, b in zip(ours, theirs, strict=True))])
    return {"episodes": episodes, "differences": differences, "max_abs_difference": largest}


async def door(model: str, problems: int, samples: int) -> dict:
    from mint_envkit.local.server import LocalServer

    chosen = ARITHMETIC[:problems]
    greedy = SamplingSettings(temperature=1e-3, max_tokens=8)
    with (
        tempfile.TemporaryDirectory() as state,
        LocalServer(models=[model], state_dir=state) as server,
    ):
        common = {
            "problems": chosen,
            "model_name": model,
            "samples": samples,
            "sampling": greedy,
            "quiet": True,
        }
        endpoint = OpenAIEndpoint(base_url=server.base_url + "/v1", model=model)
        t0 = time.monotonic()
        through_door = await evaluate(ArithmeticEnv, client=endpoint, **common)
        seconds_door = time.monotonic() - t0
        t0 = time.monotonic()
        through_sdk = await evaluate(
            ArithmeticEnv,
            backend=BackendSettings(backend="local", base_url=server.base_url),
            **{k: v for k, v in common.items() if k != "quiet"},
        )
        seconds_sdk = time.monotonic() - t0

    def replies(result):
        return [t.messages[-1]["content"] for r in result.rollouts for t in r.trajectories]

    def rewards(result):
        return [x for r in result.rollouts for x in r.rewards]

    return {
        "episodes": len(rewards(through_door)),
        "same_replies": sum(
            a == b for a, b in zip(replies(through_door), replies(through_sdk), strict=True)
        ),
        "same_rewards": sum(
            a == b for a, b in zip(rewards(through_door), rewards(through_sdk), strict=True)
        ),
        "usage": through_door.summary["usage"],
        "seconds_door": round(seconds_door, 2),
        "seconds_sdk": round(seconds_sdk, 2),
    }


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="scripts per group")
    parser.add_argument("--door-model", default="mint-envkit/smollm2-135m-instruct")
    parser.add_argument("--door-problems", type=int, default=20)
    parser.add_argument("--door-samples", type=int, default=2)
    args = parser.parse_args(argv)
    figures = {
        "cookbook": await cookbook(args.seeds),
        "trl": await trl(args.seeds),
        "door": await door(args.door_model, args.door_problems, args.door_samples),
    }
    print(json.dumps(figures, indent=2))
    out = ROOT / "benchmarks" / "results" / "adapter_parity.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
