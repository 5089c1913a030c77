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
- ``longest <kind>`` / ``shortest <kind>``: the longest (shortest) candidate of a kind
  of choices (quoted, option texts, bullet items, alternatives) where one is; for
  lettered or numbered options also ``longest option`` / ``shortest option``, the label
  of the longest (shortest) option's text;
- ``uniform <kind>``: a uniform pick among the prompt's candidates of a kind (its
  expected correctness).

Each policy carries, per problem, the chance that a blind pick is right
(:func:`chance_levels`: 1/k where the reference is one of the k choices the prompt
offers, else :data:`OPEN_CHANCE`), so a policy far above it can be told apart from luck
(the audit's ``shortcut`` finding, :mod:`mint_envkit.auditing.shortcuts`).

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
_BY_LENGTH = ("option_text", "quoted", "listed", "alternative")  # choices with a length
_Z = 1.645  # one-sided 95%

CHOICE_KINDS = ("quoted", "option", "option_text", "listed", "alternative", "number")
"""The kinds of candidates that are choices: where the reference is one of them, a blind
pick among them is right with probability 1/k (words are no choice set).

Example::

    "alternative" in CHOICE_KINDS and "word" not in CHOICE_KINDS   # True
"""

OPEN_CHANCE = 0.5
"""The chance level of a problem whose reference is none of the choices its prompt
offers (an open answer): at least two answers were possible, so a blind guess is
right at most half the time. The most lenient chance that is still a chance.

Example::

    OPEN_CHANCE   # 0.5
"""


@attrs.frozen
class Baseline:
    """One trivial policy's correctness on a set of problems.

    Attributes:
        name: what it answers, in words (``constant '5'``, ``second quoted``,
            ``uniform option``).
        correct: its correctness over the replies (weighted by each problem's replies).
        per_problem: its correctness on each problem (0..1; expected for a uniform pick).
        family: what it reads: ``constant``, a candidate kind (``option`` for lettered
            or numbered options, their labels and texts alike), or ``uniform``.
        chance: per problem, the chance that a blind pick is right there
            (:func:`chance_levels`), 0.0 where the policy gives no answer.
        guesses: per problem, what it answers (None: nothing; a uniform pick: None).

    Example::

        Baseline("second quoted", 0.5, (1.0, 0.0)).correct   # 0.5
    """

    name: str
    correct: float
    per_problem: tuple[float, ...] = ()
    family: str = ""
    chance: tuple[float, ...] = ()
    guesses: tuple[str | None, ...] = ()


def chance_levels(groups: Sequence[AnswerGroup]) -> tuple[float, ...]:
    """Per problem, the chance that a blind pick is right: 1/k where the reference is
    one of the k distinct candidates of a kind of choice the prompt offers
    (:data:`CHOICE_KINDS`; the smallest such k), else :data:`OPEN_CHANCE`.

    Example::

        from mint_envkit.rollouts.answers import AnswerGroup

        chance_levels([AnswerGroup(reference="B", prompt="(A) 3 (B) 5 (C) 7 (D) 9"),
                       AnswerGroup(reference="yes", prompt="Is 7 prime? Say yes or no."),
                       AnswerGroup(reference="12", prompt="What is 5 + 7?")])
        # (0.25, 0.5, 0.5)
    """
    from mint_envkit.rollouts.answers import answer_key

    out = []
    for group in groups:
        reference = answer_key(group.reference)
        found = prompt_candidates(group.prompt)
        sizes = [
            len(keys)
            for kind in CHOICE_KINDS
            if reference in (keys := {answer_key(c.text) for c in found[kind]})
        ]
        out.append(1.0 / min(sizes) if sizes else OPEN_CHANCE)
    return tuple(out)


def _family(kind: str) -> str:
    return "option" if kind == "option_text" else kind


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
    chance = chance_levels(groups)
    for key, _count in counts.most_common(_CONSTANTS):
        guess = answer_text(spelled[key])  # a structure as JSON, as a reply writes it
        per = tuple(float(judge(g, guess)) for g in groups)
        out.append(
            Baseline(
                constant_name(guess), _weighted(groups, per), per, "constant", chance,
                (guess,) * len(groups),
            )
        )  # fmt: skip
    return out


def constant_name(guess: str) -> str:
    """The name of the trivial policy that always answers ``guess``.

    Example::

        constant_name("no")   # "constant 'no'"
    """
    return f"constant {_short(guess)!r}"


def _by_length(found: dict[str, list[Candidate]], kind: str, longest: bool) -> int | None:
    """The index of the one longest (shortest) candidate of ``kind`` (None: fewer than
    two, or a tie)."""
    sizes = [len(c.text) for c in found[kind]]
    if len(sizes) < 2:
        return None
    best = max(sizes) if longest else min(sizes)
    return sizes.index(best) if sizes.count(best) == 1 else None


def _length_picks(found: list[dict[str, list[Candidate]]]) -> list[tuple[str, str, list]]:
    """(name, family, per-problem pick) of the longest / shortest policies."""
    out = []
    for kind in _BY_LENGTH:
        for longest in (True, False):
            at = [_by_length(f, kind, longest) for f in found]
            word = "longest" if longest else "shortest"
            out.append((f"{word} {kind}", _family(kind),
                        [None if i is None else f[kind][i] for i, f in zip(at, found, strict=True)]))  # fmt: skip
            if kind == "option_text":  # the label of that option
                labels = [
                    None if i is None or i >= len(f["option"]) else f["option"][i]
                    for i, f in zip(at, found, strict=True)
                ]
                out.append((f"{word} option", "option", labels))
    return out


def _positional(groups: Sequence[AnswerGroup], judge: Callable[..., bool]) -> list[Baseline]:
    found = [prompt_candidates(g.prompt) for g in groups]
    chance = chance_levels(groups)
    out = []

    def scored(name: str, family: str, picks: Sequence[Candidate | None]) -> None:
        if sum(p is not None for p in picks) * 2 < len(groups):
            return  # the policy answers in under half the problems
        per = tuple(
            0.0 if p is None else float(judge(g, p.text))
            for g, p in zip(groups, picks, strict=True)
        )
        odds = tuple(0.0 if p is None else c for p, c in zip(picks, chance, strict=True))
        said = tuple(None if p is None else p.text for p in picks)
        out.append(Baseline(name, _weighted(groups, per), per, family, odds, said))

    for kind in next(iter(found), {}):
        if not any(len(f[kind]) >= 1 for f in found):
            continue
        positions = POSITIONS if kind != "word" else ("first", "second", "last")
        for position in positions:
            scored(f"{position} {kind}", _family(kind), [_pick(f[kind], position) for f in found])
        if kind in _NO_UNIFORM or sum(len(f[kind]) >= 2 for f in found) * 2 < len(groups):
            continue
        per = tuple(
            sum(judge(g, c.text) for c in f[kind]) / len(f[kind]) if f[kind] else 0.0
            for g, f in zip(groups, found, strict=True)
        )
        out.append(Baseline(f"uniform {kind}", _weighted(groups, per), per, "uniform", chance))
    for name, family, picks in _length_picks(found):
        scored(name, family, picks)
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

    0.725 >= POSITION_SHARE   # True: a position share of 72.5% is a concentration
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
    references at the same placement (the fields ``position``, ``position_share``,
    ``position_reference_share`` of :class:`~mint_envkit.runs.record.AnswerFigures`).
    ``position_concentrated`` is True when that share is at least :data:`POSITION_SHARE`
    and :data:`POSITION_EXCESS` above the references' (with at least 8 replies placed);
    every one is None (the dict is empty) when too few replies name a candidate. A kind
    whose candidates are the same on every problem (``yes or no``) is left out: there a
    position is a constant answer, which the concentration figures already see (option
    labels ``A``, ``B``... stay: they point at texts that change).

    Example::

        figures = position_figures(groups)   # the module example's
        figures.get("position"), figures.get("position_concentrated")
        # (None, None): too few replies name a candidate to call a position
    """
    from mint_envkit.rollouts.answers import answer_key

    def same(a: str, b: str) -> bool:
        return answer_key(a) == answer_key(b)

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
        return {}
    share, where, reference_share = best
    return {
        "position": where,
        "position_share": share,
        "position_reference_share": reference_share,
        "position_concentrated": share >= POSITION_SHARE
        and share - reference_share >= POSITION_EXCESS,
    }


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
