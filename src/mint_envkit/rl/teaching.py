"""Training health, loud: whether each step could teach anything, and the run's summary.

Per step the loop measures (:class:`~mint_envkit.runs.record.TrainingHealth`, written to
its metrics row as ``health/...``, so the trackers and the viewer have them): the share of
sampled replies cut off at the reply limit, the share of groups with signal (rewards not
all equal), the share of datums with a non-zero advantage, and the update's gradient
norm. A step that can teach nothing (every reply cut off, every group constant, a zero
gradient) says so on its progress line, in words, with the likely fix, and says how many
steps in a row it has been; the run's summary repeats it (:func:`health_summary`).

Example::

    from mint_envkit.rl.teaching import StallWatch, step_health

    health = step_health({"env/all/by_group/frac_mixed": 0.0, "train/datums": 16,
                          "train/zero_advantage_datums": 16, "optim/grad_norm": 0.0},
                         truncated=1.0)
    watch = StallWatch()
    watch.note(health)
    # 'NOT LEARNING: every sampled reply was cut off at the reply limit: raise the reply ...'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import TrainingHealth


def replies_truncated(rollouts: Sequence[GroupRollout]) -> float | None:
    """The share of the sampled replies (every turn of every episode) cut off at the reply
    limit; None without replies.

    Example::

        # not run: needs a step's rollouts
        replies_truncated(batch.rollouts)   # 0.9375
    """
    replies = [
        step.ac.stop_reason
        for rollout in rollouts
        if rollout.error is None
        for trajectory in rollout.trajectories
        for step in trajectory.transitions
    ]
    return sum(reason == "length" for reason in replies) / len(replies) if replies else None


def step_health(metrics: Mapping[str, Any], truncated: float | None) -> TrainingHealth:
    """A finished step's :class:`TrainingHealth` from its metrics (the groups' signal,
    the datums and their zero advantages, the gradient norm) and its replies' truncation.

    Example::

        step_health({"env/all/by_group/frac_mixed": 0.5, "train/datums": 8,
                     "train/zero_advantage_datums": 4, "optim/grad_norm": 0.3}, 0.0).advantaged
        # 0.5
    """
    datums = metrics.get("train/datums") or 0
    zero = metrics.get("train/zero_advantage_datums") or 0
    signal = metrics.get("env/all/by_group/frac_mixed")
    grad = metrics.get("optim/grad_norm")
    return TrainingHealth(
        truncated=truncated,
        signal=None if signal is None else float(signal),
        advantaged=(datums - zero) / datums if datums else 0.0,
        grad_norm=None if grad is None or not datums else float(grad),
    )


def _said(reasons: Sequence[tuple[str, str]]) -> str:
    return "; ".join(f"{what}: {fix}" for what, fix in reasons)


class StallWatch:
    """Counts the steps in a row that could teach nothing; says so for the progress line.

    Example::

        watch = StallWatch()
        watch.note(TrainingHealth(signal=0.0))   # 'NOT LEARNING: every group's rewards ...'
        watch.note(TrainingHealth(signal=0.5))   # None
    """

    def __init__(self) -> None:
        self.in_a_row = 0

    def note(self, health: TrainingHealth) -> str | None:
        """``NOT LEARNING: <why>: <fix>`` for a step that can teach nothing (with how many
        steps in a row), else None."""
        reasons = health.stuck()
        if not reasons:
            self.in_a_row = 0
            return None
        self.in_a_row += 1
        row = f" ({self.in_a_row} steps in a row)" if self.in_a_row > 1 else ""
        return f"NOT LEARNING{row}: {_said(reasons)}"


def health_summary(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The run's health in one line when some steps could teach nothing (None when every
    step could): how many, why (each reason with its steps) and the fix.

    Example::

        health_summary([{"health/truncated": 1.0, "health/signal": 0.0},
                        {"health/truncated": 0.5, "health/signal": 0.5}])
        # 'NOT LEARNING on 1 of 2 steps: every sampled reply was cut off ... (1 step): ...'
    """
    healths = [h for h in (TrainingHealth.from_metrics(row) for row in rows) if h is not None]
    stuck = [h.stuck() for h in healths]
    counts: Counter[tuple[str, str]] = Counter(reason for reasons in stuck for reason in reasons)
    if not counts:
        return None
    parts = [f"{what} ({n} step{'s' * (n != 1)}): {fix}" for (what, fix), n in counts.most_common()]
    steps = sum(bool(reasons) for reasons in stuck)
    return f"NOT LEARNING on {steps} of {len(healths)} steps: " + "; ".join(parts)
