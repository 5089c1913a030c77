"""Shortcuts: what a policy can score without solving, held to what chance allows.

A reward can be honest and still teach nothing when the data gives the answer away.
Two findings, each measured against chance, never against a fixed share:

- **shortcut**: a trivial policy (:mod:`mint_envkit.rollouts.baselines`: a constant
  answer, an option by its position or its length, a number of the question by its
  position) is right far more often than a blind pick among the prompt's choices
  (:func:`~mint_envkit.rollouts.baselines.chance_levels`: 1/k where the reference is
  one of k offered choices, 1/2 for an open answer). Far means both: at least
  :data:`SHORTCUT_MARGIN` above the chance level, and a one-sided exact test (the
  number of problems it is right on, against the per-problem chances: a
  Poisson-binomial tail) at :data:`SHORTCUT_ALPHA`, Bonferroni-corrected over the
  distinct policies of its family (the positions and lengths of one list; the
  constants). A 4-option task whose third option is right on 7 of 10 problems fails
  (p = 0.0035 against 25%); a balanced yes/no task at 50% does not; a constant right on
  12 of 12 yes/no problems fails (p = 0.00024 against 50%).
- **leak**: the reference answer is written in the prompt outside the question (the
  system prompt, an earlier turn: a few-shot example that is the problem itself, a hint)
  on far more problems than another problem's answer is written there: the same test,
  against the share of the other problems' answers found in each problem's context (the
  chance that a value the context happens to hold is the answer; add-one smoothed, so a
  context that holds no other answer still leaves a chance).

An env whose task is the shortcut (copy a word, pick a span the prompt shows) declares
it (:attr:`MessageEnv.audit_shortcut <mint_envkit.MessageEnv.audit_shortcut>`): both
findings are then ``declared``, never a failure.

Example::

    from mint_envkit.auditing.shortcuts import tail_probability

    round(tail_probability([0.25] * 10, 7), 4), round(tail_probability([0.5] * 12, 12), 5)
    # (0.0035, 0.00024)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.auditing.report import Finding, percent, shown
from mint_envkit.envs.base import Message, MessageEnv
from mint_envkit.rollouts.baselines import Baseline

SHORTCUT_MARGIN = 0.25
"""How far above the chance level a trivial policy must be right to be a shortcut (also
the answer's excess share for a leak).

Example::

    0.70 - 0.25 >= SHORTCUT_MARGIN   # True: the third of 4 options right 70% of the time
"""

SHORTCUT_ALPHA = 0.05
"""The one-sided significance of a shortcut, shared (Bonferroni) by the distinct
policies of one family.

Example::

    SHORTCUT_ALPHA / 7   # the share of one of 7 positional policies of a list
"""

MIN_PROBLEMS = 5
"""Fewer audited problems than this: no shortcut or leak is called.

Example::

    MIN_PROBLEMS   # 5
"""


def tail_probability(chances: Sequence[float], hits: int) -> float:
    """The probability of at least ``hits`` successes among independent trials with
    these chances (the Poisson-binomial upper tail, computed exactly).

    Example::

        tail_probability([0.5, 0.5], 2), tail_probability([0.25] * 4, 0)   # (0.25, 1.0)
    """
    if hits <= 0:
        return 1.0
    counts = [1.0]  # counts[k]: the probability of k successes so far
    for p in chances:
        p = min(1.0, max(0.0, p))
        counts = [
            (counts[k] if k < len(counts) else 0.0) * (1 - p)
            + (counts[k - 1] * p if k >= 1 else 0.0)
            for k in range(len(counts) + 1)
        ]
    return min(1.0, sum(counts[hits:]))


@attrs.frozen
class Shortcut:
    """A trivial policy right far more often than chance allows.

    Attributes:
        name: the policy (``third option_text``, ``constant 'yes'``).
        hits: the problems it is right on; of: the problems audited.
        chance: the mean chance level over them.
        p: the one-sided exact test's p-value; threshold: what it had to be under.
        example: one of its right answers, e.g. ``'eagle'``.

    Example::

        Shortcut("third option_text", 7, 10, 0.25, 0.0035, 0.0071, "eagle").excess   # 0.45
    """

    name: str
    hits: int
    of: int
    chance: float
    p: float
    threshold: float
    example: str | None = None

    @property
    def excess(self) -> float:
        """How far its share right is above the chance level."""
        return self.hits / self.of - self.chance


def shortcuts(baselines: Sequence[Baseline]) -> list[Shortcut]:
    """The trivial policies of ``baselines`` that are shortcuts (module docstring),
    the most significant first; uniform picks are chance itself and never one.

    Example::

        from mint_envkit.rollouts.baselines import Baseline

        third = Baseline("third option", 0.7, (1.0,) * 7 + (0.0,) * 3, "option",
                         (0.25,) * 10, ("C",) * 10)
        [s.name for s in shortcuts([third])]   # ['third option']
    """
    families: dict[str, list[Baseline]] = {}
    for baseline in baselines:
        if baseline.family not in ("", "uniform") and baseline.chance:
            families.setdefault(baseline.family, []).append(baseline)
    found = []
    for members in families.values():
        tests = len({b.guesses or b.name for b in members})
        for baseline in members:
            n = len(baseline.per_problem)
            hits = round(sum(baseline.per_problem))
            if n < MIN_PROBLEMS or not hits:
                continue
            chance = sum(baseline.chance) / n
            p = tail_probability(baseline.chance, hits)
            threshold = SHORTCUT_ALPHA / tests
            if hits / n - chance >= SHORTCUT_MARGIN and p <= threshold:
                right = [
                    g
                    for g, v in zip(baseline.guesses, baseline.per_problem, strict=False)
                    if v >= 0.5 and g
                ]
                found.append(
                    Shortcut(baseline.name, hits, n, chance, p, threshold, next(iter(right), None))
                )
    return sorted(found, key=lambda s: (s.p, -s.excess))


def _quoted(name: str) -> str:
    return name if "'" in name else f"'{name}'"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _declared(env_name: str, reason: str | None) -> str:
    return f" (declared: {env_name}.audit_shortcut: {reason})" if reason else ""


def shortcut_finding(found: Sequence[Shortcut], declared: tuple[str, str | None]) -> Finding | None:
    """One finding for the shortcuts (``shortcut``, or ``declared`` with the env's
    reason); None when there is none. ``declared``: the env class's name and its
    :attr:`~mint_envkit.MessageEnv.audit_shortcut`.

    Example::

        one = Shortcut("constant 'yes'", 12, 12, 0.5, 0.00024, 0.0167, "yes")
        shortcut_finding([one], ("YesNoEnv", None)).kind   # 'shortcut'
    """
    if not found:
        return None
    first = found[0]
    constant = first.name.startswith("constant ")
    answers = f", e.g. {shown(first.example)}" if first.example and not constant else ""
    message = (
        f"the trivial policy {_quoted(first.name)} is right on {first.hits} of {first.of} problems "
        f"({percent(first.hits / first.of)}{answers}), where a blind pick among the prompt's "
        f"choices is right on {percent(first.chance)} (one-sided exact test p = "
        f"{_p(first.p)}, under {_p(first.threshold)}): a policy that never reads the "
        "question scores this well, so a model's correctness says little about what it "
        "learned; vary the answers (their positions, lengths, values) across problems"
    )
    if len(found) > 1:
        message += "; the same for " + ", ".join(_quoted(s.name) for s in found[1:6])
        message += f" and {len(found) - 6} more" if len(found) > 6 else ""
    env_name, reason = declared
    if reason:
        message += _declared(env_name, reason)
    else:
        message += "; if that is the task, declare it (MessageEnv.audit_shortcut with the reason)"
    return Finding(
        "declared" if reason else "shortcut", first.name, message, tuple(s.name for s in found)
    )


def _pattern(answer: str) -> re.Pattern[str] | None:
    text = " ".join(answer.split())
    if not text:
        return None
    return re.compile(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)", re.IGNORECASE)


_WHERE = {"system": "the system prompt", "user": "an earlier user turn"}


def context_of(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """The prompt outside the question: (where, text) of every message before the last
    user message (the system prompt, earlier turns; the tools' results too).

    Example::

        context_of([{"role": "system", "content": "Hint: 7."},
                    {"role": "user", "content": "3 + 4?"}])   # [('the system prompt', 'Hint: 7.')]
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    out = []
    for message in messages[: max(last, 0)]:
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            role = str(message.get("role"))
            out.append((_WHERE.get(role, f"an earlier {role} turn"), content))
    return out


@attrs.frozen
class Leak:
    """Answers written in the prompt outside the question.

    Attributes:
        hits: the problems whose own answer is there; of: the problems audited.
        chance: the mean share of other problems' answers found in a problem's context.
        p: the one-sided exact test's p-value.
        where: where the first hit was (``the system prompt``, ``an earlier assistant turn``).
        answer: that problem's answer; text: the message it is written in.

    Example::

        Leak(8, 8, 0.14, 1.5e-7, "an earlier assistant turn", "7", "7").excess   # 0.86
    """

    hits: int
    of: int
    chance: float
    p: float
    where: str
    answer: str
    text: str

    @property
    def excess(self) -> float:
        """How far the share of problems holding their own answer is above chance."""
        return self.hits / self.of - self.chance


def leak(answers: Sequence[str], contexts: Sequence[Sequence[tuple[str, str]]]) -> Leak | None:
    """The answers written in their problem's context far more often than other
    problems' answers are (module docstring), or None.

    Example::

        answers = ["7", "42", "90", "6", "100", "5"]
        hinted = [[("the system prompt", f"Hint: the result is {a}.")] for a in answers]
        leak(answers, hinted).hits, leak(answers, [[("the system prompt", "Be brief.")]] * 6)
        # (6, None)
    """
    n = len(answers)
    patterns = [_pattern(a) for a in answers]
    if n < MIN_PROBLEMS:
        return None
    own: list[tuple[str, str] | None] = []
    chances = []
    for i, context in enumerate(contexts):
        pattern = patterns[i]
        own.append(next((c for c in context if pattern and pattern.search(c[1])), None))
        others = [p for j, p in enumerate(patterns) if j != i and answers[j] != answers[i]]
        found = sum(1 for p in others if p and any(p.search(text) for _, text in context))
        chances.append((found + 1) / (len(others) + 2))  # smoothed: never a chance of 0
    hits = sum(o is not None for o in own)
    chance = sum(chances) / n
    p = tail_probability(chances, hits)
    if not hits or hits / n - chance < SHORTCUT_MARGIN or p > SHORTCUT_ALPHA:
        return None
    first = next(i for i, o in enumerate(own) if o is not None)
    where, text = own[first]  # type: ignore[misc]
    return Leak(hits, n, chance, p, where, answers[first], text)


def leak_finding(found: Leak | None, declared: tuple[str, str | None]) -> Finding | None:
    """The ``leak`` finding (``declared`` with the env's reason), or None.

    Example::

        one = Leak(8, 8, 0.0, 3.9e-3, "the system prompt", "7", "Hint: the result is 7.")
        leak_finding(one, ("HintEnv", None)).kind   # 'leak'
    """
    if found is None:
        return None
    env_name, reason = declared
    message = (
        f"the answer is written in the prompt outside the question on {found.hits} of "
        f"{found.of} problems (e.g. {shown(found.answer)} in {found.where}: "
        f"{shown(found.text, 80)}), where another problem's answer is found there on "
        f"{percent(found.chance)} (one-sided exact test p = {_p(found.p)}): a model learns "
        "to copy it instead of solving; keep the answer out of the system prompt, hints "
        "and few-shot turns (a few-shot example must not be the problem itself)"
    )
    message += (
        _declared(env_name, reason)
        if reason
        else "; if that is the task, declare it (MessageEnv.audit_shortcut with the reason)"
    )
    return Finding("declared" if reason else "leak", "prompt", message)


def declaration(env: Any) -> tuple[str, str | None]:
    """An env's class name and its :attr:`~mint_envkit.MessageEnv.audit_shortcut`.

    Example::

        declaration(None)   # ('the env', None)
    """
    if not isinstance(env, MessageEnv):
        return "the env", None
    cls = type(env)
    return cls.__name__, cls.audit_shortcut


async def prompt_findings(problems: Sequence[Any], baselines: Sequence[Baseline]) -> list[Finding]:
    """What the audited problems' prompts give away or ask for: a ``shortcut`` among
    ``baselines``, a ``leak`` of the answers, an ``unpaid_format``
    (:func:`~mint_envkit.auditing.formats.format_finding`), and what their answer key
    holds by mistake (``answer_key``: :mod:`~mint_envkit.auditing.answer_key`). ``problems`` are
    :class:`~mint_envkit.auditing.probes.AuditedProblem` values; a code env's are left
    to its own audit (:mod:`mint_envkit.auditing.code`).

    Example::

        # not run: `problems` and `baselines` come from an audit, built elsewhere
        [f.kind for f in await prompt_findings(problems, baselines)]   # ['shortcut']
    """
    from mint_envkit.auditing.answer_key import answer_key_finding
    from mint_envkit.auditing.formats import format_finding
    from mint_envkit.sandbox.env import CodeEnv

    env = next((p.env for p in problems if p.env is not None), None)
    if env is None or isinstance(env, CodeEnv):
        return []
    declared = declaration(env)
    with_answers = [p for p in problems if p.answer]
    found = [
        shortcut_finding(shortcuts(baselines), declared),
        leak_finding(
            leak([p.answer for p in with_answers], [context_of(p.messages) for p in with_answers]),
            declared,
        ),
        await format_finding(problems),
        answer_key_finding(
            [p.answer if p.group.problem.get("answer") is not None else None for p in problems]
        ),
    ]
    return [f for f in found if f is not None]
