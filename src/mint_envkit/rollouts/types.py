"""Rollout data: what one episode and one group produced.

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rollouts import ScriptedPolicy
    from mint_envkit.rollouts.run import rollout_group

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    train, _ = await builder()
    group = train.get_batch(0)[0]
    sampler = ScriptedPolicy(["5", "7"])  # stands in for a model: env 0 says 5, env 1 says 7

    rollout = await rollout_group(group, sampler)
    for trajectory in rollout.trajectories:
        print(trajectory.total_reward, trajectory.transitions[-1].metrics)  # 1.0 {'correct': 1.0, ...}
    assert [t.total_reward for t in rollout.trajectories] == [1.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import attrs

from mint_envkit.envs.base import Message


@attrs.frozen
class SampledTokens:
    """One sampled reply: tokens, their logprobs (None when scripted), why it stopped.

    Example::

        SampledTokens(tokens=[20, 2045], logprobs=[-1.2, -0.3], stop_reason="stop")
    """

    tokens: list[int]
    logprobs: list[float] | None
    stop_reason: str


@attrs.frozen
class Transition:
    """One step of an episode: the prompt tokens, the reply, its reward.

    Attributes:
        ob: prompt tokens the reply answered.
        ac: the sampled reply.
        reward: the step reward.
        episode_done: True on the last step.
        metrics, logs: from the env's step.
        message: the parsed assistant message (None if it could not be parsed).

    Example::

        step = Transition(ob=[2044, 10], ac=SampledTokens([20, 2045], [-1.2, -0.3], "stop"),
                          reward=1.0, episode_done=True, metrics={"correct": 1.0})
        assert step.ac.tokens == [20, 2045]
    """

    ob: list[int]
    ac: SampledTokens
    reward: float
    episode_done: bool
    metrics: dict[str, float] = attrs.field(factory=dict)
    logs: dict[str, Any] = attrs.field(factory=dict)
    message: Message | None = None


@attrs.frozen
class Trajectory:
    """One episode: its transitions and its total reward (step rewards + group reward).

    ``messages`` is the whole conversation of the episode, in order: the
    opening messages, each assistant reply (with ``tool_calls`` and
    ``thinking`` when it had them), and every message the env added (user
    feedback, ``tool`` results and tool errors); empty when not recorded.

    Example::

        reply = SampledTokens([20, 2045], None, "stop")
        episode = Trajectory([Transition([2044], reply, 0.5, False, {"turns": 1.0}),
                              Transition([2044], reply, 0.25, True, {"turns": 2.0})],
                             group_reward=0.25)
        assert episode.total_reward == 1.0 and episode.metrics == {"turns": 2.0}
    """

    transitions: list[Transition]
    group_reward: float = 0.0
    group_metrics: dict[str, float] = attrs.field(factory=dict)
    messages: list[Message] = attrs.field(factory=list)

    @property
    def total_reward(self) -> float:
        """Sum of step rewards plus the group reward."""
        return sum(t.reward for t in self.transitions) + self.group_reward

    @property
    def metrics(self) -> dict[str, float]:
        """The episode's metrics: every step's, later steps winning, plus group metrics."""
        out: dict[str, float] = {}
        for transition in self.transitions:
            out.update(transition.metrics)
        out.update(self.group_metrics)
        return out


@attrs.frozen
class GroupRollout:
    """What one group produced, or why it failed.

    Attributes:
        index: the problem's index.
        messages: the group's opening conversation.
        trajectories: one per env (empty when ``error`` is set).
        error: None, or ``"ExceptionType: message"`` of the env that raised.
        traceback: the formatted traceback when ``error`` is set.
        tags: the group's logging tags.
        problem: the problem's fields (what the envs were made from; a multi-turn
            env's secret is here and in no message).

    Example::

        reply = SampledTokens([20, 2045], None, "stop")
        group = GroupRollout(index=0, messages=[{"role": "user", "content": "2+3?"}],
                             trajectories=[Trajectory([Transition([2044], reply, r, True)])
                                           for r in (1.0, 0.0)])
        assert group.rewards == [1.0, 0.0] and group.error is None
    """

    index: int
    messages: list[Message]
    trajectories: list[Trajectory]
    error: str | None = None
    traceback: str | None = None
    tags: list[str] = attrs.field(factory=list)
    problem: dict[str, Any] = attrs.field(factory=dict)

    @property
    def rewards(self) -> list[float]:
        """Each trajectory's total reward."""
        return [t.total_reward for t in self.trajectories]
