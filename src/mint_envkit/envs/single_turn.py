"""Single-turn environments: one prompt, one reply, one reward.

Example::

    from mint_envkit import SingleTurnEnv, first_number

    class ArithmeticEnv(SingleTurnEnv):
        system_prompt = "You are a precise calculator. Reply with only the final number."
        parser = first_number
        reward_correct = 1.0
        reward_incorrect = -0.25

    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    await env.initial_observation()   # [system, user] messages
    result = await env.step({"role": "assistant", "content": "5"})
    result.reward, result.metrics     # 1.0, {'correct': 1.0, 'parsed': 1.0}
"""

from __future__ import annotations

from typing import Any, ClassVar

from mint_envkit.envs.base import Message, MessageEnv, MessageStepResult
from mint_envkit.envs.problem import bind_problem
from mint_envkit.errors import ConfigError, EnvError, ProblemError
from mint_envkit.parsers import Parser, ParseResult, exact, strip_thinking
from mint_envkit.rewards import default_check

__all__ = ["SingleTurnEnv"]

_DERIVED_UNPARSED: set[type] = set()
"""Classes whose ``reward_unparsed`` was set here from ``reward_incorrect``."""


class SingleTurnEnv(MessageEnv):
    """An env that asks one question and scores one reply.

    Subclass it and set class attributes; override a hook only when the
    defaults do not fit.

    Class attributes:
        system_prompt: the system message, or None for none.
        few_shot: example messages placed between the system prompt and the
            question (copied for every env, never shared).
        parser: a reward parser (``first_number``, ``boxed``,
            ``xml_tag("answer").after_thinking()``...) that extracts the
            answer from the reply. Default: ``exact()``, the whole reply.
        reward_correct, reward_incorrect, reward_unparsed: the reward when
            the parsed answer is right, wrong, or could not be parsed
            (defaults 1.0 / 0.0 / 0.0). Unparsed replies are reported apart
            from wrong ones (metric ``parsed``), never folded in silently.
            An unparsed reply never earns more than a wrong one: a subclass
            that sets ``reward_incorrect`` but not ``reward_unparsed`` gets
            ``reward_unparsed = reward_incorrect``, and one that sets
            ``reward_unparsed > reward_incorrect`` raises
            :class:`~mint_envkit.errors.ConfigError` when it is defined
            (RL would otherwise learn to stop answering: an empty reply is
            the easiest unparsed one).
        reward_fn: optional composed reward (see :mod:`mint_envkit.rewards`);
            when set it gives the reward, and each of its components is
            reported as a metric.
        required_fields: the problem fields the env needs
            (default ``("question", "answer")``).
        optional_fields: extra fields the env takes, with defaults
            (e.g. ``{"unit": None}``); each is available as ``self.problem[name]``.

    Hooks:
        messages(): the prompt. check(parsed, answer): is the parsed answer
        right. score(message): the whole step, for full control.

    Each instance is single use: :meth:`step` once, then it raises.

    Example::

        class CapitalEnv(SingleTurnEnv):
            system_prompt = "Answer with the city name only."
            parser = exact(normalize=str.lower)
            optional_fields = {"country": None}

        env = CapitalEnv(question="Capital of France?", answer="paris", country="France")
    """

    system_prompt: ClassVar[str | None] = None
    few_shot: ClassVar[list[Message]] = []
    parser: ClassVar[Parser] = exact()
    reward_correct: ClassVar[float] = 1.0
    reward_incorrect: ClassVar[float] = 0.0
    reward_unparsed: ClassVar[float] = 0.0
    reward_fn: ClassVar[Any] = None
    required_fields: ClassVar[tuple[str, ...]] = ("question", "answer")
    optional_fields: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _order_rewards(cls)

    def __init__(self, **problem: Any) -> None:
        self.problem: dict[str, Any] = bind_problem(
            type(self).__name__, self.required_fields, self.optional_fields, problem
        )
        question = self.problem.get("question")
        if "question" in self.required_fields and not isinstance(question, str):
            raise ProblemError(
                f"{type(self).__name__} needs 'question' to be a string, got "
                f"{type(question).__name__} {question!r}"
            )
        self._done = False

    @property
    def question(self) -> str:
        """The problem's question."""
        return self.problem.get("question", "")

    @property
    def answer(self) -> Any:
        """The problem's reference answer."""
        return self.problem.get("answer")

    def messages(self) -> list[Message]:
        """The prompt: system prompt, few-shot examples, then the question.

        Override to build a different prompt.

        Example::

            def messages(self):
                return [{"role": "user", "content": f"Solve: {self.question}"}]
        """
        out: list[Message] = []
        if self.system_prompt:
            out.append({"role": "system", "content": self.system_prompt})
        out.extend(dict(m) for m in self.few_shot)
        out.append({"role": "user", "content": self.question})
        return out

    def check(self, parsed: str, answer: Any) -> bool:
        """Is the parsed answer right? Numbers compare by value, text after strip.

        Example::

            env.check("5.0", "5")     # True (same_number)
            env.check("Paris", "Paris ")  # True
        """
        return default_check(parsed, answer)

    async def initial_observation(self) -> list[Message]:
        """The prompt from :meth:`messages`."""
        return self.messages()

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
            content = message.get("content")
            breakdown = reward_fn(content if isinstance(content, str) else "", self.answer)
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

    async def step(self, message: Message) -> MessageStepResult:
        """Score the one reply and end the episode (see :meth:`score`)."""
        if self._done:
            raise EnvError(
                f"{type(self).__name__} was stepped twice; a single-turn env takes one reply. "
                "Make a new env for each episode (GroupBuilder.make_envs does)."
            )
        self._done = True
        return self.score(message)


def _order_rewards(cls: type[SingleTurnEnv]) -> None:
    """Default ``reward_unparsed`` to ``reward_incorrect``; refuse an unparsed reply above a wrong one."""
    chain = cls.__mro__[: cls.__mro__.index(SingleTurnEnv)]
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
