"""An evaluation's figures, computed once: means, pass@k, answers, baselines, and its line.

:func:`evaluation_figures` is the :class:`~mint_envkit.runs.record.Figures` of one
evaluation (what ``summary.json`` holds beside the settings): the per-problem figures of
:mod:`mint_envkit.evaluation.metrics` and the answer figures of
:mod:`mint_envkit.rollouts.answers` (the best trivial baseline, diversity, positions,
collapse). :func:`headline` says it in one line, the same wherever it is printed.

Example::

    from mint_envkit.evaluation.figures import headline
    from mint_envkit.runs.record import AnswerFigures, Figures

    headline(Figures(correct=0.45, parse_failure_rate=0.0, truncated_rate=0.05,
                     answers=AnswerFigures(baseline_correct=0.05, baseline_name="constant '31'",
                                           beats_baseline=True, distinct=30)))
    # "correct 45.0% (best trivial baseline 5.0%, constant '31': beats it), parsed 100.0%, ..."
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.envs.base import success_name
from mint_envkit.evaluation.metrics import ProblemResult, summarize
from mint_envkit.rollouts.answers import answer_figures, collapse_note, success_figures
from mint_envkit.rollouts.game_moves import is_game
from mint_envkit.rollouts.game_policies import best_game_baseline, game_baselines
from mint_envkit.rollouts.judging import judged_answers
from mint_envkit.rollouts.tool_figures import tool_figures
from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import Figures


async def evaluation_figures(
    results: Sequence[ProblemResult],
    rollouts: Sequence[GroupRollout],
    groups: Sequence[Any],
    samples: int,
) -> Figures:
    """The figures of one evaluation: :func:`~mint_envkit.evaluation.metrics.summarize`
    and :func:`~mint_envkit.rollouts.answers.answer_figures` (the baselines' guesses
    judged through the env, :func:`~mint_envkit.rollouts.judging.judged_answers`), in
    one value.

    Example::

        # not run: needs an evaluation's results and rollouts
        (await evaluation_figures(results, rollouts, groups, samples=4)).answers.baseline_name
    """
    answers = answer_figures(await judged_answers(rollouts, groups))
    env = _message_env(groups)
    if env is not None and is_game(env):  # a game: its success beside its trivial policies
        best = best_game_baseline(await game_baselines(groups))
        answers = attrs.evolve(answers, **success_figures(rollouts, success_name(env), best))
    return attrs.evolve(summarize(results, samples), answers=answers, tools=tool_figures(rollouts))


def _message_env(groups: Sequence[Any]) -> Any:
    """The first group's message env (None when the groups make none)."""
    make = getattr(groups[0], "make_message_env", None) if groups else None
    try:
        return None if make is None else make()
    except Exception:  # an env that cannot be made: its rollouts say why
        return None


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def headline(figures: Figures) -> str:
    """An evaluation in one line: correctness beside the best trivial baseline (and
    whether it beats it beyond noise), parse and truncation rates, distinct answers,
    then the collapse note when there is one.

    Example::

        from mint_envkit.runs.record import AnswerFigures, Figures

        headline(Figures(correct=0.525, answers=AnswerFigures(
            baseline_correct=0.5, baseline_name="second quoted", beats_baseline=False)))
        # 'correct 52.5% (best trivial baseline 50.0%, second quoted: does not beat it), ...'
    """
    answers, permuted = figures.answers, figures.counterfactual
    text = f"correct {_pct(figures.correct)}"
    if figures.correct is None and answers.reward_correct is not None:
        # a plain-function reward reports no `correct`: right is earning its reward
        text = f"earning the correct reply's reward {_pct(answers.reward_correct)}"
    game = answers.success_metric is not None
    if game:  # a game: its success metric, beside the reward
        text = f"{answers.success_metric} {_pct(answers.success)}"
    if answers.baseline_correct is not None:
        verdict = {True: "beats it", False: "does not beat it"}.get(
            answers.beats_baseline, "not compared"
        )
        name = answers.baseline_name or "trivial policy"
        kind = "trivial game policy" if game else "trivial baseline"
        text += f" (best {kind} {_pct(answers.baseline_correct)}, {name}: {verdict})"
    if game and figures.mean_reward is not None:
        text += f", mean reward {figures.mean_reward:+.3f}"
    text += f", parsed {_pct(figures.parsed)}, truncated {_pct(figures.truncated_rate)}"
    if answers.distinct is not None:
        text += f", {answers.distinct} distinct answers"
    tools = figures.tools
    if tools.calls_per_episode is not None:
        text += (
            f"; tool calls {tools.calls_per_episode:.2f}/episode, {_pct(tools.calling)} of "
            f"episodes call a tool, {_pct(tools.valid)} of calls valid, {_pct(tools.errors)} "
            f"errors ({_pct(tools.timeouts)} timeouts)"
        )
    if permuted.pairs:
        text += (
            f"; with the offered candidates permuted: correct "
            f"{_pct(permuted.correct)}, the answers follow the content "
            f"{_pct(permuted.same_content)}, the position {_pct(permuted.same_position)}"
        )
        if permuted.position_following:
            text += " (POSITION-FOLLOWING)"
    note = collapse_note(answers, figures.correct)
    return text + (f"; {note}" if note else "")
