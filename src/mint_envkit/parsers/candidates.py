"""The answers a prompt offers: quoted strings, listed options, numbers and words, by position.

A prompt that offers candidates ("Which comes first: 'pear' or 'apple'?", "(A) 3 (B) 5",
"1. hammer\\n2. horse", "red, green or blue", "What is 31 + 23?") lets a policy score
without solving: always the second quoted word, always option A, the third listed item,
the first number of the question. :func:`prompt_candidates` finds them so the kit can
score those trivial policies as baselines and tell when a model's answers follow a
position rather than the content; :func:`permute_candidates` writes the prompt with its
candidates in another order (the counterfactual check).

Kinds, each in prompt order: ``quoted`` (text in '...', "..." or curly quotes),
``option`` (the labels of listed options: ``A``, ``B`` ... or ``1``, ``2`` ...),
``option_text`` (their texts), ``listed`` (the items of a bullet list: lines starting
with ``-``, ``*`` or ``•``), ``alternative`` (the members of an "X, Y or Z" phrase),
``number``, ``word`` (alphabetic words).

Example::

    from mint_envkit.parsers.candidates import permute_candidates, prompt_candidates

    found = prompt_candidates("Which comes first: 'pear' or 'apple'? Reply with the word.")
    [c.text for c in found["quoted"]]    # ['pear', 'apple']
    permute_candidates("Which comes first: 'pear' or 'apple'?", "quoted", [1, 0])
    # "Which comes first: 'apple' or 'pear'?"
    [c.text for c in prompt_candidates("Is the sky red, green or blue?")["alternative"]]
    # ['red', 'green', 'blue']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from mint_envkit.errors import ConfigError

KINDS = ("quoted", "option", "option_text", "listed", "alternative", "number", "word")
"""The kinds of candidates :func:`prompt_candidates` finds, in report order.

Example::

    "listed" in KINDS   # True
"""

_QUOTED = re.compile(
    r"""(?<![\w'"])(?:'([^'\n]{1,80}?)'|"([^"\n]{1,80}?)"|“([^”\n]{1,80}?)”)(?![\w])"""
)
_LETTER = re.compile(r"(?<![\w(\[])[(\[]?([A-Ja-j])[)\].:](?=[ \t]+\S)")
# numbered options: "1." / "1)" / "(1)" at the start of a line, or "(1)" inline
_NUMBERED = re.compile(
    r"(?:^[ \t]*[(\[]?(\d{1,2})[).\]:]|(?<![\w(\[])[(\[](\d{1,2})[)\]])(?=[ \t]+\S)", re.M
)
_BULLET = re.compile(r"^[ \t]*[-*•–][ \t]+(\S[^\n]*?)[ \t]*$", re.M)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# "X, Y or Z": the members are short (one to three words), split by commas and "or"
_OR = re.compile(r"(?<=\S)[ \t]+or[ \t]+(?=\S)")
_STOP = re.compile(r"[,;:?!()\n]|\.(?!\d)")  # where an item ends (not a decimal point)
_ITEM = re.compile(r"[^\W_](?:[\w'-]*[^\W_])?(?:\.\d+)?")
_QUOTES = "'\"“”‘’"
_ARTICLE = re.compile(r"(?:a|an|the)\s+", re.I)
_MAX_ITEM_WORDS = 3


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


def _label_run(matches: list[re.Match[str]], first: str) -> list[re.Match[str]]:
    """The first run of labels in order from ``first`` (``A``, ``B``, ... or ``1``, ``2``,
    ...) with at least two labels; a label that restarts the sequence starts a new run."""

    def label(match: re.Match[str]) -> str:
        return next(g for g in match.groups() if g is not None).upper()

    def nth(n: int) -> str:
        return chr(ord("A") + n) if first == "A" else str(n + 1)

    run: list[re.Match[str]] = []
    for match in matches:
        if label(match) == nth(len(run)):
            run.append(match)
        elif label(match) == first:
            if len(run) >= 2:
                break
            run = [match]
    return run if len(run) >= 2 else []


def _options(text: str) -> list[tuple[str, int, int, str, int, int]]:
    """(label, its span, text, its span) of each listed option: lettered ``A``, ``B``, ...
    (``A)``, ``(b)``, ``C.``, ``D:``; on lines or inline), else numbered ``1``, ``2``, ...
    (``1.``, ``2)``, ``(3)`` at the start of a line; ``(1)`` inline); an option's text
    runs to the next label or the end of its line."""
    run = _label_run(list(_LETTER.finditer(text)), "A") or _label_run(
        list(_NUMBERED.finditer(text)), "1"
    )
    out = []
    for position, match in enumerate(run):
        group = next(g for g in range(1, (match.re.groups or 1) + 1) if match.group(g))
        start = match.end()
        end = run[position + 1].start() if position + 1 < len(run) else len(text)
        line_end = text.find("\n", start)
        if line_end != -1:
            end = min(end, line_end)
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        body = raw.strip().rstrip(",;.")
        out.append(
            (
                match.group(group).upper(),
                *match.span(group),
                body,
                start + lead,
                start + lead + len(body),
            )
        )
    return out


def _bullets(text: str) -> list[tuple[str, int, int]]:
    """The items of the first bullet list of two or more consecutive lines."""
    runs: list[list[re.Match[str]]] = []
    for match in _BULLET.finditer(text):
        if runs and text.count("\n", runs[-1][-1].end(), match.start()) == 1:
            runs[-1].append(match)
        else:
            runs.append([match])
    run = next((r for r in runs if len(r) >= 2), [])
    out = []
    for match in run:
        body = match.group(1).rstrip(",;.")
        out.append((body, match.start(1), match.start(1) + len(body)))
    return out


def _segment(text: str, start: int, end: int) -> tuple[str, int, int] | None:
    """``text[start:end]`` without spaces, quotes and a leading article, when it is one to
    three words and nothing else."""
    while start < end and (text[start].isspace() or text[start] in _QUOTES):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in _QUOTES):
        end -= 1
    article = _ARTICLE.match(text, start, end)
    if article is not None and article.end() < end:
        start = article.end()
    words = _ITEM.findall(text, start, end)
    if not 1 <= len(words) <= _MAX_ITEM_WORDS or " ".join(words) != " ".join(
        text[start:end].split()
    ):
        return None
    return text[start:end], start, end


def _edge_word(text: str, start: int, end: int, last: bool) -> tuple[str, int, int] | None:
    """The first (or last) word of ``text[start:end]`` (after a leading article)."""
    article = _ARTICLE.match(text, start, end)
    found = list(_ITEM.finditer(text, article.end() if article else start, end))
    if not found:
        return None
    word = found[-1] if last else found[0]
    return word.group(0), word.start(), word.end()


def _alternatives(text: str) -> list[tuple[str, int, int]]:
    """The members of the first "X or Y" / "X, Y, or Z" phrase.

    Items between commas (or after a colon) are taken whole when they are one to three
    words; the first item, when nothing marks where it starts, is its last word, and
    only when the other items are single words too; so is the last item (else whole,
    up to three words)."""
    for match in _OR.finditer(text):
        found = _STOP.search(text, match.end())
        stop = found.start() if found else len(text)
        right = _segment(text, match.end(), stop)
        items: list[tuple[str, int, int]] = []
        end = match.start()
        if text[end - 1] == ",":  # "X, Y, or Z"
            end -= 1
        while end > 0:
            begin = max((m.end() for m in _STOP.finditer(text, 0, end)), default=0)
            marked = begin > 0 and text[begin - 1] in ",:"
            whole = _segment(text, begin, end) if marked else None
            if whole is None:
                if all(" " not in item[0] for item in items):
                    word = _edge_word(text, begin, end, last=True)
                    items[:0] = [word] if word else []
                break
            items.insert(0, whole)
            if text[begin - 1] != ",":
                break
            end = begin - 1
        single = all(" " not in item[0] for item in items)
        last = _edge_word(text, match.end(), stop, last=False) if single else right
        if items and last is not None:
            return [*items, last]
    return []


def prompt_candidates(text: str) -> dict[str, list[Candidate]]:
    """Every candidate answer of ``text`` by kind (:data:`KINDS`), each in prompt order.

    Listed options count only when there are at least two, labelled in order: ``A``,
    ``B``, ... (``A)``, ``(b)``, ``C.`` or ``D:``; one per line, or inline ``A) 4 B) 6``),
    else ``1``, ``2``, ... (``1.``, ``2)`` or ``(3)`` starting a line, or ``(1)`` inline);
    an option's text runs to the next label or the end of its line. A bullet list is two
    or more consecutive lines starting with ``-``, ``*`` or ``•``. An alternative is a
    member of "X or Y" / "X, Y or Z" (one to three words each). Quoted strings are up
    to 80 characters on one line, not apostrophes inside a word.

    Example::

        found = prompt_candidates("Is 7 a prime? Answer yes or no.")
        [c.text for c in found["number"]], found["word"][-1].text   # (['7'], 'no')
        [c.text for c in prompt_candidates("Pick:\\n1. hammer\\n2. horse")["option_text"]]
        # ['hammer', 'horse']
    """
    out: dict[str, list[Candidate]] = {kind: [] for kind in KINDS}
    for match in _QUOTED.finditer(text):
        group = next(g for g in range(1, 4) if match.group(g) is not None)
        out["quoted"].append(Candidate("quoted", match.group(group), *match.span(group)))
    for label, a, b, body, c, d in _options(text):
        out["option"].append(Candidate("option", label, a, b))
        out["option_text"].append(Candidate("option_text", body, c, d))
    for body, a, b in _bullets(text):
        out["listed"].append(Candidate("listed", body, a, b))
    for body, a, b in _alternatives(text):
        out["alternative"].append(Candidate("alternative", body, a, b))
    for match in _NUMBER.finditer(text):
        out["number"].append(Candidate("number", match.group(0), *match.span()))
    for match in _WORD.finditer(text):
        out["word"].append(Candidate("word", match.group(0), *match.span()))
    return out


PERMUTABLE = ("option_text", "listed", "quoted", "alternative")
"""The kinds :func:`permute_candidates` may reorder (the content moves, the positions
stay), in the order the default counterfactual prefers them.

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
