"""The best trivial policy: the baseline every correctness figure is shown beside.

A model "learns" only if it beats what a policy that does not read the question's
meaning can get on the same problems. The family scored here, each guess judged the way
the env judges a reply (written in the env's format and scored through its parser, check
and reward; :mod:`mint_envkit.rollouts.judging`):

- ``constant 'X'``: always the same answer (each of the most common references);
- ``<position> <kind>``: the candidate the prompt offers at a position, ``first``,
  ``second`` or ``last`` of each kind of :mod:`~mint_envkit.parsers.candidates`
  (quoted strings, lettered or numbered options and their texts, bullet items, the
  members of an "X, Y or Z" phrase, numbers, words);
- ``uniform <kind>``: a uniform pick among the prompt's candidates of a kind (its
  expected correctness).

:func:`best_baseline` picks the best by correctness. :func:`beats` decides whether a
model's correctness beats it beyond noise: a one-sided paired test over problems at
95% (the model's per-problem correctness minus the baseline's; its mean must exceed
1.645 standard errors), so a model at chance on a two-word task never "beats" the 50%
of picking a word. :func:`position_figures` tells when a model's answers concentrate on
one position of the prompt's candidates while the references do not.

Example::

    from mint_envkit.rollouts.answers import AnswerGroup
    from mint_envkit.rollouts.baselines import best_baseline

    groups = [AnswerGroup(reference=r, parsed=[r], correct=[True],
                          prompt=f"Which comes first: {q}? Reply with the word.")
              for q, r in [("'pear' or 'apple'", "apple"), ("'fig' or 'kiwi'", "fig")]]
    best = best_baseline(groups)
    best.name, best.correct   # ('constant \\'apple\\'', 0.5)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mint_envkit.parsers.candidates import Candidate, prompt_candidates

if TYPE_CHECKING:
    from mint_envkit.rollouts.answers import AnswerGroup

POSITIONS = ("first", "second", "third", "fourth", "fifth", "sixth", "last")
"""The candidate positions a positional baseline answers (``last``: the final one).

Example::

    "second" in POSITIONS   # True
"""

_INDEX = {name: i for i, name in enumerate(POSITIONS[:-1])}

_CONSTANTS = 3  # the most common references tried as a constant answer
_NO_UNIFORM = ("word", "number")  # too many to be a choice: no uniform pick among them
_Z = 1.645  # one-sided 95%


@attrs.frozen
class Baseline:
    """One trivial policy's correctness on a set of problems.

    Attributes:
        name: what it answers, in words (``constant '5'``, ``second quoted``,
            ``uniform option``).
        correct: its correctness over the replies (weighted by each problem's replies).
        per_problem: its correctness on each problem (0..1; expected for a uniform pick).

    Example::

        Baseline("second quoted", 0.5, (1.0, 0.0)).correct   # 0.5
    """

    name: str
    correct: float
    per_problem: tuple[float, ...] = ()


def _pick(candidates: Sequence[Candidate], position: str) -> Candidate | None:
    if position == "last":
        return candidates[-1] if len(candidates) >= 2 else None
    index = _INDEX[position]
    return candidates[index] if index < len(candidates) else None


def _weighted(groups: Sequence[AnswerGroup], per_problem: Sequence[float]) -> float:
    n = sum(len(g.parsed) for g in groups)
    return sum(v * len(g.parsed) for v, g in zip(per_problem, groups, strict=True)) / n


def _constants(groups: Sequence[AnswerGroup], judge: Callable[..., bool]) -> list[Baseline]:
    from mint_envkit.rollouts.answers import answer_key
    from mint_envkit.rollouts.judging import answer_text

    counts: Counter[str] = Counter()
    spelled: dict[str, Any] = {}
    for group in groups:
        key = answer_key(group.reference)
        counts[key] += len(group.parsed)
        spelled.setdefault(key, group.reference)
    out = []
    for key, _count in counts.most_common(_CONSTANTS):
        guess = answer_text(spelled[key])  # a structure as JSON, as a reply writes it
        per = tuple(float(judge(g, guess)) for g in groups)
        out.append(Baseline(constant_name(guess), _weighted(groups, per), per))
    return out


def constant_name(guess: str) -> str:
    """The name of the trivial policy that always answers ``guess``.

    Example::

        constant_name("no")   # "constant 'no'"
    """
    return f"constant {_short(guess)!r}"


def _positional(groups: Sequence[AnswerGroup], judge: Callable[..., bool]) -> list[Baseline]:
    found = [prompt_candidates(g.prompt) for g in groups]
    out = []
    for kind in next(iter(found), {}):
        if not any(len(f[kind]) >= 1 for f in found):
            continue
        positions = POSITIONS if kind != "word" else ("first", "second", "last")
        for position in positions:
            picks = [_pick(f[kind], position) for f in found]
            if sum(p is not None for p in picks) * 2 < len(groups):
                continue  # the position exists in under half the problems
            per = tuple(
                0.0 if p is None else float(judge(g, p.text))
                for g, p in zip(groups, picks, strict=True)
            )
            out.append(Baseline(f"{position} {kind}", _weighted(groups, per), per))
        if kind in _NO_UNIFORM or sum(len(f[kind]) >= 2 for f in found) * 2 < len(groups):
            continue
        per = tuple(
            sum(judge(g, c.text) for c in f[kind]) / len(f[kind]) if f[kind] else 0.0
            for g, f in zip(groups, found, strict=True)
        )
        out.append(Baseline(f"uniform {kind}", _weighted(groups, per), per))
    return out


def trivial_baselines(
    groups: Sequence[AnswerGroup], judge: Callable[[AnswerGroup, str], bool]
) -> list[Baseline]:
    """Every trivial policy of the family scored on ``groups`` (empty without references).

    ``judge(group, guess)`` says whether ``guess`` is a right answer to the group's
    problem (:func:`~mint_envkit.rollouts.answers.agrees`: the env's verdict on it, see
    :func:`baseline_guesses`).

    Example::

        # groups: the module example's
        names = [b.name for b in trivial_baselines(groups, lambda g, guess: guess == g.reference)]
        "second quoted" in names and "uniform quoted" in names   # True
    """
    from mint_envkit.rollouts.answers import answer_key

    groups = [g for g in groups if g.parsed]
    if not groups or any(answer_key(g.reference) is None for g in groups):
        return []  # a problem without a reference: no honest baseline
    return [*_constants(groups, judge), *_positional(groups, judge)]


def baseline_guesses(groups: Sequence[AnswerGroup]) -> list[set[str]]:
    """The guesses the family asks each group about (its constants and the candidates of
    its prompt), so that they can be judged through the env before the family is scored.

    Example::

        # groups: the module example's
        sorted(baseline_guesses(groups)[0])[:2]   # ['Reply', 'Which']: words are candidates too
    """
    asked: dict[int, set[str]] = {id(g): set() for g in groups}

    def record(group: AnswerGroup, guess: str) -> bool:
        asked[id(group)].add(guess)
        return False

    trivial_baselines(groups, record)
    return [asked[id(g)] for g in groups]


def best_baseline(
    groups: Sequence[AnswerGroup], judge: Callable[[AnswerGroup, str], bool] | None = None
) -> Baseline | None:
    """The trivial policy with the highest correctness on ``groups`` (ties: the first
    in :func:`trivial_baselines`' order); None without reference answers.

    Example::

        best_baseline(groups).name   # the module example's: "constant 'apple'"
    """
    from mint_envkit.rollouts.answers import agrees

    found = trivial_baselines(groups, judge or agrees)
    return max(found, key=lambda b: b.correct) if found else None


def beats(model: Sequence[float], baseline: Sequence[float]) -> tuple[bool, float]:
    """Whether per-problem correctness ``model`` beats ``baseline`` beyond noise.

    A one-sided paired test at 95%: the mean of the differences must exceed 1.645 of
    their standard errors (with one problem: be above 0). Returns the verdict and the
    margin the mean needed (1.645 standard errors).

    Example::

        beats([1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0])   # (True, 0.47...)
        beats([1.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5])[0]   # False
    """
    d = [m - b for m, b in zip(model, baseline, strict=True)]
    if not d:
        return False, 0.0
    mean = sum(d) / len(d)
    if len(d) < 2:
        return mean > 0, 0.0
    variance = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    margin = _Z * math.sqrt(variance / len(d))
    return mean > margin and mean > 0, margin


POSITION_SHARE = 0.7
"""A position holding this share of the matched replies (and :data:`POSITION_EXCESS`
more than the references hold there) is a concentration on that position.

Example::

    {"answers/position_share": 0.725}["answers/position_share"] >= POSITION_SHARE   # True
"""

POSITION_EXCESS = 0.2
"""How far the replies' share of a position must exceed the references' share there."""

_MIN_MATCHED = 8  # fewer replies on candidates than this: too few to call a position


def _position_of(candidates: Sequence[Candidate], value: str, same: Callable) -> str | None:
    """The ordinal of the one candidate equal to ``value`` (None: none, or several)."""
    hits = [i for i, c in enumerate(candidates) if same(c.text, value)]
    if len(hits) != 1 or hits[0] >= len(POSITIONS) - 1:
        return None
    return POSITIONS[hits[0]]


def position_figures(groups: Sequence[AnswerGroup]) -> dict[str, Any]:
    """Where the replies' answers sit among the prompts' candidates, and whether they
    concentrate there.

    For each kind of candidate, the replies whose parsed answer is one of the
    prompt's candidates are placed (``first``, ``second``, ...); the most common
    placement over all kinds is reported with its share, beside the share of the
    references at the same placement. ``answers/position_concentrated`` is 1.0 when
    that share is at least :data:`POSITION_SHARE` and :data:`POSITION_EXCESS` above the
    references' (with at least 8 replies placed), else 0.0; None when too few
    replies name a candidate. A kind whose candidates are the same on every problem
    (``yes or no``) is left out: there a position is a constant answer, which the
    concentration figures already see (option labels ``A``, ``B``... stay: they point
    at texts that change).

    Example::

        figures = position_figures(groups)   # the module example's
        figures["answers/position"], figures["answers/position_concentrated"]  # ('first quoted', 0.0)
    """
    from mint_envkit.rollouts.answers import answer_key

    def same(a: str, b: str) -> bool:
        return answer_key(a) == answer_key(b)

    out: dict[str, Any] = {
        "answers/position": None,
        "answers/position_share": None,
        "answers/position_reference_share": None,
        "answers/position_concentrated": None,
    }
    best: tuple[float, str, float] | None = None
    found = [prompt_candidates(group.prompt) for group in groups]
    for kind in ("quoted", "option", "option_text", "listed", "alternative", "number"):
        replies: Counter[str] = Counter()
        references: Counter[str] = Counter()
        if len({tuple(c.text for c in f[kind]) for f in found}) < 2 and kind != "option":
            continue  # the same candidates everywhere ("yes or no"): a position is a constant
        for group, offered in zip(groups, found, strict=True):
            candidates = offered[kind]
            if len(candidates) < 2:
                continue
            reference = _position_of(candidates, str(group.reference), same)
            if reference is not None:
                references[reference] += len(group.parsed)
            for value in group.parsed:
                place = None if value is None else _position_of(candidates, value, same)
                if place is not None:
                    replies[place] += 1
        placed = sum(replies.values())
        if placed < _MIN_MATCHED:
            continue
        place, count = replies.most_common(1)[0]
        share = count / placed
        reference_share = references[place] / max(1, sum(references.values()))
        if best is None or share - reference_share > best[0] - best[2]:
            best = (share, f"{place} {kind}", reference_share)
    if best is None:
        return out
    share, where, reference_share = best
    out["answers/position"] = where
    out["answers/position_share"] = share
    out["answers/position_reference_share"] = reference_share
    concentrated = share >= POSITION_SHARE and share - reference_share >= POSITION_EXCESS
    out["answers/position_concentrated"] = float(concentrated)
    return out


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
