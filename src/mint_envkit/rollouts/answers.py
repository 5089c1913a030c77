"""Answer figures of an evaluation: the best trivial baseline, answer diversity, collapse.

Correctness alone cannot tell learning from a shortcut. On a yes/no env whose references
are 57.5% "no", a model that answers "no" to everything is 57.5% correct; on "which word
comes first, 'pear' or 'apple'?" a model that always takes the second word is right half
the time. Beside correctness an evaluation therefore reports, over the same problems, the
:class:`~mint_envkit.runs.record.AnswerFigures` (the run record's, which names them):

- ``baseline_correct`` and ``baseline_name``: the best policy of a
  family that does not read the question's meaning (a constant answer, the candidate
  the prompt offers at a position, a uniform pick among them; see
  :mod:`mint_envkit.rollouts.baselines`), each guess judged the way the env judges a
  reply: written in the env's format and scored through its parser, check and reward
  (:func:`~mint_envkit.rollouts.judging.judged_answers`; an env whose reward needs a
  model or a sandbox: by its ``check``, and where that says nothing, by
  :func:`answer_key`).
- ``judged_by``: what "right" means in these figures: ``correct`` (the env's
  own ``correct``) or ``reward`` (the env reports none, as a plain-function reward:
  a reply is right when it earns what the correct reply earns), and then
  ``reward_correct``, the share of replies right by that rule.
- ``beats_baseline``: correctness beats that baseline beyond noise (a
  one-sided paired test over problems, :func:`~mint_envkit.rollouts.baselines.beats`).
- ``distinct``, ``entropy`` (nats), ``top_share``: how many
  distinct parsed answers, their entropy, and the share of all replies taken by the
  most common value (an unparsed reply counts as the value ``None``); ``top``
  is that value.
- ``position``, ``position_share``, ``position_concentrated``:
  the position among the prompt's candidates the answers take most, its share, and
  whether they concentrate there while the references do not.
- ``truncated``: the share of replies cut off at the token limit.
- ``concentrated``: the most common value is an answer (not the
  unparsed replies: that is a format failure, shown by the parse and truncation rates)
  and ``top_share >= 0.8``, while the references take at least two values and the most
  common reference's share is below 0.8.
- ``collapse``: the answers concentrate on one value or one position,
  or correctness is above 0 and not above the baseline (a trivial policy explains it).

The computation (:func:`answer_figures`) is pure; :func:`rollout_answers` reads its
input from rollouts.

Example::

    from mint_envkit.rollouts.answers import AnswerGroup, answer_figures

    groups = [AnswerGroup(reference="no", parsed=["no"], correct=[True]),
              AnswerGroup(reference="yes", parsed=["no"], correct=[False])]
    answer_figures(groups).collapse   # True
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.envs.base import MessageEnv
from mint_envkit.errors import ConfigError
from mint_envkit.parsers import as_number
from mint_envkit.rollouts.baselines import beats, best_baseline, position_figures
from mint_envkit.rollouts.types import GroupRollout, Trajectory
from mint_envkit.runs.record import AnswerFigures

CONCENTRATED_SHARE = 0.8
"""The share of replies on one value (and the most common reference's ceiling) of the rule.

Example::

    # not run: needs the answer figures of an evaluation
    answer_figures(groups).top_share >= CONCENTRATED_SHARE
"""


def answer_key(value: Any) -> str | None:
    """How answers are grouped: one number by its value, text by its words; None stays None.

    Used for the distinct answers and the references, and for the baseline when the
    env has no ``check``. Case and punctuation count, as in the default check.

    Example::

        answer_key(" 1,000 "), answer_key("5.0"), answer_key("no  way"), answer_key(None)
        # ('1000', '5', 'no way', None)
    """
    if value is None:
        return None
    text = " ".join(str(value).split())
    number = as_number(text)
    return text if number is None else number


def _same_length(name: str):
    def check(instance: AnswerGroup, _attribute: Any, value: list[Any]) -> None:
        if value and len(value) != len(instance.parsed):
            raise ConfigError(
                f"AnswerGroup.{name} has {len(value)} entries for {len(instance.parsed)} "
                f"replies; give one per reply, or none (unknown)"
            )

    return check


@attrs.frozen
class AnswerGroup:
    """One problem's replies, as the answer figures read them.

    Attributes:
        reference: the problem's reference answer (None when unknown).
        parsed: each reply's parsed answer; None for a reply that did not parse.
        correct: each reply's correctness, or empty when the env reports none.
        truncated: whether each reply was cut off at the token limit (empty: none was).
        check: the env's ``check(parsed, answer) -> bool``, used for the baseline's
            guesses that ``verdicts`` does not hold; None (or a check that returns
            None) compares :func:`answer_key`.
        reports_parsed: False when the env logs no parsed answers (then
            ``parsed`` is all None and says nothing about diversity); the
            diversity figures are None unless some group reports them.
        prompt: the problem's question as the model saw it (the last user message),
            where the positional baselines find their candidates.
        rewards: each reply's total reward (empty: unknown).
        verdicts: the env's verdict on each guess of the baselines, judged through its
            whole scoring path (:func:`~mint_envkit.rollouts.judging.judged_answers`);
            None: not judged so (the baselines then use ``check``).
        judged_by: what ``correct`` and ``verdicts`` mean: ``correct`` (the env's
            own) or ``reward`` (earning the correct reply's reward); None: unknown.

    Example::

        AnswerGroup(reference="B", parsed=["B", None], correct=[True, False],
                    truncated=[False, True])
    """

    reference: Any = None
    parsed: list[str | None] = attrs.field(factory=list, converter=list)
    correct: list[bool | None] = attrs.field(
        factory=list, converter=list, validator=_same_length("correct")
    )
    truncated: list[bool] = attrs.field(
        factory=list, converter=list, validator=_same_length("truncated")
    )
    check: Callable[[str, Any], Any] | None = attrs.field(default=None, eq=False)
    reports_parsed: bool = True
    prompt: str = ""
    rewards: list[float] = attrs.field(
        factory=list, converter=list, validator=_same_length("rewards")
    )
    verdicts: Mapping[str, bool | None] | None = attrs.field(default=None, eq=False)
    judged_by: str | None = None


def agrees(group: AnswerGroup, guess: str) -> bool:
    """Would the answer ``guess`` be right on ``group``, as the env judges it?

    The env's verdict in ``group.verdicts`` (the guess in the env's format, through its
    parser, check and reward; a guess the env raised on is not right); without one, the
    env's ``check(guess, reference)`` when it gives a verdict (a bool or a number); else,
    or when it raises on a foreign answer, :func:`answer_key` equality.

    Example::

        agrees(AnswerGroup(reference="1,000"), "1000"), agrees(AnswerGroup(reference="no"), "No")
        # (True, False)
    """
    if group.verdicts is not None and guess in group.verdicts:
        return bool(group.verdicts[guess])
    if group.check is not None:
        try:
            verdict = group.check(guess, group.reference)
        except Exception:  # an env's check may fail on a foreign answer
            verdict = None
        if inspect.iscoroutine(verdict):
            verdict.close()
        elif isinstance(verdict, bool | int | float):
            return bool(verdict)
    return answer_key(group.reference) == answer_key(guess)


def _correct(groups: Sequence[AnswerGroup], n: int) -> float | None:
    flags = [flag for g in groups for flag in g.correct]
    if len(flags) != n or any(flag is None for flag in flags):
        return None
    return sum(bool(flag) for flag in flags) / n


def _diversity(groups: Sequence[AnswerGroup], n: int) -> dict[str, Any]:
    """distinct, entropy, top_share and top over every reply (None is a value for top_share)."""
    keys: list[str | None] = []
    spelled: dict[str | None, str | None] = {None: None}
    for group in groups:
        for value in group.parsed:
            key = answer_key(value)
            keys.append(key)
            spelled.setdefault(key, None if value is None else str(value).strip())
    counts = Counter(keys)
    answered = {key: count for key, count in counts.items() if key is not None}
    total = sum(answered.values())
    entropy = sum(c / total * math.log(total / c) for c in answered.values()) if total else 0.0
    top_key, top_count = counts.most_common(1)[0]
    return {
        "distinct": len(answered),
        "entropy": entropy,
        "top_share": top_count / n,
        "top": spelled[top_key],
    }


def _concentrated(groups: Sequence[AnswerGroup], top_share: float) -> bool:
    references: Counter[str] = Counter()
    for group in groups:
        key = answer_key(group.reference)
        if key is not None:
            references[key] += len(group.parsed)
    if len(references) < 2:
        return False
    reference_share = max(references.values()) / sum(references.values())
    return top_share >= CONCENTRATED_SHARE and reference_share < CONCENTRATED_SHARE


def _per_problem_correct(groups: Sequence[AnswerGroup]) -> list[float] | None:
    if any(not g.correct or any(f is None for f in g.correct) for g in groups):
        return None
    return [sum(bool(f) for f in g.correct) / len(g.correct) for g in groups]


def answer_figures(groups: Sequence[AnswerGroup]) -> AnswerFigures:
    """The answer figures of these groups.

    A figure that cannot be computed is None: the baseline when a problem has no
    reference answer; ``beats_baseline`` also when a reply has no ``correct``; the
    diversity figures and ``concentrated`` when the env logs no parsed answers; the
    position figures when too few answers name a candidate of the prompt; every
    figure when there are no replies. ``collapse`` is True when ``concentrated`` or
    ``position_concentrated`` is, or when correctness (over the same replies) is
    above 0 and not above the baseline.

    Example::

        no, yes = (AnswerGroup(reference=r, parsed=["no"], correct=[r == "no"])
                   for r in ("no", "yes"))
        figures = answer_figures([no, no, yes])
        figures.baseline_correct, figures.baseline_name   # (0.666..., "constant 'no'")
        figures.collapse   # True: correct 2/3 is the always-"no" baseline
    """
    groups = [g for g in groups if g.parsed]
    n = sum(len(g.parsed) for g in groups)
    if n == 0:
        return AnswerFigures()
    out: dict[str, Any] = {"truncated": sum(sum(bool(t) for t in g.truncated) for g in groups) / n}
    baseline = best_baseline(groups)
    correct = _correct(groups, n)
    if baseline is not None:
        out.update(baseline_correct=baseline.correct, baseline_name=baseline.name)
    reasons: list[bool] = []
    if any(g.reports_parsed for g in groups):
        out.update(_diversity(groups, n))
        # Unparsed replies are a format failure (shown by the parse and truncation
        # rates), not a collapse onto one answer.
        out["concentrated"] = out["top"] is not None and _concentrated(groups, out["top_share"])
        reasons.append(out["concentrated"])
        out.update(position_figures(groups))
        reasons.append(out.get("position_concentrated") is True)
    bases = {g.judged_by for g in groups}
    out["judged_by"] = next((b for b in ("reward", "correct") if b in bases), None)
    if out["judged_by"] == "reward":
        out["reward_correct"] = correct
    model = _per_problem_correct(groups)
    if baseline is not None and correct is not None and model is not None:
        out["beats_baseline"] = beats(model, baseline.per_problem)[0]
        reasons.append(0.0 < correct <= baseline.correct)
    out["collapse"] = any(reasons) if reasons else None
    return AnswerFigures(**out)


def success_figures(
    rollouts: Sequence[GroupRollout], metric: str, baseline: Any | None
) -> dict[str, Any]:
    """A game's answer figures: the share of its episodes won by ``metric`` (each judged
    by :func:`~mint_envkit.rollouts.judging.is_right`, the one rule), beside ``baseline``,
    the best trivial game policy (a
    :class:`~mint_envkit.rollouts.game_policies.GameBaseline` played on the same
    problems, in the same order), whether it beats it beyond noise and whether success
    above 0 is no more than it (``collapse``).

    Example::

        # not run: needs a game's rollouts and its baseline
        success_figures(rollouts, "solved", best)["success"]   # 0.25
    """
    from mint_envkit.rollouts.judging import ReplyScore, is_right

    per_problem: list[float] = []
    won = episodes = 0
    for rollout in rollouts:
        if rollout.error is not None or not rollout.trajectories:
            continue
        verdicts = [
            bool(
                is_right(
                    ReplyScore.of_step("", t.total_reward, t.metrics, {}, success=metric), None
                )
            )
            for t in rollout.trajectories
        ]
        per_problem.append(sum(verdicts) / len(verdicts))
        won, episodes = won + sum(verdicts), episodes + len(verdicts)
    out: dict[str, Any] = {
        "success_metric": metric,
        "success": won / episodes if episodes else None,
    }
    if baseline is None or baseline.success is None or not episodes:
        return out
    out["baseline_correct"], out["baseline_name"] = baseline.success, baseline.name
    if len(per_problem) == len(baseline.per_problem):
        out["beats_baseline"] = beats(per_problem, baseline.per_problem)[0]
    out["collapse"] = 0.0 < out["success"] <= baseline.success
    return out


def collapse_note(figures: AnswerFigures, correct: float | None) -> str | None:
    """A one-line warning when ``figures`` flag a collapse, else None.

    Example::

        collapse_note(answer_figures(groups), 0.575)
        # "answers collapse: 100% of replies are 'no'; correct 0.575 does not beat ..."
    """
    if not figures.collapse:
        return None
    parts = []
    if figures.concentrated and figures.top_share is not None:
        # a figure read back from an older run's metrics has no top answer
        what = "one answer" if figures.top is None else f"{_short(figures.top)!r}"
        parts.append(f"{figures.top_share:.0%} of replies are {what}")
    if figures.position_concentrated and figures.position_share is not None:
        parts.append(
            f"{figures.position_share:.0%} of the answers are the "
            f"{figures.position} candidate of the prompt (the references: "
            f"{figures.position_reference_share or 0.0:.0%})"
        )
    baseline = figures.baseline_correct
    what = "correct"
    if correct is None and figures.reward_correct is not None:
        correct, what = figures.reward_correct, "earning the correct reply's reward"
    if figures.success_metric is not None:  # a game: its success beside its trivial policies
        correct, what = figures.success, figures.success_metric
    if correct is not None and baseline is not None and 0.0 < correct <= baseline:
        name = figures.baseline_name or "a trivial policy"
        parts.append(
            f"{what} {correct:.3f} does not beat the best trivial baseline {baseline:.3f} ({name})"
        )
    return "answers collapse: " + "; ".join(parts)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message_env(group: Any) -> MessageEnv | None:
    make = getattr(group, "make_message_env", None)  # a builder of another kind has none
    if not callable(make):
        return None
    try:
        env = make()
    except Exception:  # without an env the baseline compares answer keys
        return None
    return env if isinstance(env, MessageEnv) else None


def _reference(env: MessageEnv | None, group: Any, rollout: GroupRollout) -> Any:
    try:
        answer = env.answer if env is not None else None
    except Exception:  # an env's answer property may fail
        answer = None
    problem = getattr(group, "problem", None)
    if answer is None and isinstance(problem, Mapping):
        answer = problem.get("answer")
    if answer is None:
        logged = [t.transitions[-1].logs.get("answer") for t in rollout.trajectories]
        answer = next((a for a in logged if a is not None), None)
    return answer


def _reply(trajectory: Trajectory) -> tuple[str | None, bool | None, bool, bool, bool, float]:
    """(parsed answer, correct, truncated, the env logged a parsed answer, cut off unscored,
    total reward)."""
    last = trajectory.transitions[-1]
    logs, metrics = last.logs, trajectory.metrics
    value = logs.get("parsed")
    if value is not None and logs.get("parse_status") not in (None, "ok"):
        value = None
    correct = metrics["correct"] > 0.5 if "correct" in metrics else None
    if "truncated" in metrics:
        truncated = metrics["truncated"] > 0.5
    else:
        truncated = last.ac.stop_reason == "length"
    unscored = logs.get("end") == "truncated"
    parsed = None if value is None else str(value)
    return parsed, correct, truncated, "parsed" in logs, unscored, trajectory.total_reward


def _question(rollout: GroupRollout) -> str:
    """The last user message of the opening conversation: the question the model saw."""
    for message in reversed(rollout.messages):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return content
    return ""


def rollout_answers(
    rollouts: Sequence[GroupRollout], groups: Sequence[Any] | None = None
) -> list[AnswerGroup]:
    """The :class:`AnswerGroup` of each group that ran, read from its rollout.

    ``groups`` are the group builders the rollouts came from, by position. From each
    a message env is made once: its ``answer`` is the reference (else the problem's
    ``answer``, else the ``answer`` the env logged) and its ``check`` judges the
    baselines' answers (:func:`~mint_envkit.rollouts.judging.judged_answers` judges
    them through the env's whole scoring path instead); the question is the opening's
    last user message. Replies: the last step's ``parsed`` log (None unless its
    ``parse_status`` is ``ok``), the ``correct`` and ``truncated`` metrics (else the
    last reply's stop reason), the total reward. A group reports parsed answers when
    one of its replies logged ``parsed``, or when every reply was cut off before scoring
    (all unparsed).

    Example::

        # not run: needs a sampling client (a running backend)
        groups = test_data.groups()
        batch = await sample_batch(config, client, groups, salt=-1)
        answer_figures(rollout_answers(batch.rollouts, groups))
    """
    return [answer for answer, _group in answer_pairs(rollouts, groups)]


def answer_pairs(
    rollouts: Sequence[GroupRollout], groups: Sequence[Any] | None = None
) -> list[tuple[AnswerGroup, Any]]:
    """:func:`rollout_answers`, each beside the group it came from (None when unknown).

    Example::

        # not run: needs rollouts and their groups
        [(answer.reference, group.index) for answer, group in answer_pairs(rollouts, groups)]
    """
    out: list[tuple[AnswerGroup, Any]] = []
    for position, rollout in enumerate(rollouts):
        episodes = [t for t in rollout.trajectories if t.transitions]
        if rollout.error is not None or not episodes:
            continue
        group = groups[position] if groups is not None and position < len(groups) else None
        env = _message_env(group)
        replies = [_reply(t) for t in episodes]
        correct = [r[1] for r in replies]
        answer = AnswerGroup(
            reference=_reference(env, group, rollout),
            parsed=[r[0] for r in replies],
            correct=[] if all(flag is None for flag in correct) else correct,
            truncated=[r[2] for r in replies],
            check=None if env is None else env.check,
            # a reply cut off before scoring is unparsed whatever the env logs
            reports_parsed=any(r[3] for r in replies) or all(r[4] for r in replies),
            prompt=_question(rollout),
            rewards=[r[5] for r in replies],
            judged_by=None if all(flag is None for flag in correct) else "correct",
        )
        out.append((answer, group))
    return out
