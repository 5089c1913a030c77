"""Multi-turn environments: a conversation scored turn by turn.

Lifecycle of one episode (one env instance):

1. ``setup()`` runs once, before the first observation (async; open a
   sandbox, draw a secret...).
2. ``initial_observation()`` returns :meth:`MultiTurnEnv.messages`.
3. Each assistant message goes to ``respond(message)``, which returns
   :class:`Feedback`: the next user message (or None), this turn's reward,
   and whether the episode is done.
4. The episode ends when ``respond`` says ``done``, or after ``max_turns``
   assistant turns. A turn that hits ``max_turns`` without ``done`` gets
   reward ``max_turns_reward`` (default 0.0) instead of its own, and the
   metric ``max_turns_reached`` = 1.
5. ``teardown()`` runs once when the episode ends, also when ``respond``
   raises (the error is then re-raised), and when the token-level env ends
   the episode itself (reply cut at the length limit, no stop token, context
   overflow) through :meth:`MultiTurnEnv.abort`.

Example (see ``examples/guess_the_number.py``)::

    class GuessEnv(MultiTurnEnv):
        system_prompt = "Guess my number between 1 and 100. Reply with one number."
        max_turns = 7
        required_fields = ("secret",)

        def messages(self):
            return [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": "Your first guess?"}]

        async def respond(self, message):
            guess = first_number(message["content"])
            if not guess:
                return Feedback(reply="Please reply with a number.", reward=-0.1)
            value = int(float(guess.value))
            if value == self.problem["secret"]:
                return Feedback(reward=1.0, done=True, metrics={"solved": 1.0})
            return Feedback(reply="Higher." if value < self.problem["secret"] else "Lower.")
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import attrs

from mint_envkit.checks import is_number
from mint_envkit.envs.base import Message, MessageEnv, MessageStepResult
from mint_envkit.envs.problem import bind_problem
from mint_envkit.errors import ConfigError, EnvError


def _reply_message(value: Any) -> Message | list[Message] | None:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if isinstance(value, list | tuple) and value and all(isinstance(m, dict) for m in value):
        return [dict(m) for m in value]
    raise ConfigError(
        "Feedback.reply must be a string, a message dict, a non-empty list of message "
        f"dicts or None, got {value!r}"
    )


@attrs.frozen
class Feedback:
    """What a multi-turn env answers to one assistant message.

    Attributes:
        reply: the next user message (a string, or a full message dict such
            as ``{"role": "tool", "content": ...}``), or a list of messages
            (several tool results); None when done.
        reward: this turn's reward (default 0.0).
        done: True ends the episode.
        metrics, logs: as in :class:`MessageStepResult`.

    Example::

        Feedback(reply="Lower.", reward=0.0)
        Feedback(reward=1.0, done=True, metrics={"solved": 1.0})
    """

    reply: Message | list[Message] | None = attrs.field(default=None, converter=_reply_message)
    reward: float = attrs.field(default=0.0, converter=float)
    done: bool = attrs.field(default=False, converter=bool)
    metrics: dict[str, float] = attrs.field(factory=dict, converter=dict)
    logs: dict[str, Any] = attrs.field(factory=dict, converter=dict)


class MultiTurnEnv(MessageEnv):
    """An env that keeps the conversation and scores it turn by turn.

    Subclass it, implement :meth:`respond`, and set the class attributes.

    Class attributes:
        system_prompt: used by the default :meth:`messages`.
        few_shot: example messages placed between the system prompt and the
            question by the default :meth:`messages` (default none). Tool-call
            turns may be examples: an assistant message with ``tool_calls`` (and
            ``content`` a string, ``""`` allowed), then ``role: "tool"`` messages.
        max_turns: the most assistant turns in one episode (default 10).
        max_turns_reward: the reward of a turn that reaches ``max_turns``
            without finishing (default 0.0; it replaces that turn's reward).
        required_fields / optional_fields: the problem fields, as in
            :class:`SingleTurnEnv` (default: ``question`` required).

    Hooks: ``setup()``, ``messages()``, ``respond(message)`` (required),
    ``teardown()``.

    Metrics reported on the last turn: ``turns`` and ``max_turns_reached``.

    Example::

        class CountdownEnv(MultiTurnEnv):
            max_turns = 3

            async def respond(self, message):
                done = message["content"].strip() == "0"
                return Feedback(reply=None if done else "Keep counting.",
                                reward=1.0 if done else 0.0, done=done)

        env = CountdownEnv(question="Count down from 2.")
    """

    system_prompt: ClassVar[str | None] = None
    few_shot: ClassVar[list[Message]] = []
    max_turns: ClassVar[int] = 10
    max_turns_reward: ClassVar[float] = 0.0
    required_fields: ClassVar[tuple[str, ...]] = ("question",)
    optional_fields: ClassVar[dict[str, Any]] = {}

    def _out_of_turns_reward(self) -> float:
        """What a turn that reaches ``max_turns`` without finishing earns."""
        return self.max_turns_reward

    @classmethod
    def wrong_answer_reward(cls) -> float | None:
        """What an honest losing episode earns (valid wrong moves until out of turns), as
        known before playing: ``max_turns_reward``, the turns before the last taken to
        earn nothing. No episode cut off at the reply limit, or ended without the stop
        token, may earn more: an unset ``context_overflow_reward`` of the builder follows
        it when lower, a set one above it is a :class:`~mint_envkit.errors.ConfigError`.
        ``mint-envkit check`` and the audit also play the endings against an honest
        losing episode, with the rewards the turns really earn
        (:func:`~mint_envkit.rollouts.game_policies.game_ordering`).

        Example::

            class Guess(MultiTurnEnv):
                max_turns_reward = -0.5

                async def respond(self, message):
                    return Feedback(reply="Lower.")

            Guess.wrong_answer_reward()   # -0.5
        """
        value = cls.max_turns_reward
        return float(value) if is_number(value) else None

    @classmethod
    def _wrong_answer_label(cls) -> str:
        return f"{cls.__name__}.max_turns_reward (what an honest losing episode earns)"

    def unscored_metrics(self) -> dict[str, float]:
        """An episode ended before :meth:`respond` scored its reply: its
        ``success_metric`` at 0.0 (when declared), so success rates count it as lost."""
        metric = self.success_metric
        return {} if metric is None else {metric: 0.0}

    def __init__(self, **problem: Any) -> None:
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise ConfigError(
                f"{type(self).__name__}.max_turns must be a positive integer, got {self.max_turns!r}"
            )
        self.problem: dict[str, Any] = bind_problem(
            type(self).__name__, self.required_fields, self.optional_fields, problem
        )
        self.conversation: list[Message] = []
        self._prompt: list[Message] = []
        self.turns = 0
        self._started = False
        self._done = False

    async def setup(self) -> None:
        """Runs once before the first observation. Override to prepare the episode."""

    async def teardown(self) -> None:
        """Runs once when the episode ends (also after an error). Override to clean up."""

    def messages(self) -> list[Message]:
        """The opening conversation: the system prompt, ``few_shot``, then ``problem["question"]``."""
        out: list[Message] = []
        if self.system_prompt:
            out.append({"role": "system", "content": self.system_prompt})
        out.extend(dict(m) for m in self.few_shot)
        out.append({"role": "user", "content": str(self.problem.get("question", ""))})
        return out

    @abstractmethod
    async def respond(self, message: Message) -> Feedback:
        """Answer one assistant message with :class:`Feedback`."""

    async def initial_observation(self) -> list[Message]:
        """Run :meth:`setup` and return the opening conversation."""
        if self._started:
            raise EnvError(
                f"{type(self).__name__}.initial_observation was called twice; "
                "an env runs one episode. Make a new env per episode."
            )
        self._started = True
        await self.setup()
        self.conversation = [dict(m) for m in self.messages()]
        self._prompt = [dict(m) for m in self.conversation]
        return [dict(m) for m in self.conversation]

    async def abort(self) -> None:
        """End the episode from outside (the reply was cut off or the context overflowed).

        Runs :meth:`teardown` once if the episode had started and had not ended.
        The token-level env calls it when it ends an episode without stepping.
        """
        if self._started and not self._done:
            self._done = True
            await self.teardown()

    async def step(self, message: Message) -> MessageStepResult:
        """Record the reply, ask :meth:`respond`, and enforce ``max_turns``."""
        if not self._started:
            raise EnvError(f"{type(self).__name__}.step was called before initial_observation")
        if self._done:
            raise EnvError(f"{type(self).__name__}.step was called after the episode ended")
        self.turns += 1
        self.conversation.append(dict(message))
        try:
            feedback = await self.respond(message)
        except BaseException:
            self._done = True
            await self.teardown()
            raise
        reward = feedback.reward
        metrics = dict(feedback.metrics)
        done = feedback.done
        hit_limit = not done and self.turns >= self.max_turns
        if hit_limit:
            reward = self._out_of_turns_reward()
            done = True
        if feedback.reply is not None and not done:
            replies = feedback.reply if isinstance(feedback.reply, list) else [feedback.reply]
            self.conversation.extend(dict(m) for m in replies)
        if done:
            metrics["turns"] = float(self.turns)
            metrics["max_turns_reached"] = float(hit_limit)
            self._done = True
            await self.teardown()
        return MessageStepResult(
            reward=reward,
            episode_done=done,
            next_messages=[] if done else [dict(m) for m in self.conversation],
            metrics=metrics,
            logs=dict(feedback.logs),
        )
