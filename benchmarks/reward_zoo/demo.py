"""Show that each zoo bug is real: a case's demo reply, scored through the env's real path
(rendered, parsed, stepped, scored: :class:`~mint_envkit.ScriptedPolicy`) on every problem
of the buggy env and of its clean twin.

Example::

    from reward_zoo.zoo import load_all
    from reward_zoo.demo import demo_rewards

    buggy, clean = demo_rewards(load_all()["nan_tolerance"])   # (1.0, 0.0): 'nan' is paid
"""

from __future__ import annotations

import asyncio
import warnings

import attrs

from mint_envkit import ScriptedPolicy

from .zoo import ZooCase


async def _mean_reward(case: ZooCase, buggy: bool, limit: int | None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = case.build(buggy=buggy)
    train, _test = await builder()
    rewards: list[float] = []
    groups = [group for index in range(len(train)) for group in train.get_batch(index)]
    for group in groups[:limit]:
        reply = case.demo.reply(dict(group.problem))
        policy = ScriptedPolicy([reply], end_with_stop=case.demo.stop)
        report = await policy.run_group(attrs.evolve(group, group_size=1))
        if report.error:
            raise RuntimeError(f"{case.name} demo failed on {group.problem}: {report.error}")
        rewards.append(report.rewards[0])
    return sum(rewards) / len(rewards)


async def demo_rewards_async(case: ZooCase, limit: int | None = None) -> tuple[float, float]:
    """The demo reply's mean reward on the buggy env and on its clean twin (on the first
    ``limit`` problems; all without)."""
    return await _mean_reward(case, True, limit), await _mean_reward(case, False, limit)


def demo_rewards(case: ZooCase) -> tuple[float, float]:
    """:func:`demo_rewards_async` from synchronous code."""
    return asyncio.run(demo_rewards_async(case))


def shows_bug(case: ZooCase, buggy: float, clean: float) -> bool:
    """Whether the demo's rewards show the bug in the direction the case says."""
    return buggy > clean if case.demo.direction == "more" else buggy < clean
