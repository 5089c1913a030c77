"""The counterfactual check: does the model follow the content of the offered candidates,
or their position in the prompt?

The problems whose env gives a perturbation
(:meth:`MessageEnv.perturb <mint_envkit.MessageEnv.perturb>`: by default the offered
candidates rotated, the answer moved with them) are evaluated a second time, on the same
seeds, and every reply is paired with its counterpart on the original prompt. A pair
*follows the content* when both give the same answer, and *follows the position* when the
answers differ but sit at the same position among the prompt's candidates. The figures
(:class:`~mint_envkit.runs.record.CounterfactualFigures`, an evaluation's
``figures.counterfactual``):

- ``problems``: how many problems were perturbed;
- ``correct``: correctness on the perturbed prompts;
- ``pairs``: the pairs where both answers name a candidate of their prompt;
- ``same_content``, ``same_position``: their shares;
- ``position_following``: True when at least half of the pairs (and more
  than follow the content) follow the position, with at least 5 pairs.

Example::

    # not run: needs a sampling client (a running backend)
    figures = counterfactual_figures(rollouts, chosen, again, changed, where, correct)
    figures.same_position, figures.position_following
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mint_envkit.evaluation.spec import EvalProblems
from mint_envkit.parsers.candidates import Candidate, prompt_candidates
from mint_envkit.rollouts.answers import AnswerGroup, answer_key, rollout_answers
from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import CounterfactualFigures

FOLLOWING_SHARE = 0.5
"""The share of pairs following the position at which the model is position-following.

Example::

    0.9 >= FOLLOWING_SHARE   # True: 90% of the pairs kept the position
"""

_MIN_PAIRS = 5


def perturbed(chosen: EvalProblems) -> tuple[EvalProblems, list[int]]:
    """The problems of ``chosen`` their env perturbs, as groups, and their positions.

    Example::

        # not run: `chosen` comes from eval_problems, built elsewhere
        changed, where = perturbed(chosen)
        len(changed.pairs), where[:3]   # (40, [0, 1, 2])
    """
    pairs, where = [], []
    for position, (split, group) in enumerate(chosen.pairs):
        try:
            env = group.make_message_env()
            problem = env.perturb(dict(group.problem))
        except Exception:  # an env that cannot make or perturb this problem: left out
            problem = None
        if problem is not None and problem != dict(group.problem):
            pairs.append((split, attrs.evolve(group, problem=problem)))
            where.append(position)
    return attrs.evolve(chosen, pairs=pairs), where


def _candidates(group: AnswerGroup) -> list[tuple[str, list[Candidate]]]:
    found = prompt_candidates(group.prompt)
    return [(kind, found[kind]) for kind in ("option_text", "option", "quoted")]


def _content(group: AnswerGroup, value: str | None) -> str | None:
    """The answer's content: an option label read as its option's text."""
    if value is None:
        return None
    found = prompt_candidates(group.prompt)
    labels = [c.text for c in found["option"]]
    key = answer_key(value)
    if key in labels and len(found["option_text"]) == len(labels):
        return answer_key(found["option_text"][labels.index(key)].text)
    return key


def _position(group: AnswerGroup, value: str | None) -> int | None:
    if value is None:
        return None
    key = answer_key(value)
    for _kind, candidates in _candidates(group):
        hits = [i for i, c in enumerate(candidates) if answer_key(c.text) == key]
        if len(hits) == 1:
            return hits[0]
    return None


def compare(
    original: Sequence[AnswerGroup], changed: Sequence[AnswerGroup]
) -> CounterfactualFigures:
    """The pair figures of replies on the original and the perturbed prompts (same order).

    Example::

        a = AnswerGroup(reference="apple", parsed=["apple"], correct=[True],
                        prompt="First: 'pear' or 'apple'?")
        b = AnswerGroup(reference="apple", parsed=["pear"], correct=[False],
                        prompt="First: 'apple' or 'pear'?")
        compare([a] * 5, [b] * 5).position_following   # True
    """
    pairs = content = position = 0
    for before, after in zip(original, changed, strict=True):
        for a, b in zip(before.parsed, after.parsed, strict=False):
            pa, pb = _position(before, a), _position(after, b)
            if pa is None or pb is None:
                continue
            pairs += 1
            if _content(before, a) == _content(after, b):
                content += 1
            elif pa == pb:
                position += 1
    following = None
    if pairs >= _MIN_PAIRS:
        following = position / pairs >= FOLLOWING_SHARE and position > content
    return CounterfactualFigures(
        pairs=pairs,
        same_content=content / pairs if pairs else None,
        same_position=position / pairs if pairs else None,
        position_following=following,
    )


def counterfactual_figures(
    original_rollouts: Sequence[GroupRollout],
    chosen: EvalProblems,
    changed_rollouts: Sequence[GroupRollout],
    changed: EvalProblems,
    where: Sequence[int],
    correct: float | None,
) -> CounterfactualFigures:
    """The figures of the check from the two evaluations' rollouts.

    ``where`` are the positions in ``chosen`` of the perturbed problems; ``correct`` the
    correctness on the perturbed prompts.

    Example::

        # not run: needs two evaluations' rollouts
        counterfactual_figures(rollouts, chosen, changed_rollouts, changed, where, 0.5)
    """
    before: list[AnswerGroup] = []
    after: list[AnswerGroup] = []
    for i, rollout, (_, group) in zip(where, changed_rollouts, changed.pairs, strict=True):
        a = rollout_answers([original_rollouts[i]], [chosen.pairs[i][1]])
        b = rollout_answers([rollout], [group])
        if a and b:  # a problem that failed on either side has no pair
            before.extend(a)
            after.extend(b)
    return attrs.evolve(compare(before, after), problems=len(where), correct=correct)
