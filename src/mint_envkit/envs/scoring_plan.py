"""How an env class scores, decided once when the class is defined: one value, :class:`Scoring`.

An answer-scoring env (:class:`~mint_envkit.SingleTurnEnv`, :class:`~mint_envkit.ToolEnv`)
says what it wants in class attributes (``parser``, ``reward_fn``, ``reward_correct``,
``reward_incorrect``, ``reward_unparsed``, ``max_turns_reward``). :func:`decide_scoring`
reads them when the class is defined (and again only if one of them is set later, as a
notebook or a test may do), and returns the :class:`Scoring` the env scores with: the parser and reward as objects (a plain function becomes a
:class:`~mint_envkit.Parser` or a :func:`~mint_envkit.rewards.component`), each outcome's
reward with where it came from, and the ordering rule's verdict. Nothing is written
back into the class: ``MyEnv.reward_unparsed`` is what its author set (None when unset),
``MyEnv.scoring.reward_unparsed`` what it scores; ``print(MyEnv.scoring)`` says it all.

Example::

    from mint_envkit import SingleTurnEnv, first_number

    class ArithmeticEnv(SingleTurnEnv):
        parser = first_number
        reward_incorrect = -0.25

    ArithmeticEnv.scoring.reward_unparsed, ArithmeticEnv.reward_unparsed   # (-0.25, None)
    print(ArithmeticEnv.scoring)
    # ArithmeticEnv scores with the parser first_number and its check:
    #   correct 1.0, wrong -0.25, unparsed -0.25 (follows reward_incorrect)
    #   ordering rule: held (no reply without an answer earns more than a wrong one)
"""

from __future__ import annotations

import warnings
from typing import Any

import attrs

from mint_envkit.checks import is_number
from mint_envkit.envs.ordering import check_reward_order
from mint_envkit.errors import ConfigError, RewardOrderWarning
from mint_envkit.parsers import Parser
from mint_envkit.rewards import Reward
from mint_envkit.rewards.parts import as_parser, as_reward

MAX_TURNS_DEFAULT = 0.0
"""What running out of turns earns when ``max_turns_reward`` is unset (unless a wrong
answer earns less: then that).

Example::

    min(MAX_TURNS_DEFAULT, -0.25)   # -0.25, what an env with reward_incorrect -0.25 gets
"""


@attrs.frozen
class Scoring:
    """How one env class scores a final reply; made by :func:`decide_scoring`.

    Attributes:
        owner: the class's name.
        parser: what reads the answer (when ``reward`` is None).
        reward: the composed reward (``reward_fn``), or None: the parser, the env's
            ``check`` and the three rewards below give the reward.
        reward_correct, reward_incorrect, reward_unparsed: the outcomes' rewards (with
            a ``reward``: unused).
        unparsed_follows: True when ``reward_unparsed`` was unset and follows
            ``reward_incorrect``.
        max_turns_reward: what running out of turns earns (None: the env has no turns).
        wrong_answer: the lowest reward of a wrong answer (None: unknown, a component
            without bounds).
        checks_answer: whether anything checks the answer (``correct`` is reported).
        ordering: ``"held"``, or why the rule could not be checked.

    Example::

        # ArithmeticEnv: the module example's
        ArithmeticEnv.scoring.ordering, ArithmeticEnv.scoring.wrong_answer   # ('held', -0.25)
    """

    owner: str
    parser: Parser
    reward: Reward | None
    reward_correct: float
    reward_incorrect: float
    reward_unparsed: float
    unparsed_follows: bool
    max_turns_reward: float | None
    wrong_answer: float | None
    checks_answer: bool
    ordering: str

    @property
    def ordering_known(self) -> bool:
        """Whether the ordering rule was checked (and held: it raises otherwise)."""
        return self.ordering == "held"

    def __str__(self) -> str:
        lines = []
        if self.reward is None:
            lines.append(f"{self.owner} scores with the parser {self.parser.name} and its check:")
            unparsed = f"unparsed {self.reward_unparsed}"
            if self.unparsed_follows:
                unparsed += " (follows reward_incorrect)"
            lines.append(
                f"  correct {self.reward_correct}, wrong {self.reward_incorrect}, {unparsed}"
            )
        else:
            check = "checks the answer" if self.checks_answer else "checks no answer"
            bounds = "unknown bounds" if self.reward.bounds is None else f"{self.reward.bounds}"
            lines.append(
                f"{self.owner} scores with reward_fn {self.reward.name!r} ({check}, {bounds})"
            )
        if self.max_turns_reward is not None:
            lines.append(f"  out of turns {self.max_turns_reward}")
        if self.ordering == "held":
            lines.append(
                "  ordering rule: held (no reply without an answer earns more than a wrong one)"
            )
        else:
            lines.append(f"  ordering rule: NOT CHECKED: {self.ordering}")
        return "\n".join(lines)


def _own(cls: type, name: str, stop: type) -> bool:
    """Did the author of ``cls`` (or of a base between it and ``stop``) set ``name``?"""
    chain = cls.__mro__[: cls.__mro__.index(stop)]
    return any(name in vars(c) and vars(c)[name] is not None for c in chain)


def _number(cls: type, name: str) -> float:
    value = getattr(cls, name)
    if not is_number(value):
        raise ConfigError(f"{cls.__name__}.{name} must be a number, got {value!r}")
    return float(value)


def decide_scoring(cls: type, stop: type) -> Scoring:
    """The :class:`Scoring` of env class ``cls`` (``stop``: the base whose attributes are
    the library's defaults), with the ordering rule applied.

    Raises:
        ConfigError: a reward that is not a number, a ``parser`` or ``reward_fn`` that is
            neither the kind expected nor a plain function, or a reward without an
            answer above a wrong answer's (the message names both and the fix).

    Warns:
        RewardOrderWarning: the ordering rule cannot be checked (a ``reward_fn`` part
            with unknown bounds: give them with ``component(fn, bounds=(lo, hi))``).

    Example::

        # not run: AnswerScoring is what SingleTurnEnv scores with
        decide_scoring(ArithmeticEnv, AnswerScoring).reward_unparsed   # -0.25
    """
    owner = cls.__name__
    parser = as_parser(vars(cls).get("parser", cls.parser), f"{owner}.parser")
    raw = cls.__dict__.get("reward_fn", getattr(cls, "reward_fn", None))
    reward = None if raw is None else as_reward(raw, f"{owner}.reward_fn")
    correct, incorrect = _number(cls, "reward_correct"), _number(cls, "reward_incorrect")
    follows = not _own(cls, "reward_unparsed", stop)
    unparsed = incorrect if follows else _number(cls, "reward_unparsed")
    wrong: float | None = incorrect
    label = f"{owner}.reward_incorrect"
    if reward is not None:
        wrong = None if reward.bounds is None else float(reward.bounds[0])
        label = f"the lowest score of {owner}.reward_fn"
    check_reward_order(
        owner, (f"{owner}.reward_incorrect", incorrect), {"reward_unparsed": unparsed}
    )
    turns: float | None = None
    if hasattr(cls, "max_turns_reward"):
        if _own(cls, "max_turns_reward", stop):
            turns = _number(cls, "max_turns_reward")
        else:
            turns = MAX_TURNS_DEFAULT if wrong is None else min(MAX_TURNS_DEFAULT, wrong)
    ordering = "held"
    if wrong is None:
        ordering = (
            f"the lowest score of {owner}.reward_fn is unknown (a component() without bounds), "
            "so no check that replies without an answer (unparsed, cut off, out of turns) "
            "earn at most a wrong answer's; give bounds: component(fn, bounds=(lo, hi)), or "
            "run `mint-envkit audit` to probe it"
        )
        warnings.warn(f"{owner}: {ordering}", RewardOrderWarning, stacklevel=_user_level())
    elif turns is not None:
        check_reward_order(owner, (label, wrong), {"max_turns_reward": turns})
    return Scoring(
        owner=owner,
        parser=parser,
        reward=reward,
        reward_correct=correct,
        reward_incorrect=incorrect,
        reward_unparsed=unparsed,
        unparsed_follows=follows,
        max_turns_reward=turns,
        wrong_answer=wrong,
        checks_answer=reward is None or reward.checks_answer,
        ordering=ordering,
    )


def _user_level() -> int:
    """The stack level of the first frame outside the kit and ``abc``: the class statement
    (or the line that set an attribute), so a warning points at the user's code."""
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not (os.path.abspath(name).startswith(here) or name.startswith("<frozen")):
            return level
        frame, level = frame.f_back, level + 1
    return 1


def is_verdict(value: Any) -> bool:
    """Whether an answer check's result is a verdict: a ``bool`` (numpy's too), not a
    number, None or NaN.

    Example::

        is_verdict(True), is_verdict(1), is_verdict(float("nan"))   # (True, False, False)
    """
    return isinstance(value, bool) or type(value).__name__ == "bool_"
