"""Scripted episodes scored by verifiers' own rollout and by from_verifiers: the parity harness.

The same replies go twice through a verifiers env: through verifiers' own
``Environment.run_rollout`` (a scripted verifiers client in place of a model; its rubric
scores the state) and through :func:`mint_envkit.adapters.from_verifiers`'s builder
(``ScriptedPolicy``: rendered, tokenized, parsed, stepped, scored by the adapted rubric).
:func:`mismatches` lists the episodes whose rewards differ.

``tests/adapters/test_verifiers.py`` checks it; ``benchmarks/verifiers_parity.py`` prints the
figures of docs/adapters.md with it. The envs are ``tests/adapters/vf_envs/`` (on
``sys.path``, as an installed env package would be).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import zlib
from typing import Any

from mint_envkit.adapters import from_verifiers
from mint_envkit.adapters.verifiers_episode import to_ours
from mint_envkit.rollouts import ScriptedPolicy


def math_reply(messages: list[dict[str, Any]]) -> str:
    """A varied, deterministic reply to "What is a + b?": right, wrong, untagged, long..."""
    question = messages[-1]["content"]
    a, b = question.removeprefix("What is ").removesuffix("?").split(" + ")
    right, kind = int(a) + int(b), zlib.crc32(question.encode()) % 7
    return [
        f"<answer>{right}</answer>",
        f"<answer>{right + 1}</answer>",
        f"{right}",
        f"Let me add {a} and {b} carefully, one digit at a time. <answer>{right}</answer>",
        "",
        f"<answer> {right} </answer>",
        "<answer></answer>",
    ][kind]


def guess_reply(messages: list[dict[str, Any]]) -> str:
    """A guessing policy that reads the feedback, with untagged guesses now and then."""
    salt = zlib.crc32("|".join(m["content"] for m in messages).encode())
    if salt % 5 == 0:
        return "I think it is 4"
    low, high = 1, 10
    for said, feedback in itertools.pairwise(messages):
        if said["role"] != "assistant" or not said["content"].startswith("<guess>"):
            continue
        guess = int(said["content"][7:-8])
        if feedback["content"] == "Higher.":
            low = max(low, guess + 1)
        elif feedback["content"] == "Lower.":
            high = min(high, guess - 1)
    return f"<guess>{low + salt % max(1, high - low + 1)}</guess>"


def scripted_client(policy: Any) -> Any:
    """A verifiers client that answers with ``policy(messages)`` instead of a model."""
    from verifiers.legacy.clients.client import Client
    from verifiers.legacy.types import Response, ResponseMessage

    class Scripted(Client):
        def __init__(self) -> None:
            super().__init__(None)

        def setup_client(self, config: Any) -> None:
            return None

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
            return messages, {}

        async def get_native_response(self, prompt: Any, *args: Any, **kwargs: Any) -> str:
            return policy(to_ours(prompt))

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, text: str) -> Any:
            message = ResponseMessage(content=text, finish_reason="stop", is_truncated=False)
            return Response(id="scripted", created=0, model="scripted", message=message)

        async def close(self) -> None:
            return None

    return Scripted()


def verifiers_rewards(vf_env: Any, policy: Any) -> list[float]:
    """Each training row's reward by verifiers' own rollout and rubric."""

    async def run() -> list[float]:
        client = scripted_client(policy)
        rows = list(vf_env.get_dataset())
        outputs = [await vf_env.run_rollout(row, client, "scripted", {}) for row in rows]
        return [output["reward"] for output in outputs]

    return asyncio.run(run())


def our_rewards(builder: Any, policy: Any) -> list[float]:
    """Each problem's reward through our path (groups of one, in the dataset's order)."""
    report = ScriptedPolicy(policy).run_sync(builder)
    by_index = {group.index: group.rewards for group in report.groups}
    assert all(len(rewards) == 1 for rewards in by_index.values())
    return [by_index[i][0] for i in range(len(by_index))]


def mismatches(ours: list[float], theirs: list[float], tolerance: float = 1e-9) -> list[int]:
    """The episodes whose rewards differ by more than ``tolerance``."""
    assert len(ours) == len(theirs)
    pairs = enumerate(zip(ours, theirs, strict=True))
    return [i for i, (a, b) in pairs if not math.isclose(a, b, abs_tol=tolerance)]


def parity_builder(env_id: str, **env_args: Any) -> Any:
    """The env's builder for parity: one group of one env per row, in the dataset's order."""
    import verifiers as vf

    n = len(list(vf.load_environment(env_id, **env_args).get_dataset()))
    return from_verifiers(
        env_id, env_args=env_args, batch_size=n, group_size=1, shuffle=False, drop_last=False
    )


def parity(env_id: str, policy: Any, **env_args: Any) -> tuple[list[float], list[float]]:
    """Every training row's reward: ours and verifiers' (the same scripted replies)."""
    import verifiers as vf

    theirs = verifiers_rewards(vf.load_environment(env_id, **env_args), policy)
    return our_rewards(parity_builder(env_id, **env_args), policy), theirs
