"""Scoring a final answer: one result, the parser, the check and the rewards an env shares.

:class:`AnswerScoring` holds what :class:`~mint_envkit.SingleTurnEnv` and
:class:`~mint_envkit.ToolEnv` do with a final reply: parse it, check the parsed
value against the problem's answer, and turn that into an :class:`AnswerScore`
(or let a composed ``reward_fn`` give the reward). Every way of scoring gives
that one value, so ``correct`` and ``parsed`` always come from whatever gave
the reward: the env's parser and ``check``, or the answer check inside
``reward_fn``; a ``reward_fn`` that checks no answer reports no ``correct``.

When an env class is defined, its ``reward_unparsed`` (and a multi-turn env's
``max_turns_reward``) must obey the ordering rule of
:mod:`mint_envkit.envs.ordering`: no outcome without an answer earns more than a
wrong answer.

Parsers and ``check`` read the reply's ``content``; the renderer keeps the
thinking apart in ``message["thinking"]``. :func:`with_thinking` gives the
reply text with its thinking, and ``reward_sees_thinking = True`` passes that
text to ``reward_fn``, so a format reward can ask for think-then-answer.

A :class:`~mint_envkit.rewards.Reward` as ``reward_fn`` also gets a
:class:`~mint_envkit.rewards.RewardContext` (:meth:`AnswerScoring.reward_context`),
and one with an async part (a judge) is awaited by the env's ``step()``
(:meth:`AnswerScoring.score_answer_async`) before :meth:`AnswerScoring.score` runs.

Example::

    from mint_envkit import with_thinking

    with_thinking({"role": "assistant", "content": "5", "thinking": "2 + 3"})
    # '<think>\\n2 + 3\\n</think>\\n\\n5'
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from mint_envkit.checks import is_number
from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.envs.ordering import check_reward_order
from mint_envkit.errors import ConfigError
from mint_envkit.parsers import Parser, ParseResult, exact, strip_thinking
from mint_envkit.rewards import Reward, RewardContext
from mint_envkit.rewards.parts import default_check


@attrs.frozen
class AnswerScore:
    """How a final reply was scored: the one result every way of scoring gives.

    Attributes:
        reward: the reward.
        correct: True / False from whatever gave the reward (the env's parser and
            ``check``, or the answer check inside ``reward_fn``); None when nothing
            checked an answer (a ``reward_fn`` without :func:`~mint_envkit.rewards.correct`
            or :func:`~mint_envkit.rewards.math_correct`, or a problem with no answer).
        parse: how that answer check read the reply; None when nothing read an answer.
        components: the metrics of ``reward_fn`` (``reward/<part>``, ``parse/...``).
        notes: what ``reward_fn``'s parts keep for the episode's logs (a judged
            part's ``judge/<part>/text``), added to :attr:`logs`.

    ``metrics`` holds ``correct`` and ``parsed`` only when they are known: an absent
    value is never reported as a fake 0.

    Example::

        score = AnswerScore(reward=1.0, correct=True, parse=ParseResult.ok("5"))
        assert score.metrics == {"correct": 1.0, "parsed": 1.0}
        assert AnswerScore(reward=0.5, correct=None, parse=None).metrics == {}
    """

    reward: float = attrs.field(converter=float)
    correct: bool | None
    parse: ParseResult | None
    components: dict[str, float] = attrs.field(factory=dict, converter=dict)
    notes: dict[str, Any] = attrs.field(factory=dict, converter=dict)

    @property
    def metrics(self) -> dict[str, float]:
        """``correct`` and ``parsed`` (0/1) when known, then ``components``."""
        out: dict[str, float] = {}
        if self.correct is not None:
            out["correct"] = float(self.correct)
        if self.parse is not None:
            out["parsed"] = float(bool(self.parse))
        out.update(self.components)
        return out

    @property
    def logs(self) -> dict[str, Any]:
        """``parse_status`` and ``parsed`` (the value read, None when nothing read one), ``notes``."""
        if self.parse is None:
            return {"parse_status": None, "parsed": None, **self.notes}
        return {"parse_status": self.parse.status, "parsed": self.parse.value, **self.notes}


def with_thinking(message: Message) -> str:
    """The reply text with its thinking, as the model wrote it.

    ``<think>\\n{thinking}\\n</think>\\n\\n{content}`` when the message has a
    ``thinking`` field (the renderer puts a reply's think block there), else
    the content alone.

    Example::

        with_thinking({"role": "assistant", "content": r"\\boxed{5}", "thinking": "2+3"})
        # '<think>\\n2+3\\n</think>\\n\\n\\\\boxed{5}'
    """
    content = message.get("content")
    content = content if isinstance(content, str) else ""
    thinking = message.get("thinking")
    if not isinstance(thinking, str):
        return content
    return f"<think>\n{thinking}\n</think>\n\n{content}"


class AnswerScoring:
    """Scores a final reply: parse, check, reward, metrics. A mixin of the envs.

    Class attributes:
        parser: extracts the answer from the reply's content (default ``exact()``).
        reward_correct, reward_incorrect, reward_unparsed: the reward when the
            parsed answer is right, wrong, or could not be parsed (1.0 / 0.0 / 0.0).
            An unparsed reply never earns more than a wrong one: a subclass that
            sets ``reward_incorrect`` but not ``reward_unparsed`` gets
            ``reward_unparsed = reward_incorrect``; ``reward_unparsed >
            reward_incorrect`` raises :class:`~mint_envkit.errors.ConfigError`
            when the class is defined.
        reward_fn: optional composed reward (see :mod:`mint_envkit.rewards`);
            when set it gives the reward, its answer check gives ``correct`` and
            ``parsed`` (absent when it checks no answer; the ``parser`` is then
            not used), and each part is a metric. Its parts see
            :meth:`reward_context` (the problem, the prompt, the conversation);
            an async part (:func:`~mint_envkit.judge.judged`) is awaited by ``step()``.
        reward_sees_thinking: when True, ``reward_fn`` reads
            :func:`with_thinking` (the thinking in a ``<think>`` block, then the
            content) instead of the content alone (default False).

    Example::

        from mint_envkit import SingleTurnEnv, boxed, correct, valid_format, weighted, xml_tag

        class BoxedEnv(SingleTurnEnv):
            parser = boxed
            reward_sees_thinking = True
            reward_fn = weighted(correct=(correct(boxed), 1.0),
                                 thought=(valid_format(xml_tag("think")), 0.1))
    """

    parser: ClassVar[Parser] = exact()
    reward_correct: ClassVar[float] = 1.0
    reward_incorrect: ClassVar[float] = 0.0
    reward_unparsed: ClassVar[float] = 0.0
    reward_fn: ClassVar[Any] = None
    reward_sees_thinking: ClassVar[bool] = False
    problem: dict[str, Any]
    _awaited: tuple[Message, AnswerScore] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _order_rewards(cls)

    @property
    def answer(self) -> Any:
        """The problem's reference answer."""
        return self.problem.get("answer")

    @classmethod
    def wrong_answer_reward(cls) -> float | None:
        """What a wrong answer earns: no reply without an answer may earn more.

        ``reward_incorrect``; with a ``reward_fn``, the lowest score it can give
        (its ``bounds``), or None when that is unknown (a ``component()`` part).

        Example::

            # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
            ArithmeticEnv.wrong_answer_reward()  # -0.25, its reward_incorrect
        """
        if cls.reward_fn is None:
            return cls.reward_incorrect
        bounds = getattr(cls.reward_fn, "bounds", None)
        return None if bounds is None else float(bounds[0])

    @classmethod
    def _wrong_answer_label(cls) -> str:
        if cls.reward_fn is None:
            return f"{cls.__name__}.reward_incorrect"
        return f"the lowest score of {cls.__name__}.reward_fn"

    @classmethod
    def _checks_answer(cls) -> bool:
        return cls.reward_fn is None or bool(getattr(cls.reward_fn, "checks_answer", False))

    def check(self, parsed: str, answer: Any) -> bool:
        """Is the parsed answer right? Numbers compare by value, text after strip.

        Not called when the problem has no answer (nothing can be right then).

        Example::

            # not run: `env` is an env instance, built elsewhere
            env.check("5.0", "5")     # True (same_number)
            env.check("Paris", "Paris ")  # True
        """
        return default_check(parsed, answer)

    def parse(self, message: Message) -> ParseResult:
        """Run the class's parser over the reply's content (not its thinking).

        A reply whose content still holds an unclosed ``<think>`` gives status
        ``unclosed_think`` whatever the parser, so an answer written inside an
        unfinished think block never counts.
        """
        content = message.get("content")
        if isinstance(content, str) and ("<think>" in content or "</think>" in content):
            thinking = strip_thinking(content)
            if thinking.status == "unclosed_think":
                return thinking
            content = thinking.value or ""
        # Read from the class so a plain function is not bound as a method.
        parser = type(self).parser
        if not isinstance(parser, Parser):
            parser = Parser.from_function(parser, name=getattr(parser, "__name__", "parser"))
        return parser(content if isinstance(content, str) else "")

    def _history(self, message: Message) -> tuple[list[Message], list[Message]]:
        """The prompt and the conversation ending with ``message`` (the envs fill them in)."""
        return [], [message]

    def reward_context(self, message: Message) -> RewardContext:
        """What ``reward_fn``'s parts see when they score ``message``: a :class:`RewardContext`.

        The problem, the prompt, the conversation (ending with the reply), the reply's
        content and thinking, and the reference answer.

        Example::

            # not run: `env` is an env instance, built elsewhere
            context = env.reward_context({"role": "assistant", "content": "5"})
            context.problem["question"], context.conversation[-1]["content"]  # ..., '5'
        """
        prompt, conversation = self._history(message)
        content = message.get("content")
        return RewardContext(
            problem=self.problem,
            prompt=prompt,
            conversation=conversation,
            completion=content if isinstance(content, str) else "",
            thinking=message.get("thinking"),
            answer=self.answer,
        )

    def _reward_text(self, message: Message) -> str:
        if self.reward_sees_thinking:
            return with_thinking(message)
        content = message.get("content")
        return content if isinstance(content, str) else ""

    def _from_breakdown(self, breakdown: Any) -> AnswerScore:
        correct = None if self.answer is None else getattr(breakdown, "correct", None)
        parse = getattr(breakdown, "parse", None)
        notes = getattr(breakdown, "logs", {})
        return AnswerScore(breakdown.total, correct, parse, breakdown.metrics, notes)

    def _by_parser(self, message: Message) -> AnswerScore:
        answer = self.answer
        read = self.parse(message)
        correct = None
        if answer is not None:
            correct = bool(read) and bool(self.check(read.value or "", answer))
        if not read:
            reward = self.reward_unparsed
        else:
            reward = self.reward_correct if correct else self.reward_incorrect
        return AnswerScore(reward=reward, correct=correct, parse=read)

    def score_answer(self, message: Message) -> AnswerScore:
        """Score the reply into one :class:`AnswerScore`, however the reward is given.

        Without ``reward_fn``: the parser and :meth:`check` give ``correct`` and the
        reward (``reward_correct`` / ``reward_incorrect`` / ``reward_unparsed``).
        With one: its total is the reward and its answer check gives ``correct``
        and the parse (None when it checks no answer); its parts see
        :meth:`reward_context`. A problem with no answer has ``correct`` None (a
        parsed reply earns ``reward_incorrect``). A ``reward_fn`` with an async part
        (a judge) is awaited by ``step()`` before :meth:`score` runs; called for
        another message, or outside ``step()``, this raises
        :class:`~mint_envkit.errors.ConfigError`: await :meth:`score_answer_async`.

        Example::

            # not run: `env` is an env instance, built elsewhere
            env.score_answer({"role": "assistant", "content": "5"}).correct  # True
        """
        awaited = self._awaited
        if awaited is not None and awaited[0] is message:
            return awaited[1]
        reward_fn = type(self).reward_fn
        if reward_fn is None:
            return self._by_parser(message)
        text = self._reward_text(message)
        if not isinstance(reward_fn, Reward):  # a plain function (completion, answer)
            return self._from_breakdown(reward_fn(text, self.answer))
        if reward_fn.is_async:
            raise ConfigError(
                f"{type(self).__name__}.reward_fn has an async part (a judge, an async "
                "component) that score_answer() cannot await; let step() score the reply "
                "(it awaits the reward, then calls score()), or call "
                "`await env.score_answer_async(message)`"
            )
        return self._from_breakdown(reward_fn(text, self.answer, self.reward_context(message)))

    async def score_answer_async(self, message: Message) -> AnswerScore:
        """:meth:`score_answer`, awaiting the async parts of ``reward_fn`` (a judge's verdict).

        Example::

            # not run: `env` is an env instance, built elsewhere
            scored = await env.score_answer_async({"role": "assistant", "content": "5"})
            scored.reward, scored.metrics["reward/polite"]
        """
        reward_fn = type(self).reward_fn
        if not isinstance(reward_fn, Reward):
            return self.score_answer(message)
        context = self.reward_context(message)
        breakdown = await reward_fn.score_async(self._reward_text(message), self.answer, context)
        return self._from_breakdown(breakdown)

    async def _await_reward(self, message: Message) -> None:
        """Before :meth:`score`: await an async ``reward_fn`` for ``message`` (its result is
        what :meth:`score_answer` then gives for this message)."""
        reward_fn = type(self).reward_fn
        if isinstance(reward_fn, Reward) and reward_fn.is_async:
            self._awaited = (message, await self.score_answer_async(message))

    def score(self, message: Message) -> MessageStepResult:
        """Score the reply (:meth:`score_answer`) and end the episode.

        Metrics: ``correct`` (0/1) and ``parsed`` (0/1) when known (see
        :class:`AnswerScore`), plus every component of ``reward_fn`` when one is
        set. Logs: ``parse_status``, ``parsed`` (the extracted value) and ``answer``.

        Example::

            def score(self, message):
                result = super().score(message)
                return attrs.evolve(result, reward=result.reward - 0.01 * len(message["content"]))
        """
        scored = self.score_answer(message)
        logs = {**scored.logs, "answer": None if self.answer is None else str(self.answer)}
        return MessageStepResult(
            reward=scored.reward, episode_done=True, metrics=scored.metrics, logs=logs
        )

    def unscored_metrics(self) -> dict[str, float]:
        """The metrics of an episode cut off before :meth:`score` ran.

        The token-level env uses them when a reply hit the length limit, so
        ``correct`` and ``parsed`` count such an episode as 0, where the env
        reports them at all.
        """
        if not self._checks_answer():
            return {}
        if self.answer is None:
            return {"parsed": 0.0}
        return {"correct": 0.0, "parsed": 0.0}


_DERIVED: dict[type, set[str]] = {}
"""The rewards each class got here (from ``reward_incorrect``), not from its author."""


def _explicit(cls: type, name: str) -> bool:
    """Did the author of ``cls`` or of a base between it and AnswerScoring set ``name``?"""
    chain = cls.__mro__[: cls.__mro__.index(AnswerScoring)]
    return any(name in vars(c) and name not in _DERIVED.get(c, set()) for c in chain)


def _derive(cls: type, name: str, value: float) -> None:
    setattr(cls, name, value)
    _DERIVED.setdefault(cls, set()).add(name)


def _inherited(cls: type, name: str) -> Any:
    """``name`` as the first class that set it by hand has it (a base's default)."""
    return next(
        vars(c)[name] for c in cls.__mro__ if name in vars(c) and name not in _DERIVED.get(c, ())
    )


def _order_rewards(cls: type[AnswerScoring]) -> None:
    """Derive unset non-answer rewards; refuse one above a wrong answer (the ordering rule).

    ``reward_unparsed`` follows ``reward_incorrect`` when unset. A multi-turn env's
    ``max_turns_reward`` (running out of turns gives no answer) follows the wrong-answer
    reward when unset and that is lower than its default.
    """
    names = ["reward_correct", "reward_incorrect", "reward_unparsed"]
    turns = hasattr(cls, "max_turns_reward")
    for name in [*names, "max_turns_reward"] if turns else names:
        value = getattr(cls, name)
        if not is_number(value):
            raise ConfigError(f"{cls.__name__}.{name} must be a number, got {value!r}")
    if not _explicit(cls, "reward_unparsed"):
        _derive(cls, "reward_unparsed", cls.reward_incorrect)
    incorrect = (f"{cls.__name__}.reward_incorrect", cls.reward_incorrect)
    check_reward_order(cls.__name__, incorrect, {"reward_unparsed": cls.reward_unparsed})
    wrong = cls.wrong_answer_reward() if turns else None
    if wrong is None:
        return
    if not _explicit(cls, "max_turns_reward"):
        _derive(cls, "max_turns_reward", min(_inherited(cls, "max_turns_reward"), wrong))
    label = (cls._wrong_answer_label(), wrong)
    check_reward_order(cls.__name__, label, {"max_turns_reward": cls.max_turns_reward})
