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
from mint_envkit.envs.scoring import AnswerScoring
from mint_envkit.errors import EnvError, ProblemError


class SingleTurnEnv(AnswerScoring, MessageEnv):
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
            reported as a metric. It reads the reply's content.
        reward_sees_thinking: when True, ``reward_fn`` reads the reply with
            its thinking (:func:`~mint_envkit.with_thinking`), so a format
            reward can require think-then-answer (default False).
        required_fields: the problem fields the env needs
            (default ``("question", "answer")``).
        optional_fields: extra fields the env takes, with defaults
            (e.g. ``{"unit": None}``); each is available as ``self.problem[name]``.

    Hooks:
        messages(): the prompt. check(parsed, answer): is the parsed answer
        right. score(message): the whole step, for full control. The parser
        and ``check`` read ``message["content"]``; the thinking is in
        ``message["thinking"]`` (see :class:`~mint_envkit.envs.scoring.AnswerScoring`).

    Each instance is single use: :meth:`step` once, then it raises.

    Example::

        from mint_envkit import exact

        class CapitalEnv(SingleTurnEnv):
            system_prompt = "Answer with the city name only."
            parser = exact(normalize=str.lower)
            optional_fields = {"country": None}

        env = CapitalEnv(question="Capital of France?", answer="paris", country="France")
    """

    system_prompt: ClassVar[str | None] = None
    few_shot: ClassVar[list[Message]] = []
    required_fields: ClassVar[tuple[str, ...]] = ("question", "answer")
    optional_fields: ClassVar[dict[str, Any]] = {}

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
        self._prompt: list[Message] | None = None

    @property
    def question(self) -> str:
        """The problem's question."""
        return self.problem.get("question", "")

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

    async def initial_observation(self) -> list[Message]:
        """The prompt from :meth:`messages`."""
        self._prompt = self.messages()
        return [dict(m) for m in self._prompt]

    def _history(self, message: Message) -> tuple[list[Message], list[Message]]:
        prompt = self._prompt if self._prompt is not None else self.messages()
        return prompt, [*prompt, message]

    async def step(self, message: Message) -> MessageStepResult:
        """Score the one reply and end the episode (see :meth:`score`).

        A ``reward_fn`` with an async part (a judge) is awaited first, so
        :meth:`score` (and an override of it) gets its result.
        """
        if self._done:
            raise EnvError(
                f"{type(self).__name__} was stepped twice; a single-turn env takes one reply. "
                "Make a new env for each episode (GroupBuilder.make_envs does)."
            )
        self._done = True
        await self._await_reward(message)
        return self.score(message)
