"""Scoring a final answer: the parser, the check and the rewards an env shares.

:class:`AnswerScoring` holds what :class:`~mint_envkit.SingleTurnEnv` and
:class:`~mint_envkit.ToolEnv` do with a final reply: parse it, check the parsed
value against the problem's answer, and turn that into a reward and metrics
(or let a composed ``reward_fn`` give the reward).

Parsers and ``check`` read the reply's ``content``; the renderer keeps the
thinking apart in ``message["thinking"]``. :func:`with_thinking` gives the
reply text with its thinking, and ``reward_sees_thinking = True`` passes that
text to ``reward_fn``, so a format reward can ask for think-then-answer.

Example::

    from mint_envkit import with_thinking

    with_thinking({"role": "assistant", "content": "5", "thinking": "2 + 3"})
    # '<think>\\n2 + 3\\n</think>\\n\\n5'
"""

from __future__ import annotations

from typing import Any, ClassVar

from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.errors import ConfigError
from mint_envkit.parsers import Parser, ParseResult, exact, strip_thinking
from mint_envkit.rewards import default_check

__all__ = ["AnswerScoring", "with_thinking"]


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
            when set it gives the reward and each part is a metric.
        reward_sees_thinking: when True, ``reward_fn`` reads
            :func:`with_thinking` (the thinking in a ``<think>`` block, then the
            content) instead of the content alone (default False).

    Example::

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _order_rewards(cls)

    @property
    def answer(self) -> Any:
        """The problem's reference answer."""
        return self.problem.get("answer")

    def check(self, parsed: str, answer: Any) -> bool:
        """Is the parsed answer right? Numbers compare by value, text after strip.

        Example::

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

    def score(self, message: Message) -> MessageStepResult:
        """Score the reply. The default parses, checks, and reports.

        Metrics: ``correct`` (0/1) and ``parsed`` (0/1), plus every component
        of ``reward_fn`` when one is set. Logs: ``parse_status``, ``parsed``
        (the extracted value) and ``answer``.

        Example::

            def score(self, message):
                result = super().score(message)
                return attrs.evolve(result, reward=result.reward - 0.01 * len(message["content"]))
        """
        parsed = self.parse(message)
        correct = bool(parsed) and self.check(parsed.value or "", self.answer)
        if not parsed:
            reward = self.reward_unparsed
        elif correct:
            reward = self.reward_correct
        else:
            reward = self.reward_incorrect
        metrics = {"correct": float(correct), "parsed": float(bool(parsed))}
        reward_fn = type(self).reward_fn
        if reward_fn is not None:
            if self.reward_sees_thinking:
                text = with_thinking(message)
            else:
                content = message.get("content")
                text = content if isinstance(content, str) else ""
            breakdown = reward_fn(text, self.answer)
            reward = breakdown.total
            metrics.update(breakdown.metrics)
        logs = {
            "parse_status": parsed.status,
            "parsed": parsed.value,
            "answer": None if self.answer is None else str(self.answer),
        }
        return MessageStepResult(reward=reward, episode_done=True, metrics=metrics, logs=logs)

    def unscored_metrics(self) -> dict[str, float]:
        """The metrics of an episode cut off before :meth:`score` ran.

        The token-level env uses them when a reply hit the length limit, so
        ``correct`` and ``parsed`` count such an episode as 0.
        """
        return {"correct": 0.0, "parsed": 0.0}


_DERIVED_UNPARSED: set[type] = set()
"""Classes whose ``reward_unparsed`` was set here from ``reward_incorrect``."""


def _order_rewards(cls: type[AnswerScoring]) -> None:
    """Default ``reward_unparsed`` to ``reward_incorrect``; refuse an unparsed reply above a wrong one."""
    chain = cls.__mro__[: cls.__mro__.index(AnswerScoring)]
    explicit = any("reward_unparsed" in vars(c) and c not in _DERIVED_UNPARSED for c in chain)
    for name in ("reward_correct", "reward_incorrect", "reward_unparsed"):
        value = getattr(cls, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{cls.__name__}.{name} must be a number, got {value!r}")
    if not explicit:
        cls.reward_unparsed = cls.reward_incorrect
        _DERIVED_UNPARSED.add(cls)
    if cls.reward_unparsed > cls.reward_incorrect:
        raise ConfigError(
            f"{cls.__name__}.reward_unparsed = {cls.reward_unparsed} is above "
            f"reward_incorrect = {cls.reward_incorrect}: a reply with no answer would earn "
            f"more than a wrong answer, so RL teaches the model to stop answering (an empty "
            f"reply is the easiest way). Set reward_unparsed <= reward_incorrect, for example "
            f"reward_unparsed = {cls.reward_incorrect}, or leave it unset to follow "
            f"reward_incorrect."
        )
