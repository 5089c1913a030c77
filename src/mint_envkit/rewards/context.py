"""What a reward sees: the problem, the prompt, the conversation and the reply.

An env builds one :class:`RewardContext` when it scores a reply and passes it down
its ``reward_fn`` tree, so a part can read more than ``(completion, answer)``: a
field of the problem, the prompt, the earlier turns, the thinking. A reward called
on its own (``reward(completion, answer)``) gets a context that holds only those two.

Example::

    from mint_envkit.rewards import RewardContext, component

    def cites_the_unit(context: RewardContext) -> float:
        return float(context.problem["unit"] in context.completion)

    reward = component(cites_the_unit)
    context = RewardContext(problem={"question": "How long?", "unit": "cm"},
                            completion="5 cm", answer="5")
    assert reward("5 cm", "5", context).total == 1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs


def _problem(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


def _messages(value: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(dict(message) for message in value)


def _thinking(value: str | None) -> str | None:
    return value if isinstance(value, str) else None


@attrs.frozen
class RewardContext:
    """Everything a reward part may read about the reply it scores.

    Attributes:
        problem: the problem's fields (``question``, ``answer`` and any extra ones).
        prompt: the messages the model was first shown (system, few-shot, question).
        conversation: the whole conversation so far, the scored reply last (for a
            single-turn env: the prompt, then the reply; for a tool env: every turn).
        completion: the reply's text without its thinking (the message's ``content``).
        thinking: the text of the reply's ``<think>`` block, or None without one.
        answer: the reference answer (None when the problem has none).

    The env builds it when it scores; :meth:`Reward.__call__
    <mint_envkit.rewards.Reward.__call__>` without one makes a context of the
    completion and answer alone. :attr:`question` is the problem's question, else
    the prompt's last user message.

    Example::

        context = RewardContext(
            problem={"question": "2 + 3?", "answer": "5", "level": "easy"},
            prompt=[{"role": "user", "content": "2 + 3?"}],
            completion="5", thinking="2 + 3 is 5", answer="5",
        )
        assert context.question == "2 + 3?" and context.problem["level"] == "easy"
    """

    problem: dict[str, Any] = attrs.field(factory=dict, converter=_problem)
    prompt: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_messages)
    conversation: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_messages)
    completion: str = ""
    thinking: str | None = attrs.field(default=None, converter=_thinking)
    answer: Any = None

    @property
    def question(self) -> str:
        """The problem's ``question``; without one, the prompt's last user message ("" if none).

        Example::

            RewardContext(prompt=[{"role": "user", "content": "Hi?"}]).question  # 'Hi?'
        """
        question = self.problem.get("question")
        if isinstance(question, str):
            return question
        for message in reversed(self.prompt):
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, str):
                return content
        return ""
