"""The answers a prompt offers: quoted strings, listed options, numbers and words, by position.

A prompt that offers candidates ("Which comes first: 'pear' or 'apple'?", "(A) 3 (B) 5",
"What is 31 + 23?") lets a policy score without solving: always the second quoted word,
always option A, the first number of the question. :func:`prompt_candidates` finds them
so the kit can score those trivial policies as baselines and tell when a model's answers
follow a position rather than the content; :func:`permute_candidates` writes the prompt
with its candidates in another order (the counterfactual check).

Kinds, each in prompt order: ``quoted`` (text in '...', "..." or curly quotes),
``option`` (the labels of listed options, ``A``, ``B`` ...), ``option_text`` (their
texts), ``number``, ``word`` (alphabetic words).

Example::

    from mint_envkit.parsers.candidates import permute_candidates, prompt_candidates

    found = prompt_candidates("Which comes first: 'pear' or 'apple'? Reply with the word.")
    [c.text for c in found["quoted"]]    # ['pear', 'apple']
    permute_candidates("Which comes first: 'pear' or 'apple'?", "quoted", [1, 0])
    # "Which comes first: 'apple' or 'pear'?"
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from mint_envkit.errors import ConfigError

KINDS = ("quoted", "option", "option_text", "number", "word")
"""The kinds of candidates :func:`prompt_candidates` finds, in report order.

Example::

    "quoted" in KINDS   # True
"""

_QUOTED = re.compile(
    r"""(?<![\w'"])(?:'([^'\n]{1,80}?)'|"([^"\n]{1,80}?)"|“([^”\n]{1,80}?)”)(?![\w])"""
)
_LABEL = re.compile(r"(?<![\w(\[])[(\[]?([A-Ja-j])[)\].:](?=[ \t]+\S)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


@attrs.frozen
class Candidate:
    """One candidate answer of a prompt.

    Attributes:
        kind: one of :data:`KINDS`.
        text: the candidate as a reply would give it.
        start, end: its span in the prompt text (what :func:`permute_candidates` swaps).

    Example::

        prompt_candidates("(A) 3 (B) 5")["option_text"][1]
        # Candidate(kind='option_text', text='5', start=10, end=11)
    """

    kind: str
    text: str
    start: int
    end: int


def _options(text: str) -> list[tuple[str, int, int, str, int, int]]:
    """(label, its span, text, its span) of each listed option: labels ``A``, ``B``, ...
    in order from ``A`` (``A)``, ``(b)``, ``C.``, ``D:``), on one line each or inline; an
    option's text runs to the next label or the end of its line."""
    labels = list(_LABEL.finditer(text))
    run: list[re.Match[str]] = []
    for match in labels:
        want = chr(ord("A") + len(run))
        if match.group(1).upper() == want:
            run.append(match)
        elif match.group(1).upper() == "A":
            if len(run) >= 2:
                break
            run = [match]
    if len(run) < 2:
        return []
    out = []
    for position, match in enumerate(run):
        start = match.end()
        end = run[position + 1].start() if position + 1 < len(run) else len(text)
        line_end = text.find("\n", start)
        if line_end != -1:
            end = min(end, line_end)
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        body = raw.strip().rstrip(",;")
        out.append(
            (match.group(1).upper(), *match.span(1), body, start + lead, start + lead + len(body))
        )
    return out


def prompt_candidates(text: str) -> dict[str, list[Candidate]]:
    """Every candidate answer of ``text`` by kind (:data:`KINDS`), each in prompt order.

    Listed options count only when there are at least two, labelled ``A``, ``B``, ... in
    order (``A)``, ``(b)``, ``C.`` or ``D:``; one per line, or inline ``A) 4 B) 6``); an
    option's text runs to the next label or the end of its line. Quoted strings are up to
    80 characters on one line, not apostrophes inside a word.

    Example::

        found = prompt_candidates("Is 7 a prime? Answer yes or no.")
        [c.text for c in found["number"]], found["word"][-1].text   # (['7'], 'no')
    """
    out: dict[str, list[Candidate]] = {kind: [] for kind in KINDS}
    for match in _QUOTED.finditer(text):
        group = next(g for g in range(1, 4) if match.group(g) is not None)
        out["quoted"].append(Candidate("quoted", match.group(group), *match.span(group)))
    for label, a, b, body, c, d in _options(text):
        out["option"].append(Candidate("option", label, a, b))
        out["option_text"].append(Candidate("option_text", body, c, d))
    for match in _NUMBER.finditer(text):
        out["number"].append(Candidate("number", match.group(0), *match.span()))
    for match in _WORD.finditer(text):
        out["word"].append(Candidate("word", match.group(0), *match.span()))
    return out


PERMUTABLE = ("quoted", "option_text")
"""The kinds :func:`permute_candidates` may reorder (the content moves, the positions stay).

Example::

    "option_text" in PERMUTABLE   # True
"""


def permute_candidates(text: str, kind: str, order: Sequence[int]) -> str:
    """``text`` with its ``kind`` candidates rewritten in ``order``.

    Position ``i`` gets the candidate that was at ``order[i]``; everything else stays.
    For ``option_text`` the labels stay in place, so the option that was ``A`` may now be
    ``B``.

    Raises:
        ConfigError: ``kind`` is not one of :data:`PERMUTABLE`, or ``order`` is not a
            permutation of the candidates' positions.

    Example::

        permute_candidates("(A) 3 (B) 5", "option_text", [1, 0])   # '(A) 5 (B) 3'
    """
    if kind not in PERMUTABLE:
        raise ConfigError(f"permute_candidates reorders {' or '.join(PERMUTABLE)}, got {kind!r}")
    found = prompt_candidates(text)[kind]
    if sorted(order) != list(range(len(found))):
        raise ConfigError(
            f"order must be a permutation of 0..{len(found) - 1} (the {len(found)} {kind} "
            f"candidates), got {list(order)!r}"
        )
    pieces, last = [], 0
    for position, candidate in enumerate(found):
        pieces.append(text[last : candidate.start])
        pieces.append(found[order[position]].text)
        last = candidate.end
    pieces.append(text[last:])
    return "".join(pieces)
