"""Rolling out groups: sampling requests, per-group errors, concurrency limits."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit import (
    Feedback,
    GroupBuilder,
    MintEnvkitError,
    MultiTurnEnv,
    ScriptedPolicy,
    SingleTurnEnv,
    first_number,
)
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts.run import rollout_group, rollout_groups
from mint_envkit.rollouts.sampler import SampleRequest
from mint_envkit.rollouts.types import SampledTokens, Trajectory, Transition


class ArithmeticEnv(SingleTurnEnv):
    parser = first_number
    reward_incorrect = -0.25


class FragileEnv(ArithmeticEnv):
    """Raises while scoring the problem whose question is "explode"."""

    def score(self, message):
        if self.question == "explode":
            raise RuntimeError("scorer crashed")
        return super().score(message)


class ThreeTurnEnv(MultiTurnEnv):
    """Always three assistant turns; the third reply is scored."""

    max_turns = 3

    async def respond(self, message):
        if self.turns == 3:
            return Feedback(reward=float(message["content"] == "3"), done=True)
        return Feedback(reply=f"Turn {self.turns + 1}.")


def group(problem=None, *, env=ArithmeticEnv, size=3, index=0) -> GroupBuilder:
    return GroupBuilder(
        problem=problem or {"question": "What is 2 + 3?", "answer": "5"},
        env=env,
        group_size=size,
        model_name=TINY_MODEL_NAME,
        index=index,
    )


class CountingSampler:
    """Wraps a scripted policy; records every request and the peak of calls in flight."""

    def __init__(self, policy: ScriptedPolicy, yields: int = 5) -> None:
        self.policy = policy
        self.yields = yields
        self.requests: list[SampleRequest] = []
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        self.requests.append(request)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            for _ in range(self.yields):
                await asyncio.sleep(0)
            return await self.policy(request)
        finally:
            self.in_flight -= 1


async def test_first_turn_of_a_group_is_one_request_with_num_samples_group_size():
    sampler = CountingSampler(ScriptedPolicy(["5", "7", "five", "5"]))
    rollout = await rollout_group(group(size=4), sampler)
    assert [r.num_samples for r in sampler.requests] == [4]
    request = sampler.requests[0]
    assert request.messages == [{"role": "user", "content": "What is 2 + 3?"}]
    assert request.prompt == request.renderer.render_tokens(request.messages)
    assert request.stop == request.renderer.get_stop_sequences()
    assert rollout.error is None
    assert rollout.rewards == [1.0, -0.25, -0.25, 1.0]
    assert rollout.messages == request.messages


async def test_later_turns_are_one_request_per_env():
    sampler = CountingSampler(ScriptedPolicy(lambda messages: str((len(messages) + 1) // 2)))
    rollout = await rollout_group(group({"question": "Count."}, env=ThreeTurnEnv, size=3), sampler)
    assert rollout.error is None
    assert [r.num_samples for r in sampler.requests] == [3] + [1] * 6
    assert [len(r.messages) for r in sampler.requests] == [1] + [3] * 3 + [5] * 3
    assert rollout.rewards == [1.0, 1.0, 1.0]
    for trajectory in rollout.trajectories:
        assert len(trajectory.transitions) == 3
        assert [t.episode_done for t in trajectory.transitions] == [False, False, True]
        # each transition's observation is the prompt its reply answered
        assert trajectory.transitions[0].ob == sampler.requests[0].prompt
        assert trajectory.transitions[2].ob == sampler.requests[-1].prompt


async def test_an_env_error_fails_only_its_group():
    groups = [
        group(env=FragileEnv, index=0),
        group({"question": "explode", "answer": "1"}, env=FragileEnv, index=1),
        group(env=FragileEnv, index=2),
    ]
    rollouts = await rollout_groups(groups, ScriptedPolicy(["5"]))
    assert [r.index for r in rollouts] == [0, 1, 2]
    assert rollouts[0].error is None and rollouts[2].error is None
    assert rollouts[0].rewards == rollouts[2].rewards == [1.0, 1.0, 1.0]
    failed = rollouts[1]
    assert failed.error == "RuntimeError: scorer crashed"
    assert "scorer crashed" in failed.traceback and "Traceback" in failed.traceback
    assert failed.trajectories == []
    assert failed.messages == [{"role": "user", "content": "explode"}]
    assert failed.tags == ["FragileEnv"]


async def test_fail_fast_reraises():
    groups = [group(env=FragileEnv), group({"question": "explode", "answer": "1"}, env=FragileEnv)]
    with pytest.raises(RuntimeError, match="scorer crashed"):
        await rollout_groups(groups, ScriptedPolicy(["5"]), fail_fast=True)


async def test_a_group_that_cannot_build_its_envs_is_recorded():
    rollout = await rollout_group(group({"question": "q"}), ScriptedPolicy(["5"]))
    assert rollout.error is not None and rollout.error.startswith("ProblemError")
    assert rollout.messages == []


async def test_a_sampler_returning_the_wrong_number_of_replies():
    async def one_reply(request):
        return (await ScriptedPolicy(["5"])(request))[:1]

    rollout = await rollout_group(group(size=2), one_reply)
    assert rollout.error is not None
    assert "returned 1 replies for num_samples=2" in rollout.error
    with pytest.raises(MintEnvkitError, match="num_samples=2"):
        await rollout_group(group(size=2), one_reply, fail_fast=True)


@pytest.mark.parametrize(("limit", "peak"), [(1, 1), (2, 2), (3, 3), (None, 6)])
async def test_max_concurrent_bounds_the_groups_in_flight(limit, peak):
    sampler = CountingSampler(ScriptedPolicy(["5"]))
    groups = [group(index=i, size=2) for i in range(6)]
    rollouts = await rollout_groups(groups, sampler, max_concurrent=limit)
    assert [r.index for r in rollouts] == list(range(6))
    assert all(r.error is None for r in rollouts)
    assert len(sampler.requests) == 6
    assert sampler.peak == peak


async def test_max_concurrent_bounds_multi_turn_groups_too():
    sampler = CountingSampler(ScriptedPolicy(lambda messages: "3"))
    groups = [group({"question": "Count."}, env=ThreeTurnEnv, size=2, index=i) for i in range(4)]
    rollouts = await rollout_groups(groups, sampler, max_concurrent=1)
    assert all(r.error is None for r in rollouts)
    # one group in flight: at most its two envs sample at once
    assert sampler.peak == 2


async def test_group_rewards_are_added_to_the_trajectories():
    class RankedGroup(GroupBuilder):
        async def compute_group_rewards(self, trajectories, envs):
            return [(0.5 * i, {"rank": float(i)}) for i in range(len(trajectories))]

    ranked = RankedGroup(
        problem={"question": "What is 2 + 3?", "answer": "5"},
        env=ArithmeticEnv,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    rollout = await rollout_group(ranked, ScriptedPolicy(["5", "7"]))
    assert rollout.rewards == [1.0, 0.25]
    assert rollout.trajectories[1].group_reward == 0.5
    assert rollout.trajectories[1].metrics["rank"] == 1.0
    assert rollout.trajectories[1].metrics["correct"] == 0.0


def test_trajectory_totals_and_metrics():
    reply = SampledTokens(tokens=[1], logprobs=None, stop_reason="stop")
    trajectory = Trajectory(
        transitions=[
            Transition(ob=[0], ac=reply, reward=0.5, episode_done=False, metrics={"a": 1.0}),
            Transition(
                ob=[0], ac=reply, reward=1.0, episode_done=True, metrics={"a": 2.0, "b": 3.0}
            ),
        ],
        group_reward=0.25,
        group_metrics={"b": 4.0},
    )
    assert trajectory.total_reward == 1.75
    assert trajectory.metrics == {"a": 2.0, "b": 4.0}


class SlowEnv(ArithmeticEnv):
    """Hangs (at an await) while scoring the problem whose question is "hang"."""

    async def step(self, message):
        if self.question == "hang":
            await asyncio.sleep(60)
        return await super().step(message)


async def _timed_out_batch() -> list:
    groups = [group({"question": "hang", "answer": "5"}, env=SlowEnv, index=0), group(index=1)]
    return await rollout_groups(groups, ScriptedPolicy(["5"]), timeout_s=0.2)


def _check_timed_out(rollouts) -> None:
    hung, fine = rollouts
    assert hung.error is not None and hung.error.startswith("TimeoutError")
    assert "did not finish within 0.2 s" in hung.error
    assert fine.error is None and fine.rewards == [1.0, 1.0, 1.0]


async def test_timeout_fails_only_the_group_that_hangs():
    _check_timed_out(await _timed_out_batch())


def test_timeout_works_off_the_main_thread():
    """No signals: the limit holds in an event loop running in a worker thread."""
    import threading

    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["rollouts"] = asyncio.run(_timed_out_batch())
        except BaseException as err:  # reported below
            box["error"] = err

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert "error" not in box, box.get("error")
    _check_timed_out(box["rollouts"])


async def test_timeout_with_fail_fast_raises():
    groups = [group({"question": "hang", "answer": "5"}, env=SlowEnv)]
    with pytest.raises(TimeoutError, match="did not finish within"):
        await rollout_groups(groups, ScriptedPolicy(["5"]), timeout_s=0.2, fail_fast=True)


@pytest.mark.parametrize(("kwargs"), [{"max_concurrent": 0}, {"timeout_s": 0}, {"timeout_s": -1.0}])
async def test_limits_must_be_positive(kwargs):
    from mint_envkit import ConfigError

    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        await rollout_groups([group()], ScriptedPolicy(["5"]), **kwargs)
