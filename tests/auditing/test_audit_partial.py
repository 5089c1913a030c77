"""Issue 48 item 5: partial credit judged on reward. Trivial policies and probes are also
judged by the reward they earn as a share of the correct reply's; a trivial reply earning
at least half of it on most problems is flagged, with the reply shown."""

from __future__ import annotations

import json

from mint_envkit import DatasetBuilder, SingleTurnEnv, component
from mint_envkit.auditing import audit

PEOPLE = [("Ann", 31), ("Bob", 45), ("Cid", 27), ("Dee", 52), ("Eve", 38), ("Fay", 61)]
PROBLEMS = [
    {"question": f"Extract the name and age as JSON: {name} is {age} years old.",
     "answer": {"name": name, "age": age}}
    for name, age in PEOPLE
]  # fmt: skip


def _read(completion: str) -> dict | None:
    try:
        value = json.loads(completion)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def keys_then_values(completion: str, answer: dict) -> float:
    """0.5 for the right keys, 0.5 more for the right values: a constant reply with the
    right keys and wrong values earns half on every problem (the planted fault)."""
    value = _read(completion)
    if value is None:
        return 0.0
    keys = 0.5 * (set(value) == set(answer))
    return keys + 0.5 * (value == answer)


def keys_only_with_values(completion: str, answer: dict) -> float:
    """The clean twin: the keys earn 0.1, the values 0.9."""
    value = _read(completion)
    if value is None:
        return 0.0
    return 0.1 * (set(value) == set(answer)) + 0.9 * (value == answer)


class HalfPaysEnv(SingleTurnEnv):
    system_prompt = "Reply with JSON only."
    reward_fn = component(keys_then_values, bounds=(0.0, 1.0))


class CleanEnv(SingleTurnEnv):
    system_prompt = "Reply with JSON only."
    reward_fn = component(keys_only_with_values, bounds=(0.0, 1.0))


def _builder(env):
    return DatasetBuilder(
        env=env,
        problems=PROBLEMS,
        batch_size=6,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )


async def test_a_constant_reply_paid_half_is_flagged_with_the_reply():
    """The trap: the probe table showed 0.5 of 1.0 for a constant reply, nothing flagged."""
    report = await audit(_builder(HalfPaysEnv), search=0, quiet=True)
    partial = [f for f in report.findings if f.kind == "partial_credit"]
    assert len(partial) == 1 and not report.ok, report.table()
    message = partial[0].message
    assert message.startswith("the trivial policy constant '{")
    assert "earns 50% of a correct reply's reward on 5 of 6 problems" in message
    assert '"name": "' in message and '"age": ' in message  # the reply is shown
    assert any(name.startswith("constant ") for name in partial[0].covers)  # a policy
    assert "most_common" in partial[0].covers  # and a probe
    rows = {p.name: p for p in report.probes}
    assert rows["most_common"].mean_share == 0.5
    assert rows["correct"].mean_share is None  # right: no partial credit to take


async def test_a_reward_that_pays_little_without_the_answer_is_not_flagged():
    report = await audit(_builder(CleanEnv), search=0, quiet=True)
    assert not [f for f in report.findings if f.kind == "partial_credit"], report.table()
    assert {p.name: p for p in report.probes}["most_common"].mean_share == 0.1
