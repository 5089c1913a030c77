"""The answer key itself: reference answers a dataset wrote by mistake.

Every verdict of the audit takes a problem's reference answer as the truth, so a wrong
key is invisible to its probes: the right reply is scored wrong and nothing looks odd.
Two mistakes are mechanical enough to see without a model, and each fails the audit as
an ``answer_key`` finding naming the problems:

- **a missing value written as text**: ``nan``, ``null``, ``undefined`` or an empty
  answer (a table read with pandas and cast with ``astype(str)``, a JSON ``null``
  through ``str()``, a column that lost its cells): the reply ``nan`` is paid there and
  the real answer is not;
- **look-alike letters**: a word that mixes Latin letters with Cyrillic or Greek ones
  (``chаt`` with a Cyrillic ``а``; Unicode TR39 confusables, common in scraped keys),
  which no reply typed in one script matches.

Example::

    answer_key_finding(["Mars", "nan", "8", "nan"]).message[:46]
    # "2 of 4 answers are a missing value written as"
    answer_key_finding(["Mars", "Venus"]) is None   # True
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from mint_envkit.auditing.report import Finding, shown

PLACEHOLDERS = frozenset({"", "nan", "null", "undefined"})
"""Answers (lower-cased, stripped) that are a missing value written as text.

Example::

    "nan" in PLACEHOLDERS   # True
"""

_CONFUSABLE = frozenset({"LATIN", "CYRILLIC", "GREEK"})


def _script(char: str) -> str | None:
    """The script of a letter (its Unicode name's first word), None for anything else."""
    if not unicodedata.category(char).startswith("L"):
        return None
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else None


def mixed_script(text: str) -> str | None:
    """The first word of ``text`` that mixes Latin with Cyrillic or Greek letters, or None.

    Example::

        mixed_script("ch\\u0430t")   # 'chаt' (a Cyrillic 'а')
        mixed_script("Ελλάδα or Greece") is None   # True: each word in one script
    """
    for word in text.split():
        scripts = {_script(c) for c in word} & _CONFUSABLE
        if "LATIN" in scripts and len(scripts) > 1:
            return word
    return None


def answer_key_finding(answers: Sequence[str | None]) -> Finding | None:
    """The ``answer_key`` finding (module docstring) for the problems' reference
    ``answers`` (None: a problem without one, skipped), or None when the key looks sound.

    Example::

        answer_key_finding(["ch\\u0430t", "eau"]).kind   # 'answer_key'
    """
    given = [a for a in answers if a is not None]
    missing = [a for a in given if a.strip().lower() in PLACEHOLDERS]
    mixed = [(a, word) for a in given if (word := mixed_script(a)) is not None]
    if not missing and not mixed:
        return None
    parts = []
    if missing:
        parts.append(
            f"{len(missing)} of {len(given)} answers are a missing value written as text "
            f"(e.g. {shown(missing[0])}: an empty cell cast with astype(str), a None or "
            "null through str()); a reply saying it is paid there and the real answer is not"
        )
    if mixed:
        answer, word = mixed[0]
        letters = ", ".join(
            f"{c!r} {unicodedata.name(c, '?').lower()}"
            for c in dict.fromkeys(word)
            if _script(c) in _CONFUSABLE - {"LATIN"}
        )
        parts.append(
            f"{len(mixed)} of {len(given)} answers mix Latin letters with look-alike "
            f"Cyrillic or Greek ones (e.g. {shown(answer)}: {letters}); no reply typed in "
            "one script matches them"
        )
    return Finding(
        "answer_key",
        "answers",
        "; ".join(parts) + ": fix those answers in the dataset (drop the rows, or "
        "normalise the text with unicodedata and a confusables map)",
    )
