"""The ordering rule: no outcome without an answer earns more than a wrong answer.

Otherwise RL teaches the model to stop answering: an empty, endless or cut-off
reply is the easiest way. The outcomes without an answer are an unparsed reply
(``reward_unparsed``), a reply cut off at the token limit or a context overflow
(``context_overflow_reward``), a reply without the stop token
(``failed_parse_reward``) and a multi-turn episode out of turns
(``max_turns_reward``). :func:`check_reward_order` is the rule, in one place; it
runs when an env class is defined (:class:`~mint_envkit.envs.scoring.AnswerScoring`) and
when a builder or token-level env is made (:func:`non_answer_rewards`).

Example::

    from mint_envkit.envs.ordering import check_reward_order

    check_reward_order("MyEnv", ("MyEnv.reward_incorrect", -0.25), {"reward_unparsed": -0.5})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mint_envkit.checks import is_number
from mint_envkit.envs.base import MessageEnv
from mint_envkit.errors import ConfigError

NON_ANSWER_DEFAULTS: dict[str, float] = {
    "failed_parse_reward": -1.0,
    "context_overflow_reward": -0.1,
}
"""The token-level env's rewards for a reply with no stop token or cut off, when unset
and the env's wrong answer is not lower (see :func:`non_answer_rewards`)."""


def above_yardstick(
    wrong: float, rewards: Mapping[str, float], *, tolerance: float = 0.0
) -> dict[str, float]:
    """The outcomes of ``rewards`` that earn more than ``wrong`` (more than ``tolerance``
    above it; equal is allowed): the ordering rule, for a class's declared rewards
    (:func:`check_reward_order`) and a game's played endings
    (:func:`~mint_envkit.rollouts.game_policies.game_ordering`, ``wrong``: an honest
    losing episode's reward).

    Example::

        above_yardstick(-0.5, {"cut off on turn 1": -0.1, "no stop token": -1.0})
        # {'cut off on turn 1': -0.1}
    """
    return {name: reward for name, reward in rewards.items() if reward > wrong + tolerance}


def check_reward_order(
    owner: str, wrong: tuple[str, float], rewards: Mapping[str, float], *, keyword: bool = False
) -> None:
    """The ordering rule: no outcome without an answer earns more than a wrong answer.

    ``wrong`` is ``(label, value)`` of the wrong-answer reward; ``rewards`` maps each
    non-answer reward (unparsed, cut off, no stop token, out of turns) to its value.
    Equal is allowed. Raises :class:`~mint_envkit.errors.ConfigError` naming both
    values and the fix (``keyword``: the fix is written ``name=value``, for a builder).

    Example::

        check_reward_order("MyEnv", ("MyEnv.reward_incorrect", -0.25),
                           {"reward_unparsed": -0.5})   # fine
        try:
            check_reward_order("DatasetBuilder", ("MyEnv.reward_incorrect", -0.25),
                               {"context_overflow_reward": -0.1}, keyword=True)
        except ConfigError as err:
            print(err)  # DatasetBuilder.context_overflow_reward = -0.1 is above ...
    """
    label, value = wrong
    for name, reward in above_yardstick(value, rewards).items():
        fix = f"{name}={value}" if keyword else f"{name} = {value}"
        raise ConfigError(
            f"{owner}.{name} = {reward} is above {label} = {value}: a reply with no "
            f"answer would earn more than a wrong answer, so RL teaches the model to stop "
            f"answering (an empty, endless or cut-off reply is the easiest way). Set "
            f"{name} <= {value}, for example {fix}, or leave it unset so it never "
            f"exceeds {label}."
        )


def non_answer_rewards(env: Any, owner: str, **given: float | None) -> dict[str, float]:
    """The token-level env's rewards for replies with no answer, held to ``env``'s wrong one.

    ``given`` holds ``failed_parse_reward`` and/or ``context_overflow_reward`` (None:
    unset). An unset one is its default (-1.0 / -0.1), or the env's
    :meth:`~mint_envkit.envs.scoring.AnswerScoring.wrong_answer_reward` when that is lower; each is then checked
    with :func:`check_reward_order`. ``env`` is an env class, an env, or a factory
    function; when it has no known wrong-answer reward (a plain ``MessageEnv``, a
    factory, a ``reward_fn`` with a ``component()`` part) the defaults stand unchecked.
    The wrong-answer reward is the env's
    :meth:`~mint_envkit.MessageEnv.wrong_answer_reward` hook (declared on the base class).

    Example::

        # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
        non_answer_rewards(ArithmeticEnv, "DatasetBuilder", context_overflow_reward=None)
        # {'context_overflow_reward': -0.25}
    """
    cls = env if isinstance(env, type) else type(env)
    known = issubclass(cls, MessageEnv)  # else a factory function: its envs are not made yet
    wrong = cls.wrong_answer_reward() if known else None
    out: dict[str, float] = {}
    for name, value in given.items():
        if value is None:
            value = NON_ANSWER_DEFAULTS[name]
            if wrong is not None:
                value = min(value, wrong)
        if not is_number(value):
            raise ConfigError(f"{owner}.{name} must be a number such as -1.0, got {value!r}")
        out[name] = float(value)
    if wrong is not None:
        check_reward_order(owner, (cls._wrong_answer_label(), wrong), out, keyword=True)
    return out
