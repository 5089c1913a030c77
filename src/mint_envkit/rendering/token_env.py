"""The token-level env the training loop runs: a message env behind a renderer.

:class:`EnvFromMessageEnv` turns a :class:`~mint_envkit.MessageEnv` into the
token-level interface of tinker-cookbook's ``Env`` (``initial_observation``
and ``step(tokens, *, extra)`` returning :class:`StepResult`), so cookbook
code can drive these envs and our loop can drive cookbook-shaped ones.

Multi-turn episodes are token-faithful: the next observation is the previous
observation, the exact sampled tokens, and the new messages rendered by
:meth:`Renderer.render_continuation <mint_envkit.Renderer.render_continuation>`.
Earlier turns are never rendered again, so every observation extends the one
before it token for token (a chat template that rewrites earlier turns, as
Qwen3's drops their ``<think>`` blocks, cannot change what the model saw).

Example::

    # not run: `renderer` is a Renderer, built elsewhere
    env = EnvFromMessageEnv(renderer, ArithmeticEnv(question="2 + 3?", answer="5"))
    observation, stop = await env.initial_observation()
    result = await env.step(sampled_tokens, extra={"stop_reason": "stop"})
    result.reward, result.metrics
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from mint_envkit.envs.base import Message, MessageEnv, require_message_env
from mint_envkit.envs.multi_turn import MultiTurnEnv
from mint_envkit.envs.ordering import non_answer_rewards
from mint_envkit.errors import EnvError, RendererError

if TYPE_CHECKING:
    import tinker

    from mint_envkit.rendering.renderer import Renderer

StopCondition = list[str] | list[int]


@attrs.frozen
class StepResult:
    """The result of one token-level step (tinker-cookbook's ``StepResult`` shape).

    Attributes:
        reward: this step's reward.
        episode_done: True when the episode is over.
        next_observation: the prompt for the next turn (empty when done).
        next_stop_condition: stop tokens or strings for the next turn.
        metrics: numbers averaged into the training logs.
        logs: per-rollout details kept in ``rollouts.jsonl``.
        message: the parsed assistant message of this step (None when the
            reply could not be parsed), for inspection.

    Example::

        # not run: `env` is an env instance, built elsewhere
        result = await env.step(tokens, extra={"stop_reason": "stop"})
        if result.episode_done:
            print(result.reward, result.metrics)
    """

    reward: float
    episode_done: bool
    next_observation: Any
    next_stop_condition: StopCondition
    metrics: dict[str, float] = attrs.field(factory=dict)
    logs: dict[str, Any] = attrs.field(factory=dict)
    message: Message | None = None


def _empty_input() -> tinker.ModelInput:
    import tinker

    return tinker.ModelInput.empty()


class EnvFromMessageEnv:
    """Runs a message env through a renderer, at the token level.

    Args:
        renderer: turns messages into tokens and sampled tokens into messages.
        message_env: the env to run (one episode).
        max_trajectory_tokens: the context limit; a conversation whose next
            prompt plus ``max_generation_tokens`` exceeds it ends with
            ``context_overflow_reward`` and the metric ``context_overflow``.
        max_generation_tokens: tokens reserved for each reply.
        failed_parse_reward: the reward when the reply ended without the
            stop token (metric ``parse_error``); the episode ends.
        context_overflow_reward: the reward when the reply hit the length
            limit (metric ``truncated``) or the context overflowed.
            Neither may exceed the env's wrong-answer reward (a
            :class:`~mint_envkit.errors.ConfigError`); unset (None), they are
            -1.0 / -0.1, or that reward when it is lower.
        score_truncated: when True, a reply that hit the length limit is
            still parsed and scored by the env (the ``truncated`` metric is
            reported either way).

    A multi-turn env's next observation is the previous one + the sampled
    tokens (plus the stop token when the reply lacks it) + the new messages of
    ``next_messages`` rendered on their own, so each observation extends the
    one before. ``next_messages`` must therefore extend the conversation (the
    earlier messages unchanged, then the assistant message, then the new ones);
    an env that rewrites history gets an :class:`EnvError`. The env's
    ``tool_specs()`` (:class:`~mint_envkit.ToolEnv` lists its tools; None for
    other envs) go into the prompt through the chat template's ``tools=``.

    ``message_env`` must be a :class:`~mint_envkit.MessageEnv` (a
    :class:`~mint_envkit.errors.ConfigError` otherwise), whose optional hooks
    are declared with defaults. When an episode ends without the env scoring it,
    the env's ``abort()`` is awaited, so a multi-turn env's teardown still runs,
    and its ``unscored_metrics()`` fill its metrics, so rates such as ``correct``
    count the cut-off episode as 0 instead of skipping it.

    Example::

        # not run: `tok` is a tokenizer and `MyEnv` your env, built elsewhere
        from mint_envkit import get_renderer

        env = EnvFromMessageEnv(get_renderer("qwen3", tok), MyEnv(question="...", answer="..."))
        observation, stop = await env.initial_observation()
    """

    def __init__(
        self,
        renderer: Renderer,
        message_env: MessageEnv,
        max_trajectory_tokens: int | None = None,
        max_generation_tokens: int | None = None,
        failed_parse_reward: float | None = None,
        context_overflow_reward: float | None = None,
        score_truncated: bool = False,
    ) -> None:
        self.renderer = renderer
        self.message_env = require_message_env(
            message_env, f"{type(self).__name__}(message_env=...)"
        )
        self.max_trajectory_tokens = max_trajectory_tokens
        self.max_generation_tokens = max_generation_tokens
        rewards = non_answer_rewards(
            message_env,
            type(self).__name__,
            failed_parse_reward=failed_parse_reward,
            context_overflow_reward=context_overflow_reward,
        )
        self.failed_parse_reward = rewards["failed_parse_reward"]
        self.context_overflow_reward = rewards["context_overflow_reward"]
        self.score_truncated = score_truncated
        self._stop = renderer.get_stop_sequences()
        specs = message_env.tool_specs()
        self.tools: list[dict[str, Any]] | None = None if specs is None else list(specs)
        if isinstance(message_env, MultiTurnEnv) and not renderer.supports_continuation:
            raise RendererError(
                f"{type(message_env).__name__} is multi-turn, but renderer {renderer.name!r} "
                f"cannot render new messages after a sampled turn: "
                f"{renderer.continuation_error()}"
            )
        self.observation: list[int] | None = None
        """The latest observation's tokens (each one extends the previous)."""
        self.initial_messages: list[Message] | None = None
        self.initial_tokens: list[int] | None = None
        self.messages: list[Message] = []
        """The conversation the next reply answers (for policies that read messages)."""

    def _exceeds(self, length: int) -> bool:
        if self.max_trajectory_tokens is None:
            return False
        return length + (self.max_generation_tokens or 0) > self.max_trajectory_tokens

    async def _abort(self) -> None:
        await self.message_env.abort()

    def _unscored_metrics(self) -> dict[str, float]:
        return dict(self.message_env.unscored_metrics())

    async def initial_messages_async(self) -> list[Message]:
        """The message env's opening conversation (fetched once, then reused)."""
        if self.initial_messages is None:
            self.initial_messages = await self.message_env.initial_observation()
            self.messages = [dict(m) for m in self.initial_messages]
            specs = self.message_env.tool_specs()  # again: a ToolEnv lists MCP tools at its start
            self.tools = None if specs is None else list(specs)
        return self.initial_messages

    async def initial_observation(self) -> tuple[tinker.ModelInput, StopCondition]:
        """Render the opening conversation; return it with the stop tokens.

        Raises:
            EnvError: the prompt alone leaves no room for a reply within
                ``max_trajectory_tokens``.
        """
        import tinker

        messages = await self.initial_messages_async()
        tokens = self.renderer.render_tokens(messages, self.tools)
        if self._exceeds(len(tokens)):
            raise EnvError(
                f"the prompt has {len(tokens)} tokens; with max_generation_tokens="
                f"{self.max_generation_tokens} it exceeds max_trajectory_tokens="
                f"{self.max_trajectory_tokens}. Shorten the prompt or raise the limit."
            )
        self.initial_tokens = tokens
        self.observation = list(tokens)
        return tinker.ModelInput.from_ints(tokens), list(self._stop)

    def _new_messages(self, next_messages: list[Message]) -> list[Message]:
        """The messages after the assistant turn, checking the history is unchanged."""
        history = self.messages
        n = len(history)
        if (
            len(next_messages) <= n
            or next_messages[:n] != history
            or next_messages[n].get("role") != "assistant"
        ):
            raise EnvError(
                f"{type(self.message_env).__name__}.step returned next_messages that do not "
                f"extend the conversation ({n} earlier messages, then the assistant reply, "
                "then the new messages); the token-level env never renders earlier turns "
                "again, so an env must not change or drop them"
            )
        return [dict(m) for m in next_messages[n + 1 :]]

    def _next_tokens(self, action: list[int], new_messages: list[Message]) -> list[int]:
        if self.observation is None:  # stepped after initial_messages_async() alone
            if self.initial_messages is None:
                raise EnvError("EnvFromMessageEnv.step was called before initial_observation")
            self.observation = self.renderer.render_tokens(self.initial_messages, self.tools)
        if not self.renderer.supports_continuation:
            raise RendererError(
                f"{type(self.message_env).__name__} continued its episode, but renderer "
                f"{self.renderer.name!r} cannot render new messages after a sampled turn: "
                f"{self.renderer.continuation_error()}"
            )
        sampled = list(action)
        if not sampled or sampled[-1] not in self._stop:
            sampled.append(self._stop[0])
        continuation = self.renderer.render_continuation(new_messages, self.tools)
        return [*self.observation, *sampled, *continuation]

    async def step(self, action: list[int], *, extra: dict[str, Any] | None = None) -> StepResult:
        """Parse the sampled tokens, let the env score them, render what comes next.

        ``extra["stop_reason"]`` is ``"stop"`` or ``"length"`` (the sampler's).
        """
        truncated = (extra or {}).get("stop_reason") == "length"
        message, ok = self.renderer.parse_response(action)
        base = {"truncated": float(truncated), "parse_error": 0.0, "context_overflow": 0.0}
        if truncated and not self.score_truncated:
            await self._abort()
            return StepResult(
                reward=self.context_overflow_reward,
                episode_done=True,
                next_observation=_empty_input(),
                next_stop_condition=list(self._stop),
                metrics={**self._unscored_metrics(), **base},
                logs={"end": "truncated"},
                message=message,
            )
        if not ok and not truncated:
            await self._abort()
            return StepResult(
                reward=self.failed_parse_reward,
                episode_done=True,
                next_observation=_empty_input(),
                next_stop_condition=list(self._stop),
                metrics={**self._unscored_metrics(), **base, "parse_error": 1.0},
                logs={"end": "no stop token"},
                message=message,
            )
        if truncated:
            message = {**message, "truncated": True}
        result = await self.message_env.step(message)
        metrics = {**result.metrics, **base}
        stop = list(result.next_stop_condition or self._stop)
        if result.episode_done:
            return StepResult(
                reward=result.reward,
                episode_done=True,
                next_observation=_empty_input(),
                next_stop_condition=stop,
                metrics=metrics,
                logs=dict(result.logs),
                message=message,
            )
        import tinker

        new_messages = self._new_messages(result.next_messages)
        tokens = self._next_tokens(action, new_messages)
        self.messages = [dict(m) for m in result.next_messages]
        self.observation = tokens
        if self._exceeds(len(tokens)):
            await self._abort()
            return StepResult(
                reward=self.context_overflow_reward,
                episode_done=True,
                next_observation=_empty_input(),
                next_stop_condition=stop,
                metrics={**metrics, "context_overflow": 1.0},
                logs=dict(result.logs),
                message=message,
            )
        return StepResult(
            reward=result.reward,
            episode_done=False,
            next_observation=tinker.ModelInput.from_ints(tokens),
            next_stop_condition=stop,
            metrics=metrics,
            logs=dict(result.logs),
            message=message,
        )
