"""Scoring a final answer: one result, the parser, the check and the rewards an env shares.

:class:`AnswerScoring` holds what :class:`~mint_envkit.SingleTurnEnv` and
:class:`~mint_envkit.ToolEnv` do with a final reply: parse it, check the parsed
value against the problem's answer, and turn that into an :class:`AnswerScore`
(or let a composed ``reward_fn`` give the reward). Every way of scoring gives
that one value, so ``correct`` and ``parsed`` always come from whatever gave
the reward: the env's parser and ``check``, or the answer check inside
``reward_fn``; a ``reward_fn`` that checks no answer reports no ``correct``.

When an env class is defined, how it scores is decided once into one value,
``MyEnv.scoring`` (:class:`~mint_envkit.envs.scoring_plan.Scoring`: the parser, the
reward, each outcome's reward and the ordering rule's verdict; nothing is written back
into the class). Its ``reward_unparsed`` (and a multi-turn env's ``max_turns_reward``)
must obey the ordering rule of :mod:`mint_envkit.envs.ordering`: no outcome without an
answer earns more than a wrong answer. A ``reward_fn`` may be a plain function
``(completion, answer) -> number``: it is scored through
:func:`~mint_envkit.rewards.component`.

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

from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.envs.scoring_plan import Scoring, decide_scoring, is_verdict
from mint_envkit.errors import ConfigError
from mint_envkit.parsers import Parser, ParseResult, exact, strip_thinking
from mint_envkit.rewards import RewardContext
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
        parser: extracts the answer from the reply's content (default ``exact()``); a
            plain function ``str -> str | None`` works too.
        reward_correct, reward_incorrect, reward_unparsed: the reward when the
            parsed answer is right, wrong, or could not be parsed (1.0 / 0.0 /
            unset). An unparsed reply never earns more than a wrong one: unset,
            ``reward_unparsed`` follows ``reward_incorrect``; ``reward_unparsed >
            reward_incorrect`` raises :class:`~mint_envkit.errors.ConfigError`
            when the class is defined.
        reward_fn: optional reward: a plain function ``(completion, answer) ->
            number``, or a composed one (see :mod:`mint_envkit.rewards`); when set it
            gives the reward, its answer check gives ``correct`` and ``parsed``
            (absent when it checks no answer; the ``parser`` is then not used), and
            each part is a metric. Its parts see :meth:`reward_context` (the
            problem, the prompt, the conversation); an async part
            (:func:`~mint_envkit.judge.judged`) is awaited by ``step()``.
        scoring: how the class scores, decided when it was defined (read it, print
            it; do not set it).
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
    reward_unparsed: ClassVar[float | None] = None
    reward_fn: ClassVar[Any] = None
    reward_sees_thinking: ClassVar[bool] = False
    scoring: ClassVar[Scoring]
    problem: dict[str, Any]
    _awaited: tuple[Message, AnswerScore] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _decided(cls)  # the ordering rule and the attribute checks run now

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
        return cls.scoring.wrong_answer

    @classmethod
    def _wrong_answer_label(cls) -> str:
        if cls.scoring.reward is None:
            return f"{cls.__name__}.reward_incorrect"
        return f"the lowest score of {cls.__name__}.reward_fn"

    def _out_of_turns_reward(self) -> float:
        """What running out of turns earns (a multi-turn env's, as decided)."""
        turns = type(self).scoring.max_turns_reward
        return 0.0 if turns is None else turns

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
        return type(self).scoring.parser(content if isinstance(content, str) else "")

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
        answer, plan = self.answer, type(self).scoring
        read = self.parse(message)
        correct = None
        if answer is not None and read:
            verdict = self.check(read.value or "", answer)
            if not is_verdict(verdict):
                raise ConfigError(
                    f"{type(self).__name__}.check returned {verdict!r} for the reply "
                    f"{read.value!r}; a check must return True or False (a NaN, a number or "
                    "None would be scored as a verdict nobody gave)"
                )
            correct = bool(verdict)
        elif answer is not None:
            correct = False
        if not read:
            reward = plan.reward_unparsed
        else:
            reward = plan.reward_correct if correct else plan.reward_incorrect
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
        reward_fn = type(self).scoring.reward
        if reward_fn is None:
            return self._by_parser(message)
        text = self._reward_text(message)
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
        reward_fn = type(self).scoring.reward
        if reward_fn is None:
            return self.score_answer(message)
        context = self.reward_context(message)
        breakdown = await reward_fn.score_async(self._reward_text(message), self.answer, context)
        return self._from_breakdown(breakdown)

    async def _await_reward(self, message: Message) -> None:
        """Before :meth:`score`: await an async ``reward_fn`` for ``message`` (its result is
        what :meth:`score_answer` then gives for this message)."""
        reward_fn = type(self).scoring.reward
        if reward_fn is not None and reward_fn.is_async:
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
        if not type(self).scoring.checks_answer:
            return {}
        if self.answer is None:
            return {"parsed": 0.0}
        return {"correct": 0.0, "parsed": 0.0}


_ATTRIBUTES = (
    "parser",
    "reward_fn",
    "reward_correct",
    "reward_incorrect",
    "reward_unparsed",
    "max_turns_reward",
)


def _decided(cls: type) -> Scoring:
    """``cls``'s :class:`Scoring`, decided again only when one of the attributes it reads
    was set since (``MyEnv.parser = ...`` after the class body: a notebook, a test)."""
    key = tuple(
        (name, id(value), value if isinstance(value, int | float | None) else None)
        for name in _ATTRIBUTES
        for value in [getattr(cls, name, None)]
    )
    cached = cls.__dict__.get("_mint_envkit_scoring")
    if cached is None or cached[0] != key:
        cached = (key, decide_scoring(cls, AnswerScoring))
        type.__setattr__(cls, "_mint_envkit_scoring", cached)
    return cached[1]


class _Decided:
    """``MyEnv.scoring``: the class's :class:`Scoring`, always as its attributes are now."""

    def __get__(self, instance: Any, owner: type) -> Scoring:
        return _decided(owner)


AnswerScoring.scoring = _Decided()  # type: ignore[assignment]
