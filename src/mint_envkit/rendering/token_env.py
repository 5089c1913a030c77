"""The token-level env the training loop runs: a message env behind a renderer.

:class:`EnvFromMessageEnv` turns a :class:`~mint_envkit.MessageEnv` into the
token-level interface of tinker-cookbook's ``Env`` (``initial_observation``
and ``step(tokens, *, extra)`` returning :class:`StepResult`), so cookbook
code can drive these envs and our loop can drive cookbook-shaped ones.

Example::

    env = EnvFromMessageEnv(renderer, ArithmeticEnv(question="2 + 3?", answer="5"))
    observation, stop = await env.initial_observation()
    result = await env.step(sampled_tokens, extra={"stop_reason": "stop"})
    result.reward, result.metrics
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from mint_envkit.envs.base import Message, MessageEnv
from mint_envkit.errors import EnvError

if TYPE_CHECKING:
    import tinker

    from mint_envkit.rendering.renderer import Renderer

__all__ = ["EnvFromMessageEnv", "StepResult", "StopCondition"]

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
        score_truncated: when True, a reply that hit the length limit is
            still parsed and scored by the env (the ``truncated`` metric is
            reported either way).

    When an episode ends without the env scoring it, the env's ``abort()``
    (if it has one) is awaited, so a multi-turn env's teardown still runs, and
    its ``unscored_metrics()`` (if it has one) fills its metrics, so rates such
    as ``correct`` count the cut-off episode as 0 instead of skipping it.

    Example::

        env = EnvFromMessageEnv(get_renderer("qwen3", tok), MyEnv(question="...", answer="..."))
        observation, stop = await env.initial_observation()
    """

    def __init__(
        self,
        renderer: Renderer,
        message_env: MessageEnv,
        max_trajectory_tokens: int | None = None,
        max_generation_tokens: int | None = None,
        failed_parse_reward: float = -1.0,
        context_overflow_reward: float = -0.1,
        score_truncated: bool = False,
    ) -> None:
        self.renderer = renderer
        self.message_env = message_env
        self.max_trajectory_tokens = max_trajectory_tokens
        self.max_generation_tokens = max_generation_tokens
        self.failed_parse_reward = float(failed_parse_reward)
        self.context_overflow_reward = float(context_overflow_reward)
        self.score_truncated = score_truncated
        self._stop = renderer.get_stop_sequences()
        self.initial_messages: list[Message] | None = None
        self.initial_tokens: list[int] | None = None
        self.messages: list[Message] = []
        """The conversation the next reply answers (for policies that read messages)."""

    def _exceeds(self, length: int) -> bool:
        if self.max_trajectory_tokens is None:
            return False
        return length + (self.max_generation_tokens or 0) > self.max_trajectory_tokens

    async def _abort(self) -> None:
        hook = getattr(self.message_env, "abort", None)
        if callable(hook):
            await hook()

    def _unscored_metrics(self) -> dict[str, float]:
        hook = getattr(self.message_env, "unscored_metrics", None)
        return dict(hook()) if callable(hook) else {}

    async def initial_messages_async(self) -> list[Message]:
        """The message env's opening conversation (fetched once, then reused)."""
        if self.initial_messages is None:
            self.initial_messages = await self.message_env.initial_observation()
            self.messages = [dict(m) for m in self.initial_messages]
        return self.initial_messages

    async def initial_observation(self) -> tuple[tinker.ModelInput, StopCondition]:
        """Render the opening conversation; return it with the stop tokens.

        Raises:
            EnvError: the prompt alone leaves no room for a reply within
                ``max_trajectory_tokens``.
        """
        import tinker

        messages = await self.initial_messages_async()
        tokens = self.renderer.render_tokens(messages)
        if self._exceeds(len(tokens)):
            raise EnvError(
                f"the prompt has {len(tokens)} tokens; with max_generation_tokens="
                f"{self.max_generation_tokens} it exceeds max_trajectory_tokens="
                f"{self.max_trajectory_tokens}. Shorten the prompt or raise the limit."
            )
        self.initial_tokens = tokens
        return tinker.ModelInput.from_ints(tokens), list(self._stop)

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

        self.messages = [dict(m) for m in result.next_messages]
        tokens = self.renderer.render_tokens(result.next_messages)
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
