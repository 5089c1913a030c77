"""Group builders: ``group_size`` copies of one problem, for GRPO.

Example::

    # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
    group = GroupBuilder(problem={"question": "2 + 3?", "answer": "5"}, env=ArithmeticEnv,
                         group_size=4, model_name="mint-envkit/tiny-qwen3")
    envs = await group.make_envs()   # 4 EnvFromMessageEnv, one problem
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.checks import integer
from mint_envkit.envs.base import Message, MessageEnv, require_message_env
from mint_envkit.envs.ordering import non_answer_rewards
from mint_envkit.errors import ConfigError, EnvError
from mint_envkit.rendering.chat_template import default_renderer_for
from mint_envkit.rendering.renderer import RENDERERS, Renderer, get_renderer
from mint_envkit.rendering.token_env import EnvFromMessageEnv

EnvFactory = Callable[..., MessageEnv]


def _check_renderer(_instance: Any, _attribute: Any, value: Any) -> None:
    if value not in RENDERERS:
        raise ConfigError(
            f"renderer_name {value!r} is unknown; known renderers: {', '.join(sorted(RENDERERS))}"
        )


RENDERER_FROM_MODEL: Any = attrs.Factory(
    lambda self: default_renderer_for(self.model_name), takes_self=True
)
"""The default ``renderer_name`` of the builders: the one that fits ``model_name``."""


def _check_env(_instance: Any, _attribute: Any, value: Any) -> None:
    if not callable(value):
        raise ConfigError(
            f"env must be a MessageEnv subclass or a function returning one, got {value!r}"
        )


def _resolve_non_answer_rewards(builder: Any) -> None:
    """Fill a builder's unset non-answer rewards from its env; apply the ordering rule.

    An env factory's envs are unknown until made: its unset rewards stay None and each
    :class:`EnvFromMessageEnv` fills and checks them against the env it runs.
    """
    if not isinstance(builder.env, type):
        return
    rewards = non_answer_rewards(
        builder.env,
        type(builder).__name__,
        failed_parse_reward=builder.failed_parse_reward,
        context_overflow_reward=builder.context_overflow_reward,
    )
    for name, value in rewards.items():
        object.__setattr__(builder, name, value)


def _describe(messages: Sequence[Message]) -> str:
    text = " | ".join(f"{m.get('role')}: {str(m.get('content'))[:60]}" for m in messages)
    return text[:240]


@attrs.frozen(kw_only=True)
class GroupBuilder:
    """Builds ``group_size`` token-level envs for one problem.

    Frozen and picklable (when ``env`` is a module-level class or function).

    Attributes:
        problem: the problem's fields, passed to ``env(**problem)``.
        env: a :class:`~mint_envkit.MessageEnv` subclass, or a function
            ``(**problem) -> MessageEnv`` (what it makes must be a ``MessageEnv``:
            a :class:`~mint_envkit.errors.ConfigError` otherwise).
        group_size: how many envs (rollouts) share the problem.
        model_name, renderer_name: pick the tokenizer and chat template
            (``renderer_name`` defaults to the one that fits the model).
        max_trajectory_tokens, max_generation_tokens, failed_parse_reward,
            context_overflow_reward, score_truncated: passed to
            :class:`~mint_envkit.rendering.EnvFromMessageEnv`.
        index: the problem's index in its dataset (for logs).

    ``failed_parse_reward`` (no stop token) and ``context_overflow_reward`` (cut
    off at the token limit) may not exceed the env's wrong-answer reward
    (:meth:`~mint_envkit.envs.scoring.AnswerScoring.wrong_answer_reward`):
    :class:`~mint_envkit.errors.ConfigError` when the builder is made. Left
    unset they are -1.0 and -0.1, or the wrong-answer reward when that is lower
    (with an env factory they stay None here and each token-level env decides).

    Example::

        # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
        group = GroupBuilder(problem={"question": "2 + 3?", "answer": "5"},
                             env=ArithmeticEnv, group_size=4,
                             model_name="mint-envkit/tiny-qwen3")
        envs = await group.make_envs()
    """

    problem: Mapping[str, Any] = attrs.field(converter=dict)
    env: EnvFactory = attrs.field(validator=_check_env)
    group_size: int = attrs.field(validator=integer())
    model_name: str
    renderer_name: str = attrs.field(default=RENDERER_FROM_MODEL, validator=_check_renderer)
    max_trajectory_tokens: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    max_generation_tokens: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    failed_parse_reward: float | None = None
    context_overflow_reward: float | None = None
    score_truncated: bool = False
    index: int = 0

    def __attrs_post_init__(self) -> None:
        _resolve_non_answer_rewards(self)

    def renderer(self) -> Renderer:
        """This group's renderer (shared across groups of the same model)."""
        return get_renderer(self.renderer_name, self.model_name)

    def make_message_env(self) -> MessageEnv:
        """One fresh message env for this problem.

        Raises:
            ConfigError: ``env`` made something that is not a
                :class:`~mint_envkit.MessageEnv` (see :func:`require_message_env
                <mint_envkit.envs.base.require_message_env>`).
        """
        made = self.env(**copy.deepcopy(dict(self.problem)))
        name = getattr(self.env, "__qualname__", repr(self.env))
        return require_message_env(made, f"GroupBuilder(env={name})")

    async def make_envs(self) -> list[EnvFromMessageEnv]:
        """``group_size`` independent token-level envs for this one problem.

        Raises:
            EnvError: the envs do not all start from the same messages (for
                example, an env factory that draws a new random problem per
                call), which would silently break group-relative advantages.
        """
        renderer = self.renderer()
        envs = [
            EnvFromMessageEnv(
                renderer,
                self.make_message_env(),
                max_trajectory_tokens=self.max_trajectory_tokens,
                max_generation_tokens=self.max_generation_tokens,
                failed_parse_reward=self.failed_parse_reward,
                context_overflow_reward=self.context_overflow_reward,
                score_truncated=self.score_truncated,
            )
            for _ in range(self.group_size)
        ]
        first = await envs[0].initial_messages_async()
        for position, env in enumerate(envs[1:], start=1):
            messages = await env.initial_messages_async()
            if messages != first:
                raise EnvError(
                    f"group of problem {self.index} holds different problems: env 0 starts with "
                    f"[{_describe(first)}] but env {position} starts with [{_describe(messages)}]. "
                    "Every env of a group must share one problem; draw randomness from the "
                    "problem's fields (or a seed field), not inside the env."
                )
        return envs

    async def compute_group_rewards(
        self, trajectories: Sequence[Any], envs: Sequence[EnvFromMessageEnv]
    ) -> list[tuple[float, dict[str, float]]]:
        """Rewards that depend on the whole group (pairwise, ranking). Default: none.

        Returns one ``(reward, metrics)`` per trajectory, added to the
        per-step rewards. Subclass and override for group-level rewards.
        """
        return [(0.0, {}) for _ in trajectories]

    def logging_tags(self) -> list[str]:
        """Tags under which this group's metrics are also reported."""
        return [getattr(self.env, "__name__", type(self.env).__name__)]
