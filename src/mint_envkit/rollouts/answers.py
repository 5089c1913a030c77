"""Answer figures of an evaluation: the constant-answer baseline, answer diversity, collapse.

Correctness alone cannot tell learning from majority-class collapse. On a yes/no env
whose references are 57.5% "no", a model that answers "no" to everything is 57.5%
correct. Beside correctness an evaluation therefore reports, over the same problems:

- ``answers/baseline_correct``: the correctness of always giving the single most common
  reference answer (checked with the env's own ``check``; where that says nothing,
  None as :meth:`MessageEnv.check <mint_envkit.MessageEnv.check>` does by default, by
  :func:`answer_key`); among references tied for most common, the best of the first three.
- ``answers/distinct``, ``answers/entropy`` (nats), ``answers/top_share``: how many
  distinct parsed answers, their entropy, and the share of all replies taken by the
  most common value (an unparsed reply counts as the value ``None``); ``answers/top``
  is that value.
- ``answers/truncated``: the share of replies cut off at the token limit.
- ``answers/concentrated``: 1.0 when the most common value is an answer (not the
  unparsed replies: that is a format failure, shown by the parse and truncation rates)
  and ``top_share >= 0.8``, while the references take at least two values and the most
  common reference's share is below 0.8.
- ``answers/beats_baseline``: 1.0 when correctness is above the baseline.
- ``answers/collapse``: 1.0 when concentrated, or when correctness does not beat the
  baseline while it is above 0 (a constant answer explains it).

The computation (:func:`answer_figures`) is pure; :func:`rollout_answers` reads its
input from rollouts, and :func:`answer_metrics` gives the loop's prefixed metrics.

Example::

    from mint_envkit.rl.answers import AnswerGroup, answer_figures

    groups = [AnswerGroup(reference="no", parsed=["no"], correct=[True]),
              AnswerGroup(reference="yes", parsed=["no"], correct=[False])]
    answer_figures(groups)["answers/collapse"]   # 1.0
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
from mint_envkit.rl.types import GroupRollout, Trajectory

ANSWER_KEYS = (
    "answers/baseline_correct",
    "answers/distinct",
    "answers/entropy",
    "answers/top_share",
    "answers/truncated",
    "answers/concentrated",
    "answers/beats_baseline",
    "answers/collapse",
)
"""The numeric answer figures, in report order (``answers/top``, a string, is not among them).

Example::

    "answers/collapse" in ANSWER_KEYS   # True
"""

CONCENTRATED_SHARE = 0.8
"""The share of replies on one value (and the most common reference's ceiling) of the rule.

Example::

    # not run: needs the answer figures of an evaluation
    figures["answers/top_share"] >= CONCENTRATED_SHARE
"""

_CANDIDATES = 3  # references tied for most common tried as the constant answer


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
        check: the env's ``check(parsed, answer) -> bool``, used for the baseline;
            None (or a check that returns None) compares :func:`answer_key`.
        reports_parsed: False when the env logs no parsed answers (then
            ``parsed`` is all None and says nothing about diversity); the
            diversity figures are None unless some group reports them.

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


def _agrees(group: AnswerGroup, guess: str, key: str) -> bool:
    """Would the constant answer ``guess`` be right on ``group``, by the env's check?"""
    if group.check is not None:
        try:
            verdict = group.check(guess, group.reference)
        except Exception:  # an env's check may fail on a foreign answer
            verdict = None
        if inspect.iscoroutine(verdict):
            verdict.close()
        elif isinstance(verdict, bool | int | float):
            return bool(verdict)
    return answer_key(group.reference) == key


def _baseline(groups: Sequence[AnswerGroup], n: int) -> float | None:
    """The best correctness of always giving one of the most common reference answers."""
    counts: Counter[str] = Counter()
    spelled: dict[str, Any] = {}
    for group in groups:
        key = answer_key(group.reference)
        if key is None:
            return None  # a problem without a reference: no honest baseline
        counts[key] += len(group.parsed)
        spelled.setdefault(key, group.reference)
    if not counts:
        return None
    most = max(counts.values())
    candidates = [key for key, count in counts.items() if count == most][:_CANDIDATES]
    best = 0
    for key in candidates:
        guess = str(spelled[key]).strip()
        best = max(best, sum(len(g.parsed) for g in groups if _agrees(g, guess, key)))
    return best / n


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
        "answers/distinct": len(answered),
        "answers/entropy": entropy,
        "answers/top_share": top_count / n,
        "answers/top": spelled[top_key],
    }


def _concentrated(groups: Sequence[AnswerGroup], top_share: float) -> float:
    references: Counter[str] = Counter()
    for group in groups:
        key = answer_key(group.reference)
        if key is not None:
            references[key] += len(group.parsed)
    if len(references) < 2:
        return 0.0
    reference_share = max(references.values()) / sum(references.values())
    return float(top_share >= CONCENTRATED_SHARE and reference_share < CONCENTRATED_SHARE)


def answer_figures(groups: Sequence[AnswerGroup]) -> dict[str, Any]:
    """The answer figures of these groups: :data:`ANSWER_KEYS` and ``answers/top``.

    A figure that cannot be computed is None: the baseline when a problem has no
    reference answer; ``beats_baseline`` also when a reply has no ``correct``; the
    diversity figures and ``concentrated`` when the env logs no parsed answers;
    every figure when there are no replies. ``collapse`` is 1.0 when
    ``concentrated`` is, or when correctness (over the same replies) is above 0 and
    not above the baseline.

    Example::

        no, yes = (AnswerGroup(reference=r, parsed=["no"], correct=[r == "no"])
                   for r in ("no", "yes"))
        figures = answer_figures([no, no, yes])
        figures["answers/baseline_correct"], figures["answers/top"]   # (0.666..., 'no')
        figures["answers/collapse"]   # 1.0: correct 2/3 is the always-"no" baseline
    """
    groups = [g for g in groups if g.parsed]
    out: dict[str, Any] = dict.fromkeys((*ANSWER_KEYS, "answers/top"))
    n = sum(len(g.parsed) for g in groups)
    if n == 0:
        return out
    out["answers/truncated"] = sum(sum(bool(t) for t in g.truncated) for g in groups) / n
    baseline = _baseline(groups, n)
    correct = _correct(groups, n)
    out["answers/baseline_correct"] = baseline
    if any(g.reports_parsed for g in groups):
        out.update(_diversity(groups, n))
        # Unparsed replies are a format failure (shown by the parse and truncation
        # rates), not a collapse onto one answer.
        top_is_an_answer = out.get("answers/top") is not None
        concentrated = _concentrated(groups, out["answers/top_share"])
        out["answers/concentrated"] = concentrated if top_is_an_answer else 0.0
    reasons = [] if out["answers/concentrated"] is None else [out["answers/concentrated"] == 1.0]
    if baseline is not None and correct is not None:
        out["answers/beats_baseline"] = float(correct > baseline)
        reasons.append(0.0 < correct <= baseline)
    out["answers/collapse"] = float(any(reasons)) if reasons else None
    return out


def answer_metrics(figures: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """The numeric answer figures as the loop's metrics, ``<prefix>/all/answers/...``.

    Figures that could not be computed (None, see :func:`answer_figures`) are left out.

    Example::

        # not run: needs an evaluation's rollouts and groups
        answer_metrics(answer_figures(rollout_answers(rollouts, groups)), "test/env")
        # {'test/env/all/answers/baseline_correct': 0.575, ..., 'test/env/all/answers/collapse': 1.0}
    """
    return {
        f"{prefix}/all/{key}": figures[key] for key in ANSWER_KEYS if figures.get(key) is not None
    }


def collapse_note(figures: Mapping[str, Any], correct: float | None) -> str | None:
    """A one-line warning when ``figures`` flag a collapse, else None.

    Example::

        collapse_note(answer_figures(groups), 0.575)
        # "answers collapse: 100% of replies are 'no'; correct 0.575 does not beat ..."
    """
    if figures.get("answers/collapse") != 1.0:
        return None
    parts = []
    if figures.get("answers/concentrated") == 1.0:
        share, top = figures["answers/top_share"], figures.get("answers/top")
        what = "unparsed" if top is None else f"{_short(top)!r}"
        parts.append(f"{share:.0%} of replies are {what}")
    baseline = figures.get("answers/baseline_correct")
    if correct is not None and baseline is not None and 0.0 < correct <= baseline:
        parts.append(
            f"correct {correct:.3f} does not beat the constant-answer baseline {baseline:.3f}"
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


def _reply(trajectory: Trajectory) -> tuple[str | None, bool | None, bool, bool, bool]:
    """(parsed answer, correct, truncated, the env logged a parsed answer, cut off unscored)."""
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
    return (None if value is None else str(value)), correct, truncated, "parsed" in logs, unscored


def rollout_answers(
    rollouts: Sequence[GroupRollout], groups: Sequence[Any] | None = None
) -> list[AnswerGroup]:
    """The :class:`AnswerGroup` of each group that ran, read from its rollout.

    ``groups`` are the group builders the rollouts came from, by position. From each
    a message env is made once: its ``answer`` is the reference (else the problem's
    ``answer``, else the ``answer`` the env logged) and its ``check`` judges the
    constant answer. Replies: the last step's ``parsed`` log (None unless its
    ``parse_status`` is ``ok``), the ``correct`` and ``truncated`` metrics (else the
    last reply's stop reason). A group reports parsed answers when one of its replies
    logged ``parsed``, or when every reply was cut off before scoring (all unparsed).

    Example::

        # not run: needs a sampling client (a running backend)
        groups = test_data.groups()
        batch = await sample_batch(config, client, groups, salt=-1)
        answer_figures(rollout_answers(batch.rollouts, groups))
    """
    out: list[AnswerGroup] = []
    for position, rollout in enumerate(rollouts):
        episodes = [t for t in rollout.trajectories if t.transitions]
        if rollout.error is not None or not episodes:
            continue
        group = groups[position] if groups is not None and position < len(groups) else None
        env = _message_env(group)
        replies = [_reply(t) for t in episodes]
        correct = [r[1] for r in replies]
        out.append(
            AnswerGroup(
                reference=_reference(env, group, rollout),
                parsed=[r[0] for r in replies],
                correct=[] if all(flag is None for flag in correct) else correct,
                truncated=[r[2] for r in replies],
                check=None if env is None else env.check,
                # a reply cut off before scoring is unparsed whatever the env logs
                reports_parsed=any(r[3] for r in replies) or all(r[4] for r in replies),
            )
        )
    return out
