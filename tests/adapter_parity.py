"""Scripted episodes run through our loop and through another trainer's: the parity harness.

A *script* gives each env of a group its replies, one per turn, as text plus how the
reply ended: ``"stop"`` (the renderer's stop token appended, as a model that finishes
its turn), ``"nostop"`` (no stop token, stop reason ``stop``: a reply that lost its stop
token) or ``"length"`` (cut at the reply limit). The same token replies go to our
``rollout_group`` and to tinker-cookbook's ``do_single_rollout`` over
:func:`mint_envkit.adapters.to_cookbook`'s envs; :func:`compare` lists every difference
in observation tokens, stop conditions, per-step rewards, metrics and totals.

``benchmarks/adapter_parity.py`` prints the figures of docs/adapters.md with it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

from mint_envkit.builders.group import GroupBuilder
from mint_envkit.rollouts.run import rollout_group
from mint_envkit.rollouts.sampler import SampleRequest
from mint_envkit.rollouts.types import SampledTokens

Reply = tuple[str, str]  # (text, "stop" | "nostop" | "length")
Script = list[list[Reply]]  # env -> turns


def reply_tokens(renderer: Any, reply: Reply) -> SampledTokens:
    """The tokens of one scripted reply, as a sampler returns them."""
    text, end = reply
    tokens = list(renderer.tokenizer.encode(text, add_special_tokens=False))
    if end == "stop":
        tokens.append(renderer.get_stop_sequences()[0])
    return SampledTokens(tokens, [0.0] * len(tokens), "length" if end == "length" else "stop")


def _turn(script: Script, env: int, turn: int) -> Reply:
    turns = script[env]
    return turns[min(turn, len(turns) - 1)]


class ScriptSampler:
    """Our sampler protocol over a script (reply ``i`` of a request goes to env ``env_index + i``)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[tuple[list[int], list[Any]]] = []

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        self.requests.append((list(request.prompt), list(request.stop)))
        return [
            reply_tokens(request.renderer, _turn(self.script, request.env_index + i, request.turn))
            for i in range(request.num_samples)
        ]


def _episode(transitions: Sequence[Any], total: float, ob_of: Any) -> dict[str, Any]:
    return {
        "obs": [ob_of(t.ob) for t in transitions],
        "actions": [list(t.ac.tokens) for t in transitions],
        "rewards": [float(t.reward) for t in transitions],
        "metrics": [dict(t.metrics) for t in transitions],
        "total": float(total),
    }


async def ours(group: GroupBuilder, script: Script) -> list[dict[str, Any]]:
    """Each env's episode in our loop."""
    rollout = await rollout_group(group, ScriptSampler(script), fail_fast=True)
    return [
        _episode(t.transitions, t.total_reward, list) | {"stops": None}
        for t in rollout.trajectories
    ]


async def cookbook(group: GroupBuilder, script: Script) -> list[dict[str, Any]]:
    """Each env's episode in tinker-cookbook's rollout code over ``to_cookbook``'s envs."""
    from tinker_cookbook.completers import TokenCompleter, TokensWithLogprobs
    from tinker_cookbook.rl.rollouts import do_single_rollout

    from mint_envkit.adapters.cookbook_loop import CookbookGroup

    renderer = group.renderer()

    class EnvScript(TokenCompleter):
        def __init__(self, env: int) -> None:
            self.env, self.turn, self.stops = env, 0, []

        async def __call__(self, model_input: Any, stop: Any) -> TokensWithLogprobs:
            self.stops.append(list(stop))
            sampled = reply_tokens(renderer, _turn(script, self.env, self.turn))
            self.turn += 1
            return TokensWithLogprobs(sampled.tokens, sampled.logprobs, sampled.stop_reason)

    cb_group = CookbookGroup(group)
    envs = await cb_group.make_envs()
    policies = [EnvScript(i) for i in range(len(envs))]
    trajectories = [
        await do_single_rollout(policy, env) for policy, env in zip(policies, envs, strict=True)
    ]
    finals = await cb_group.compute_group_rewards(trajectories, envs)
    return [
        _episode(t.transitions, sum(x.reward for x in t.transitions) + final, _ints)
        | {"stops": p.stops}
        for t, (final, _), p in zip(trajectories, finals, policies, strict=True)
    ]


def _ints(model_input: Any) -> list[int]:
    return model_input.to_ints()


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    """Every difference between two runs of one group (empty when they agree exactly)."""
    found = []
    if len(a) != len(b):
        return [f"{len(a)} episodes against {len(b)}"]
    for env, (x, y) in enumerate(zip(a, b, strict=True)):
        for key in ("obs", "actions", "rewards", "metrics", "total"):
            if x[key] != y[key]:
                found.append(f"env {env}: {key} differ: {x[key]!r} != {y[key]!r}")
    return found


REPLIES: dict[str, list[Reply]] = {
    "arithmetic": [
        ("5", "stop"),
        ("7", "stop"),
        ("five", "stop"),
        ("The answer is 5", "stop"),
        ("5", "nostop"),
        ("5 5 5 5", "length"),
        ("", "stop"),
        ("-3", "stop"),
    ],
    "guess": [
        ("50", "stop"),
        ("25", "stop"),
        ("no idea", "stop"),
        ("37", "stop"),
        ("42", "stop"),
        ("43", "length"),
        ("44", "nostop"),
        ("100", "stop"),
    ],
}
"""The replies scripts are drawn from, per env kind: right, wrong, unparsed, cut off,
without a stop token, empty."""


def scripts(kind: str, group_size: int, turns: int, seed: int) -> Script:
    """A seeded script: ``group_size`` envs, each ``turns`` replies drawn from :data:`REPLIES`."""
    draw = random.Random(seed)
    pool = REPLIES[kind]
    return [[draw.choice(pool) for _ in range(turns)] for _ in range(group_size)]


async def run_parity(
    groups: Sequence[GroupBuilder], kind: str, turns: int, seed: int = 0
) -> dict[str, Any]:
    """Every group once with a seeded script in both loops: counts and the differences."""
    episodes, transitions, differences = 0, 0, []
    for index, group in zip(itertools.count(), groups, strict=False):
        script = scripts(kind, group.group_size, turns, seed + index)
        a, b = await ours(group, script), await cookbook(group, script)
        differences += [f"group {index}: {d}" for d in compare(a, b)]
        episodes += len(a)
        transitions += sum(len(e["rewards"]) for e in a)
    return {"episodes": episodes, "transitions": transitions, "differences": differences}
