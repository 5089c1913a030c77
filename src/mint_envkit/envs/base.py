"""The message-level environment interface.

A :class:`MessageEnv` talks in chat messages: it gives the opening
conversation, then scores each assistant message. It has the same shape as
tinker-cookbook's ``MessageEnv``, so an existing env drops in.

Example::

    from mint_envkit import MessageEnv, MessageStepResult

    class EchoEnv(MessageEnv):
        async def initial_observation(self):
            return [{"role": "user", "content": "Say hi."}]

        async def step(self, message):
            said_hi = "hi" in message["content"].lower()
            return MessageStepResult(reward=float(said_hi), episode_done=True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, TypeAlias

import attrs

__all__ = ["Message", "MessageEnv", "MessageStepResult", "Metrics"]

Message: TypeAlias = dict[str, Any]
"""A chat message: ``{"role": "user", "content": "..."}``.

``role`` is ``system``, ``user``, ``assistant`` or ``tool``; ``content`` is a
string. A parsed assistant reply may also carry ``"thinking"`` (the text of
its ``<think>`` block, kept apart from the content).
"""

Metrics: TypeAlias = dict[str, float]


def _copy_messages(value: Any) -> list[Message]:
    return [dict(m) for m in value]


@attrs.frozen(kw_only=False)
class MessageStepResult:
    """What an env says after one assistant message.

    Attributes:
        reward: the reward for this step.
        episode_done: True when the episode is over.
        next_messages: the whole conversation to continue from (as
            tinker-cookbook's ``MessageEnv``); empty when the episode is done.
        metrics: numbers averaged into the training logs
            (``env/all/<name>``), e.g. ``{"correct": 1.0}``.
        logs: anything worth keeping with the rollout (parse status, the
            extracted answer); saved in ``rollouts.jsonl``, not averaged.
        next_stop_condition: optional stop strings or token ids for the next
            turn (tinker-cookbook's field of the same name); None keeps the
            renderer's.

    Example::

        MessageStepResult(reward=1.0, episode_done=True, metrics={"correct": 1.0},
                          logs={"parse_status": "ok", "parsed": "5"})
    """

    reward: float = attrs.field(converter=float)
    episode_done: bool = attrs.field(converter=bool)
    next_messages: list[Message] = attrs.field(factory=list, converter=_copy_messages)
    metrics: Metrics = attrs.field(factory=dict, converter=dict)
    logs: dict[str, Any] = attrs.field(factory=dict, converter=dict)
    next_stop_condition: list[str] | list[int] | None = None


class MessageEnv(ABC):
    """An environment that speaks in chat messages. One instance, one episode.

    Implement :meth:`initial_observation` and :meth:`step`. Most users
    subclass :class:`~mint_envkit.SingleTurnEnv` or
    :class:`~mint_envkit.MultiTurnEnv` instead, which implement both.

    Example::

        class EchoEnv(MessageEnv):
            async def initial_observation(self):
                return [{"role": "user", "content": "Say hi."}]

            async def step(self, message):
                return MessageStepResult(
                    reward=float("hi" in message["content"].lower()), episode_done=True
                )
    """

    @abstractmethod
    async def initial_observation(self) -> list[Message]:
        """Return the opening conversation (the prompt), as a list of messages."""

    @abstractmethod
    async def step(self, message: Message) -> MessageStepResult:
        """Score one assistant message and say what comes next."""
