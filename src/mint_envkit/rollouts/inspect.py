"""What a check of an env measures and shows, one group at a time (``mint-envkit check``).

The reply the env scores correct (:func:`reference_reply`), whether every observation
of an episode extends the previous one (:func:`prefix_report`), how a game scores and
its ordering rule measured by playing (:func:`game_lines`), which renderer rendered the
prompt (:func:`renderer_label`), and the lines that show a prompt, a scripted group and
a multi-turn transcript. :mod:`mint_envkit.replay.check` runs the check with them.

Example::

    from mint_envkit.rendering.renderer import get_renderer
    from mint_envkit.rollouts.inspect import renderer_label

    assert renderer_label(get_renderer("qwen3", "mint-envkit/tiny-qwen3")) == "qwen3"
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from mint_envkit.builders.group import GroupBuilder
from mint_envkit.envs.base import success_name
from mint_envkit.rollouts.game_policies import game_ordering
from mint_envkit.rollouts.judging import answer_forms
from mint_envkit.rollouts.scripted import GroupReport
from mint_envkit.rollouts.types import GroupRollout

TOKEN_ENV_FLAGS = ("truncated", "parse_error", "context_overflow")
"""The token env's flags, shown in a reply's metrics only when set."""


async def reference_reply(group: GroupBuilder) -> str | None:
    """The first usual form of the problem's answer (:func:`answer_forms`) that the env
    scores as correct.

    Each form runs through a fresh env of the group (rendered, parsed, scored),
    and counts when the env reports its success metric (``correct``, or a game's
    declared ``success_metric``) = 1 after that one reply. None when the problem has
    no ``answer`` or no form scores as correct.

    Example::

        # not run: `group` is a GroupBuilder of an env whose parser reads `\\boxed{}`
        await reference_reply(group)   # '\\\\boxed{5}'
    """
    answer = group.problem.get("answer")
    if answer is None:
        return None
    for text in answer_forms(answer):
        env = (await group.make_envs())[0]
        success = success_name(env.message_env)
        await env.initial_observation()
        tokens = env.renderer.tokenizer.encode(text, add_special_tokens=False)
        stop = env.renderer.get_stop_sequences()[0]
        result = await env.step([*tokens, stop], extra={"stop_reason": "stop"})
        if result.episode_done and result.metrics.get(success) == 1.0:
            return text
        await env.message_env.abort()
    return None


async def game_lines(group: GroupBuilder, env_class: type) -> tuple[list[str], bool]:
    """How a game scores, and its ordering rule measured by playing; (lines, held).

    Example::

        # not run: `group` is a GroupBuilder of a game (MultiTurnEnv with respond)
        lines, held = await game_lines(group, ColourGameEnv)
    """
    success = env_class.success_metric
    said = (
        f"success metric {success!r}"
        if success
        else "no success_metric declared (set success_metric = 'solved', the metric the env "
        "logs 1.0 on a win, so checks, baselines and claims can tell a won game)"
    )
    lines = [
        f"{env_class.__name__} plays a game turn by turn (respond); {said}",
        f"  out of turns {env_class.max_turns_reward} (max_turns_reward, after "
        f"{env_class.max_turns} turns), cut off at the reply limit "
        f"{group.context_overflow_reward}, no stop token {group.failed_parse_reward}",
    ]
    ordering = await game_ordering(group)
    lines += ["  " + line for line in ordering.lines()]
    return lines, ordering.held is not False


def prefix_report(rollout: GroupRollout) -> list[tuple[int, bool, int]]:
    """Per env of a rollout: (env index, every observation extends the previous one
    followed by its sampled tokens, number of observations).

    Example::

        # not run: `rollout` is a GroupRollout of a multi-turn env
        prefix_report(rollout)  # [(0, True, 3), (1, True, 1)]
    """
    out = []
    for index, trajectory in enumerate(rollout.trajectories):
        steps = trajectory.transitions
        ok = all(
            after.ob[: len(before.ob) + len(before.ac.tokens)] == [*before.ob, *before.ac.tokens]
            for before, after in itertools.pairwise(steps)
        )
        out.append((index, ok, len(steps)))
    return out


def renderer_label(renderer: Any) -> str:
    """Which renderer rendered, and over whose chat template when that could mislead.

    The ``qwen3`` renderers render with the tokenizer's own template: over a
    template that is not Qwen3's (no ``<think>`` in it, e.g. SmolLM2's ChatML) the
    prompt is that template's text, and the label says so.

    Example::

        renderer_label(get_renderer("qwen3", "mint-envkit/tiny-qwen3"))  # 'qwen3'
    """
    template = getattr(renderer.tokenizer, "chat_template", None) or ""
    if renderer.name.startswith("qwen3") and "<think>" not in str(template):
        model = Path(str(getattr(renderer.tokenizer, "name_or_path", "?"))).name
        return f"{renderer.name} over the chat template of {model!r}, not a Qwen3 template"
    return str(renderer.name)


def prompt_lines(renderer: Any, text: str, tools: list[str]) -> list[str]:
    """The rendered prompt, which renderer and template wrote it, and where the tools went.

    Example::

        lines = prompt_lines(get_renderer("qwen3", "mint-envkit/tiny-qwen3"), "2 + 3?", [])
        lines[0]   # 'rendered prompt:'
    """
    lines = ["rendered prompt:", "  " + text.replace("\n", "\n  ")]
    model = getattr(renderer.tokenizer, "name_or_path", "?")
    where = ""
    if tools:  # an env without tools: nothing to say about where tools go
        where = "; " + (
            "tools go to the template's tools slot"
            if renderer.tools_in_template
            else "the template has no tools slot: the renderer writes tools into the system message"
        )
    lines.append(
        f"  (rendered by renderer {renderer.name!r} with the chat template of {model!r}{where})"
    )
    label = renderer_label(renderer)
    if label != renderer.name:
        lines.append(f"  (note: renderer {label}; the prompt above is that template's text)")
    if tools:
        lines.append(f"  tools visible in the prompt: {', '.join(tools)}")
    return lines


def group_lines(
    report: GroupReport, renderer: Any, prompt: str | None, tools: list[str] | None = None
) -> list[str]:
    """A scripted group: its prompt (when given), then each reply's reward, parse status
    and metrics, or the group's error.

    Example::

        # not run: `report` is a GroupReport of a scripted group
        print("\\n".join(group_lines(report, group.renderer(), None)))
    """
    lines = [f"--- group {report.index}"]
    if prompt is not None:
        lines += prompt_lines(renderer, prompt, tools or [])
    if report.error:
        return [*lines, f"ERROR: {report.error}"]
    for reply, reward, logs, metrics in zip(
        report.replies, report.rewards, report.logs, report.metrics, strict=True
    ):
        # an env whose reward checks no answer logs parse_status None
        status = logs.get("parse_status") or logs.get("end") or "-"
        # the env's metrics, zeros too (a wrong reply: correct 0.0); the token env's flags when set
        shown = {k: v for k, v in metrics.items() if v or k not in TOKEN_ENV_FLAGS}
        lines.append(f"  reply {reply!r:30.30} reward {reward:+.3f}  parse {status:<14} {shown}")
    return lines


def transcript_lines(rollout: GroupRollout, renderer: Any) -> list[str]:
    """Every env's episode as the model saw it: each sampled reply and what the env added.

    Example::

        # not run: `rollout` is a GroupRollout of a multi-turn env
        print("\\n".join(transcript_lines(rollout, group.renderer())))
    """
    decode = renderer.tokenizer.decode
    lines = []
    for index, trajectory in enumerate(rollout.trajectories):
        lines.append(f"  env {index} transcript:")
        steps = trajectory.transitions
        for turn, step in enumerate(steps):
            lines.append(f"    [turn {turn + 1}] assistant: {decode(step.ac.tokens)!r}")
            if turn + 1 < len(steps):
                seen = len(step.ob) + len(step.ac.tokens)
                lines.append(f"    [turn {turn + 1}] env: {decode(steps[turn + 1].ob[seen:])!r}")
    return lines
