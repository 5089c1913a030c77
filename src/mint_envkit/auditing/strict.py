"""The audit's own strict opinion of a reply's value: is it the reference answer?

Beside the env's verdict, the audit reads each probe's value (what the env's parser read,
or the text put in the env's format when the env logs no parsed value) and compares it
with the reference by a strict, typed comparison of its own (:func:`strict_verdict`):

- a **number** (the reference is one number: ``42``, ``-0.5``, ``1,000``, ``25/49``,
  ``\\frac{1}{2}``): the value must be one finite number equal to it (exactly, as a
  fraction; a difference below one part in 10^12 is float noise);
  ``nan``, ``inf``, ``1e999`` or a word is *no finite number*;
  where the prompt asks for lowest terms (``lowest=True``; :func:`lowest_terms_asked`:
  "simplify", "in lowest terms", "reduce the fraction"), a reference written as an
  integer or a fraction in lowest terms (``3/4``, ``3``) is also a *form*: a fraction not
  in lowest terms (``6/8``, ``12/4``) is *not in lowest terms*, whatever its value (the
  point of such tasks; elsewhere the same number in any notation is the answer);
- **text**: equal after light normalisation (Unicode NFKC, so fullwidth letters are
  letters; case; runs of whitespace, and the spacing around a comma or semicolon;
  surrounding ``*``, ``_``, backticks or quotes; one final period); any other character
  counts (``paris!``, ``par``, ``раris`` with a
  Cyrillic ``р``). Case counts too where it carries meaning (``case=True``;
  :func:`case_matters`: the prompt writes the answer in another case, as "write
  'python' in capital letters" does for ``PYTHON``);
- a **structure** (a dict or list, or JSON text of one): the value must read as JSON (or a
  Python literal) with the same fields and the same items in the same order, each
  compared by the rules above; fields may come in any order.

A reply the env scores right while this says it is not the answer (or cannot read it)
is the audit's ``lenient`` finding, unless the env declares it: see
:meth:`MessageEnv.audit_equivalent <mint_envkit.MessageEnv.audit_equivalent>` and
:attr:`MessageEnv.audit_lenient <mint_envkit.MessageEnv.audit_lenient>`.

Example::

    from mint_envkit.auditing.strict import strict_verdict

    strict_verdict("0.50", "1/2").same, strict_verdict("nan", "0.5").why
    # (True, 'no finite number')
    strict_verdict("Paris", "paris").same, strict_verdict("par", "paris").same   # (True, False)
"""

from __future__ import annotations

import ast
import json
import math
import re
import unicodedata
from fractions import Fraction
from typing import Any

import attrs

from mint_envkit.parsers import as_number, same_number

NUMBER, TEXT, STRUCTURE = "number", "text", "structure"
_NOISE = Fraction(1, 10**12)
_MAX_DIGITS = 4000  # longer numbers compare by text (Fraction of a huge literal is slow)
_WRAPPERS = "*_`'\"“”‘’"
_SEPARATOR = re.compile(r"\s*([,;])\s*")  # "a,b" and "a , b" are "a, b": a list's spacing


@attrs.frozen
class Strict:
    """The strict comparison's verdict on one value.

    Attributes:
        same: True (it is the answer), False (another value of the answer's kind), or
            None (it cannot be read as one: no finite number, not a structure).
        why: in words, for the report (``the answer``, ``another number``, ``no finite
            number``, ``other text``, ``not JSON``, ``other fields``...).

    Example::

        Strict(False, "another number")
    """

    same: bool | None
    why: str


def answer_kind(answer: Any) -> str:
    """``number``, ``structure`` or ``text``: how :func:`strict_verdict` compares.

    Example::

        answer_kind("25/49"), answer_kind({"a": 1}), answer_kind("Paris")
        # ('number', 'structure', 'text')
    """
    if isinstance(answer, dict | list | tuple):
        return STRUCTURE
    if isinstance(answer, bool) or answer is None:
        return TEXT
    if isinstance(answer, str):
        stripped = answer.strip()
        if stripped[:1] in ("{", "[") and read_structure(stripped) is not None:
            return STRUCTURE
    return NUMBER if as_number(answer) is not None else TEXT


def normalized_text(value: Any, *, case: bool = False) -> str:
    """Text after the light normalisation of the strict comparison (``case``: keep the
    case).

    Example::

        normalized_text("  **Paris.** "), normalized_text("New  York")   # ('paris', 'new york')
        normalized_text("PYTHON", case=True)   # 'PYTHON'
    """
    text = unicodedata.normalize("NFKC", str(value)).strip()
    for _ in range(3):  # "**'Paris'**"
        if len(text) >= 2 and text[0] in _WRAPPERS and text[-1] == _closing(text[0]):
            text = text[1:-1].strip()
    text = _SEPARATOR.sub(r"\1 ", " ".join(text.split())).strip()
    text = text if case else text.casefold()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    return text


def _closing(opening: str) -> str:
    return {"“": "”", "‘": "’"}.get(opening, opening)


def _number(value: Any) -> Fraction | None:
    """The exact value of one finite number (None: not one)."""
    if isinstance(value, float) and value != value:
        return None
    text = as_number(value)
    if text is None or len(text) > _MAX_DIGITS:
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def same_value(value: Any, answer: Any) -> bool:
    """Whether two finite numbers are equal, exactly or within float noise (10^-12
    relative); False when either is no finite number.

    Example::

        same_value("0.30000000000000004", "0.3"), same_value("0.3001", "0.3")   # (True, False)
    """
    if same_number(value, answer):
        return True
    a, b = _number(value), _number(answer)
    if a is None or b is None:
        return False
    return abs(a - b) <= _NOISE * max(abs(a), abs(b))


def read_structure(text: str) -> Any:
    """``text`` read as JSON, else as a Python literal; None when it is neither.

    Example::

        read_structure('{"a": 1}'), read_structure("[1, 'x']"), read_structure("x")
        # ({'a': 1}, [1, 'x'], None)
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _same_leaf(value: Any, answer: Any) -> bool:
    if isinstance(answer, bool) or answer is None or isinstance(value, bool) or value is None:
        return value is answer or (value == answer and type(value) is type(answer))
    if isinstance(answer, int | float) or isinstance(value, int | float):
        return same_value(value, answer)
    return normalized_text(value) == normalized_text(answer)


def _same_structure(value: Any, answer: Any) -> str | None:
    """None when equal, else what differs first."""
    if isinstance(answer, dict):
        if not isinstance(value, dict):
            return "not an object"
        missing = [k for k in answer if k not in value]
        extra = [k for k in value if k not in answer]
        if missing or extra:
            return f"missing fields {missing}" if missing else f"extra fields {extra}"
        for key in answer:
            why = _same_structure(value[key], answer[key])
            if why:
                return f"field {key!r}: {why}"
        return None
    if isinstance(answer, list | tuple):
        if not isinstance(value, list | tuple):
            return "not a list"
        if len(value) != len(answer):
            return f"{len(value)} items, not {len(answer)}"
        for i, (v, a) in enumerate(zip(value, answer, strict=True)):
            why = _same_structure(v, a)
            if why:
                return f"item {i}: {why}"
        return None
    return None if _same_leaf(value, answer) else "another value"


_FRACTION = re.compile(r"\s*(-?\d+)\s*/\s*(\d+)\s*")


def _in_lowest_terms(text: Any) -> bool | None:
    """Whether ``text`` is written as an integer or a fraction in lowest terms (True), a
    fraction that is not (False), or neither (None: a decimal, a word)."""
    text = str(text)
    found = _FRACTION.fullmatch(text)
    if found:
        numerator, denominator = int(found.group(1)), int(found.group(2))
        return denominator > 1 and math.gcd(numerator, denominator) == 1
    return True if re.fullmatch(r"\s*-?\d+\s*", text) else None


_LOWEST = re.compile(
    r"lowest terms|simplest form|simplif(?:y|ied)|irreducible|reduced? (?:the |this |each )?fraction",
    re.IGNORECASE,
)


def lowest_terms_asked(prompt: str) -> bool:
    """Whether ``prompt`` asks for a fraction in lowest terms (simplify, lowest terms,
    simplest form, reduce the fraction): then the form of a number is part of the answer.

    Example::

        lowest_terms_asked("Simplify 6/8."), lowest_terms_asked("What is 1/2 + 1/4?")
        # (True, False)
    """
    return _LOWEST.search(prompt) is not None


def case_matters(answer: Any, prompt: str) -> bool:
    """Whether the answer's case carries meaning: ``prompt`` writes the answer (text of
    two characters or more, with letters) in another case only (``'python'`` for
    ``PYTHON``), so a reply in the prompt's case is a copy, not the answer.

    Example::

        case_matters("PYTHON", "Write 'python' in capital letters."), case_matters(
            "Paris", "What is the capital of France?")   # (True, False)
    """
    text = " ".join(str(answer).split())
    if len(text) < 2 or not any(c.isalpha() for c in text) or text.lower() == text.upper():
        return False
    around = r"(?<![\w]){}(?![\w])"
    if re.search(around.format(re.escape(text)), prompt):
        return False  # written as it is: its case is not what the task changes
    return re.search(around.format(re.escape(text)), prompt, re.IGNORECASE) is not None


def strict_verdict(value: Any, answer: Any, *, case: bool = False, lowest: bool = False) -> Strict:
    """Whether ``value`` is ``answer`` by the strict typed comparison (module docstring);
    ``case``: text compares its case too (:func:`case_matters`); ``lowest``: a number's
    fraction must be in lowest terms where the answer's is (:func:`lowest_terms_asked`).

    Example::

        strict_verdict('{"b": 2, "a": 1}', {"a": 1, "b": 2}).same   # True: fields in any order
        strict_verdict('{"a": 1}', {"a": 1, "b": 2}).why            # "missing fields ['b']"
        strict_verdict("6/8", "3/4", lowest=True).why, strict_verdict("6/8", "3/4").same
        # ('not in lowest terms', True)
        strict_verdict("python", "PYTHON", case=True).same   # False
    """
    if value is None:
        return Strict(None, "nothing read")
    kind = answer_kind(answer)
    if kind == NUMBER:
        if _number(value) is None:
            return Strict(None, "no finite number")
        same = same_value(value, answer)
        if same and lowest and _in_lowest_terms(answer) and _in_lowest_terms(value) is False:
            return Strict(False, "not in lowest terms")
        return Strict(same, "the answer" if same else "another number")
    if kind == STRUCTURE:
        reference = read_structure(answer.strip()) if isinstance(answer, str) else answer
        read = value if not isinstance(value, str) else read_structure(value.strip())
        if read is None and not (isinstance(value, str) and value.strip() in ("null", "None")):
            return Strict(None, "not JSON")
        why = _same_structure(read, reference)
        return Strict(why is None, why or "the answer")
    same = normalized_text(value, case=case) == normalized_text(answer, case=case)
    if not same and case and normalized_text(value) == normalized_text(answer):
        return Strict(False, "another case")
    return Strict(same, "the answer" if same else "other text")
