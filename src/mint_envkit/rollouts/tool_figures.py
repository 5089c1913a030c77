"""Tool figures: how an evaluation's (or a training step's) episodes used their tools.

Read from each turn's ``tool_calls`` log (:class:`~mint_envkit.ToolEnv` lists every call
of a turn as ``{"name", "status"}``, status ``ok``, ``invalid``, ``error`` or ``timeout``):
calls per episode, the share of episodes that call a tool, the share of calls that ran
(the others were malformed, named an unknown tool, had bad arguments or went over the
limit), of calls that raised or timed out, of timeouts, and each tool's calls per
episode with its errors. The figures are the run record's
(:class:`~mint_envkit.runs.record.ToolFigures`), so the summary, the loop's rows, the
trackers and the viewer name them the same way.

Example::

    from mint_envkit.rollouts.tool_figures import tool_figures

    # not run: needs rollouts of a ToolEnv
    figures = tool_figures(rollouts)
    figures.calling, figures.per_tool   # (0.75, 'lookup 1.25/episode, 0 errors')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import ToolFigures


def tool_figures(rollouts: Sequence[GroupRollout]) -> ToolFigures:
    """The :class:`~mint_envkit.runs.record.ToolFigures` of ``rollouts``' episodes; every
    figure None when no episode logged tool calls and none of them could (an env without
    tools).

    Example::

        # not run: see the module example
        tool_figures(rollouts).calls_per_episode   # 1.25
    """
    episodes = [t for r in rollouts if r.error is None for t in r.trajectories if t.transitions]
    if not episodes or not any(_has_tools(t) for t in episodes):
        return ToolFigures()
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    calling = 0
    for episode in episodes:
        made = [
            call
            for step in episode.transitions
            for call in step.logs.get("tool_calls") or []
            if isinstance(call, dict)
        ]
        calling += bool(made)
        for call in made:
            name, status = str(call.get("name") or "(malformed)"), str(call.get("status"))
            statuses[status] += 1
            calls[name] += 1
            errors[name] += status in ("error", "timeout")
    total = sum(calls.values())
    per_tool = "; ".join(
        f"{name} {count / len(episodes):.2f}/episode, {errors[name]} error"
        + ("s" if errors[name] != 1 else "")
        for name, count in calls.most_common()
    )
    return ToolFigures(
        calls_per_episode=total / len(episodes),
        calling=calling / len(episodes),
        valid=None if not total else (total - statuses["invalid"]) / total,
        errors=None if not total else (statuses["error"] + statuses["timeout"]) / total,
        timeouts=None if not total else statuses["timeout"] / total,
        per_tool=per_tool or None,
    )


def _has_tools(episode: object) -> bool:
    """Whether an episode's env counts tool calls (its metrics hold ``tool_calls``)."""
    metrics = getattr(episode, "metrics", {})
    return "tool_calls" in metrics
