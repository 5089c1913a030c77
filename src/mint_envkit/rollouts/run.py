"""Rolling out groups: run every env of a group to the end of its episode.

A *sampler* is any async function that answers a :class:`SampleRequest`
with ``num_samples`` replies: the training loop's samples from a model, the
:class:`~mint_envkit.ScriptedPolicy`'s returns fixed text. When a group's
envs share their first prompt (always, since :class:`GroupBuilder` checks
it), the first turn of the whole group is one request with
``num_samples=group_size``; later turns of multi-turn envs are one request
per env.

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rollouts import ScriptedPolicy

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    train, _ = await builder()
    group = train.get_batch(0)[0]
    sampler = ScriptedPolicy(["5", "7"])  # stands in for a model: env 0 says 5, env 1 says 7

    rollout = await rollout_group(group, sampler)
    assert rollout.rewards == [1.0, 0.0]  # one total reward per env
"""

from __future__ import annotations

import asyncio
import traceback as traceback_module
from collections.abc import Sequence

import attrs

from mint_envkit.builders.group import GroupBuilder
from mint_envkit.checks import check_integer
from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rendering.token_env import EnvFromMessageEnv
from mint_envkit.rollouts.sampler import Sampler, SampleRequest
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition


async def _sample(sampler: Sampler, request: SampleRequest) -> list[SampledTokens]:
    replies = list(await sampler(request))
    if len(replies) != request.num_samples:
        raise MintEnvkitError(
            f"the sampler returned {len(replies)} replies for num_samples={request.num_samples}"
        )
    return replies


async def _run_episode(
    env: EnvFromMessageEnv,
    first_ob: list[int],
    first: SampledTokens,
    sampler: Sampler,
    env_index: int,
) -> Trajectory:
    transitions: list[Transition] = []
    ob, reply = first_ob, first
    while True:
        result = await env.step(reply.tokens, extra={"stop_reason": reply.stop_reason})
        transitions.append(
            Transition(
                ob=ob,
                ac=reply,
                reward=result.reward,
                episode_done=result.episode_done,
                metrics=dict(result.metrics),
                logs=dict(result.logs),
                message=result.message,
            )
        )
        if result.episode_done:
            fill_metric_defaults(env, transitions)
            return Trajectory(transitions=transitions, messages=conversation(env, result.message))
        ob = result.next_observation.to_ints()
        request = SampleRequest(
            prompt=ob,
            stop=list(result.next_stop_condition),
            num_samples=1,
            messages=[dict(m) for m in env.messages],
            renderer=env.renderer,
            env_index=env_index,
            turn=len(transitions),
        )
        reply = (await _sample(sampler, request))[0]


def fill_metric_defaults(env: EnvFromMessageEnv, transitions: list[Transition]) -> None:
    """Add the env's ``metric_defaults`` for the metrics no step of the episode logged to its
    last transition (every loop that runs our envs ends an episode with it: this one and
    tinker-cookbook's, through :mod:`mint_envkit.adapters.cookbook`); its
    ``success_metric`` among them: 0.0, an episode that never logged it did not succeed."""
    message_env = env.message_env
    defaults = dict(message_env.metric_defaults)
    if message_env.success_metric is not None:
        defaults.setdefault(message_env.success_metric, 0.0)
    logged = {key for t in transitions for key in t.metrics}
    missing = {k: float(v) for k, v in defaults.items() if k not in logged}
    if missing:
        transitions[-1].metrics.update(missing)


def conversation(env: EnvFromMessageEnv, last: Message | None) -> list[Message]:
    """The episode's whole conversation: what the env showed last, then the final reply."""
    history = [dict(m) for m in env.messages]
    return [*history, dict(last)] if last is not None else history


async def rollout_group(
    group: GroupBuilder,
    sampler: Sampler,
    *,
    fail_fast: bool = False,
    timeout_s: float | None = None,
) -> GroupRollout:
    """Run one group to the end; an env that raises fails only its own group.

    Args:
        group: the group to run.
        sampler: answers sampling requests.
        fail_fast: re-raise the first error instead of recording it.
        timeout_s: fail the group (as a recorded ``TimeoutError``) when it has
            not finished within this many seconds. The limit is asyncio's, so
            it works in any thread (no signals); it can only interrupt an env
            at an ``await``: run CPU-heavy scoring with ``asyncio.to_thread``.

    Returns:
        A :class:`GroupRollout`; its ``error`` is set when an env (or the
        group reward) raised, and its trajectories are then empty.

    Example::

        rollout = await rollout_group(train.get_batch(0)[0], sampler)  # the module example's
        assert len(rollout.trajectories) == 2  # one per env of the group
    """
    messages: list[Message] = []
    try:
        async with asyncio.timeout(timeout_s):
            trajectories = await _rollout(group, sampler, messages)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as err:
        if isinstance(err, TimeoutError) and timeout_s is not None:
            err = TimeoutError(
                f"group of problem {group.index} did not finish within {timeout_s:g} s "
                "(Config.rollout_timeout_s)"
            )
        if fail_fast:
            raise err from None
        return GroupRollout(
            index=group.index,
            messages=messages,
            trajectories=[],
            error=f"{type(err).__name__}: {err}",
            traceback=traceback_module.format_exc(),
            tags=group.logging_tags(),
            problem=dict(group.problem),
        )
    return GroupRollout(
        index=group.index,
        messages=messages,
        trajectories=trajectories,
        tags=group.logging_tags(),
        problem=dict(group.problem),
    )


async def _rollout(
    group: GroupBuilder, sampler: Sampler, messages: list[Message]
) -> list[Trajectory]:
    """The work of :func:`rollout_group`; fills ``messages`` with the opening conversation."""
    envs = await group.make_envs()
    messages.extend(dict(m) for m in envs[0].initial_messages or [])
    observation, stop = await envs[0].initial_observation()
    for env in envs[1:]:
        await env.initial_observation()
    first_ob = observation.to_ints()
    request = SampleRequest(
        prompt=first_ob,
        stop=list(stop),
        num_samples=len(envs),
        messages=list(messages),
        renderer=envs[0].renderer,
    )
    firsts = await _sample(sampler, request)
    episodes = await asyncio.gather(
        *(
            _run_episode(env, first_ob, reply, sampler, index)
            for index, (env, reply) in enumerate(zip(envs, firsts, strict=True))
        )
    )
    trajectories = list(episodes)
    group_rewards = await group.compute_group_rewards(trajectories, envs)
    return [
        attrs.evolve(t, group_reward=float(r), group_metrics=dict(m))
        for t, (r, m) in zip(trajectories, group_rewards, strict=True)
    ]


async def rollout_groups(
    groups: Sequence[GroupBuilder],
    sampler: Sampler,
    *,
    max_concurrent: int | None = None,
    fail_fast: bool = False,
    timeout_s: float | None = None,
) -> list[GroupRollout]:
    """Run many groups at once (at most ``max_concurrent`` in flight), in order.

    ``timeout_s`` limits each group (see :func:`rollout_group`).

    Example::

        rollouts = await rollout_groups(train.get_batch(0), sampler, max_concurrent=8)
        assert [r.rewards for r in rollouts] == [[1.0, 0.0]]  # one group in the batch
    """
    check_integer(max_concurrent, "max_concurrent", none_ok=True, why="None: no limit")
    if timeout_s is not None and not timeout_s > 0:
        raise ConfigError(f"timeout_s must be > 0 or None (no limit), got {timeout_s!r}")
    limit = asyncio.Semaphore(max_concurrent or max(1, len(groups)))

    async def run(group: GroupBuilder) -> GroupRollout:
        async with limit:
            return await rollout_group(group, sampler, fail_fast=fail_fast, timeout_s=timeout_s)

    return list(await asyncio.gather(*(run(g) for g in groups)))
