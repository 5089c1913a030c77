"""Reward composition: correctness gated on format, weighted sums, every part a metric.

A :class:`Reward` is a named function ``(completion, answer, context=None) ->
RewardBreakdown``. Leaves check one thing (:func:`correct`, :func:`valid_format`, or your
own :func:`component`); :func:`gated` and :func:`weighted` combine them. The breakdown
keeps the value of every part under its name, and :attr:`RewardBreakdown.metrics` turns
it into a flat metrics dict, including how each parser fared (so a parse failure is
never silently just "0").

A part may read its :class:`RewardContext` (the problem, the prompt, the conversation,
the reply and its thinking): an env builds one when it scores and passes it down the
tree. A part may be async (an ``async`` component, a judge's verdict through
:func:`~mint_envkit.judge.judged`): an env's ``step()`` awaits it
(:meth:`Reward.score_async`).

Rewards never swallow errors: an exception raised by a parser function, a check or a
component propagates, so the training loop records it as a rollout error instead of
scoring a bug as a wrong answer.

Example::

    from mint_envkit.parsers import boxed, xml_tag
    from mint_envkit.rewards import correct, gated, valid_format

    reward = gated(correct(boxed), gate=valid_format(xml_tag("answer")))
    breakdown = reward(r"<answer>\\boxed{5}</answer>", "5")
    assert breakdown.total == 1.0
    assert breakdown.metrics["reward/correct"] == 1.0
    assert breakdown.metrics["parse/format/ok"] == 1.0
"""

from mint_envkit.rewards.context import RewardContext
from mint_envkit.rewards.parts import (
    component,
    correct,
    gated,
    math_correct,
    valid_format,
    weighted,
)
from mint_envkit.rewards.tree import PartScore, Reward, RewardBreakdown

__all__ = [
    "PartScore",
    "Reward",
    "RewardBreakdown",
    "RewardContext",
    "component",
    "correct",
    "gated",
    "math_correct",
    "valid_format",
    "weighted",
]
