"""The default counterfactual of a problem: its offered candidates in another order.

A model that answers "pick the second quoted word" is right on half of "Which comes first:
'pear' or 'apple'?" problems without reading them. Evaluating the same problems with the
candidates permuted (the answer moved with them) tells it apart from one that reads the
content: a content-follower gives the same answer, a position-follower the one now at its
old position. :func:`permuted_problem` is the permutation every env has by default
(:meth:`MessageEnv.perturb <mint_envkit.MessageEnv.perturb>`); an env overrides ``perturb``
for its own (a reordered table, renamed entities).

Example::

    from mint_envkit.envs.perturb import permuted_problem

    permuted_problem({"question": "Which comes first: 'pear' or 'apple'?", "answer": "apple"})
    # {'question': "Which comes first: 'apple' or 'pear'?", 'answer': 'apple'}
    permuted_problem({"question": "Pick one. (A) 3 (B) 5", "answer": "B"})
    # {'question': 'Pick one. (A) 5 (B) 3', 'answer': 'A'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mint_envkit.parsers.candidates import PERMUTABLE, permute_candidates, prompt_candidates


def permuted_problem(problem: Mapping[str, Any]) -> dict[str, Any] | None:
    """``problem`` with the candidates of its ``question`` rotated by one, or None.

    Listed options (lettered or numbered) are rotated when there are at least two (an
    answer that is an option's label moves to the label its text now has); else the items
    of a bullet list, quoted strings, or the members of an "X, Y or Z" phrase of three or
    more (a two-member "X or Y" is most often the reply's format, "yes or no"): the
    answer, the content, stays. None when the question offers none of these, or the
    answer is neither a candidate's text nor an option's label (nothing says where it
    went).

    Example::

        permuted_problem({"question": "What is 2 + 3?", "answer": "5"}) is None   # True
    """
    question, answer = problem.get("question"), problem.get("answer")
    if not isinstance(question, str):
        return None
    found = prompt_candidates(question)
    for kind in PERMUTABLE:
        candidates = found[kind]
        if len(candidates) < (3 if kind == "alternative" else 2):
            continue
        order = [*range(1, len(candidates)), 0]
        texts = [c.text for c in candidates]
        text = str(answer).strip() if answer is not None else None
        moved: Any = answer
        if kind == "option_text":
            labels = [c.text for c in found["option"]]
            if text in labels:
                old = labels.index(text)
                moved = labels[order.index(old)]
            elif text not in texts:
                return None
        elif text not in texts:
            return None
        return {**problem, "question": permute_candidates(question, kind, order), "answer": moved}
    return None
