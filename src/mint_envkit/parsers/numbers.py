"""Numbers in completions: :data:`first_number`, :data:`last_number`, :func:`same_number`.

What counts as one number (all rules run in linear time):

- digits with an optional decimal part: ``42``, ``3.14``, ``.5``; a trailing period is
  punctuation (``5.`` is ``5``);
- a sign ``-`` (also the unicode minus ``−`` and fullwidth ``－``) directly before the
  digits, when it does not follow a letter, digit, ``.`` or closing bracket (so ``2-3``
  holds ``2`` and ``3``, ``x = -3`` holds ``-3``; ``- 3`` with a space is ``3``);
- thousands separators: a comma-joined run of digit groups is one number when the first
  group has 1-3 digits and every later group exactly 3 (``1,000``, ``12,345,678``);
  otherwise every group is its own number (``1,2,3`` is three numbers, ``1,2345`` two).
  LaTeX ``1{,}000`` counts as ``1,000``;
- a fraction ``a/b`` of two plain integers (``3/4``, ``-1/2``), kept as text ``"3/4"``
  (not reduced, not turned into a decimal); ``1/2/3`` or ``5/0`` are separate integers;
- scientific notation with an exponent of up to three digits (``1e3``, ``2.5E-4``),
  written out in full (``1000``, ``0.00025``);
- ``$``, ``%``, ``**bold**`` and other surrounding punctuation are ignored;
- any unicode decimal digits (``４２``) read as their ASCII value.

Not read: spaces as separators (``1 000`` is two numbers), European ``1.000,5``, words
("five"), LaTeX ``\\frac{1}{2}`` in text (but :func:`same_number` accepts a whole-string
``\\frac``).

The value is normalized: no leading zeros, no trailing decimal zeros, no ``-0``, ASCII
digits, no separators (``5.00`` -> ``5``, ``0.50`` -> ``0.5``, ``-0`` -> ``0``,
``$1,200.50`` -> ``1200.5``, ``-03/4`` -> ``-3/4``). Normalizing twice changes nothing.

Example::

    from mint_envkit.parsers import first_number, last_number, same_number

    assert first_number("2 + 3 = 5").value == "2"
    assert last_number("2 + 3 = 5").value == "5"
    assert same_number("1,000.0", "1000")
"""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Literal

from mint_envkit.parsers.parser import Parser
from mint_envkit.parsers.result import ParseResult

_MINUS = "-−－"
_NUMBER = re.compile(
    rf"(?P<sign>(?<![\w.)\]}}])[{_MINUS}])?\$?"
    r"(?:(?P<body>\d+(?:[,/]\d+)*)(?:\.(?P<frac>\d+))?|(?<![\w.])\.(?P<lead>\d+))"
    r"(?:[eE](?P<exp>[-+]?\d{1,3})(?!\d))?"
)
_DIGIT = re.compile(r"\d")
# Read on the reversed text from a digit: the characters a number can hold, stopping where
# two non-digits sit side by side in an order no number has (inside a number, two
# non-digits touch only as sign+"$", sign+".", "$"+"." or an exponent's "e-"/"e+"), or at
# a character no number holds. Such a point is never inside a number.
_SYMBOLS = rf",/.eE+$\{_MINUS}"
_WALK_BACK = re.compile(
    rf"(?:\d|[{_SYMBOLS}](?![{_SYMBOLS}])|\$(?=[{_MINUS}])|\.(?=[$\{_MINUS}])|[-+](?=[eE]))*+"
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_LATEX_FRAC = re.compile(
    rf"(?P<sign>[{_MINUS}])?\\[dt]?frac\{{\s*(?P<num>\d+)\s*\}}\{{\s*(?P<den>\d+)\s*\}}"
)
# Whole-string numbers are compared exactly via Fraction only below this many characters
# (int() refuses longer digit strings); longer ones compare by normalized text.
_MAX_EXACT_CHARS = 4000


class _AsciiDigits(dict[int, int]):
    """``str.translate`` table: any unicode decimal digit to its ASCII digit, filled lazily."""

    def __missing__(self, code: int) -> int:
        value = unicodedata.decimal(chr(code), None)
        if value is None:
            raise LookupError(code)  # str.translate leaves the character as it is
        self[code] = ord("0") + value
        return self[code]


_ASCII_DIGITS = _AsciiDigits()


def _ascii_digits(digits: str) -> str:
    return digits if digits.isascii() else digits.translate(_ASCII_DIGITS)


def _decimal_text(negative: bool, whole: str, frac: str, exp: str | None) -> str:
    whole, frac = _ascii_digits(whole), _ascii_digits(frac)
    if exp is not None:
        digits, point = whole + frac, len(whole) + int(_ascii_digits(exp))
        if point <= 0:
            whole, frac = "", "0" * -point + digits
        elif point >= len(digits):
            whole, frac = digits + "0" * (point - len(digits)), ""
        else:
            whole, frac = digits[:point], digits[point:]
    whole, frac = whole.lstrip("0") or "0", frac.rstrip("0")
    text = f"{whole}.{frac}" if frac else whole
    if text == "0" or not negative:
        return text
    return "-" + text


def _fraction_text(negative: bool, num: str, den: str) -> str:
    num = _ascii_digits(num).lstrip("0") or "0"
    den = _ascii_digits(den).lstrip("0") or "0"
    sign = "-" if negative and num != "0" else ""
    return f"{sign}{num}/{den}"


def _kind(match: re.Match[str]) -> Literal["decimal", "thousands", "fraction", "list"]:
    """How the digit run of ``match`` reads: one number of some kind, or a list."""
    body = match["body"]
    if body is None or ("," not in body and "/" not in body):
        return "decimal"
    if "/" not in body:
        return "thousands" if _THOUSANDS.fullmatch(body) else "list"
    if "," in body or body.count("/") != 1 or match["frac"] is not None or match["exp"]:
        return "list"
    return "list" if not body.rpartition("/")[2].strip("0") else "fraction"


def _read(match: re.Match[str], which: Literal["first", "last"]) -> str:
    """The normalized first or last number held by one match of ``_NUMBER``."""
    negative = match["sign"] is not None
    frac, exp = match["frac"] or "", match["exp"]
    if match["lead"] is not None:
        return _decimal_text(negative, "", match["lead"], exp)
    body = match["body"]
    kind = _kind(match)
    if kind == "decimal":
        return _decimal_text(negative, body, frac, exp)
    if kind == "thousands":
        return _decimal_text(negative, body.replace(",", ""), frac, exp)
    if kind == "fraction":
        num, _, den = body.partition("/")
        return _fraction_text(negative, num, den)
    if which == "first":  # the first group keeps the sign, the last keeps decimals/exponent
        ends = [i for i in (body.find(","), body.find("/")) if i >= 0]
        return _decimal_text(negative, body[: min(ends)], "", None)
    start = max(body.rfind(","), body.rfind("/")) + 1
    return _decimal_text(False, body[start:], frac, exp)


def _prepare(text: str) -> str | None:
    if not text.strip():
        return None
    return text.replace("{,}", ",") if "{,}" in text else text


def _first_number(text: str) -> ParseResult:
    prepared = _prepare(text)
    if prepared is None:
        return ParseResult.fail("empty")
    digit = _DIGIT.search(prepared)
    if digit is None:
        return ParseResult.fail("no_match")
    # A number starts at most 3 characters before its first digit ("-$.5") and there is
    # always one at the first digit, so searching from there finds the same first match.
    match = _NUMBER.search(prepared, max(digit.start() - 3, 0))
    return ParseResult.ok(_read(match, "first")) if match else ParseResult.fail("no_match")


def _last_number(text: str) -> ParseResult:
    prepared = _prepare(text)
    if prepared is None:
        return ParseResult.fail("empty")
    backwards = prepared[::-1]
    digit = _DIGIT.search(backwards)
    if digit is None:
        return ParseResult.fail("no_match")
    # The last number ends at the last digit. Walk left from it (on the reversed text) to a
    # point no number can straddle; matching from there gives the same matches as from the
    # start of the text (lookbehinds still see what comes before) without rescanning it.
    walk = _WALK_BACK.match(backwards, digit.start())
    start = max(len(prepared) - walk.end() - 1, 0)
    last = deque(_NUMBER.finditer(prepared, start, len(prepared) - digit.start()), maxlen=1)
    return ParseResult.ok(_read(last[0], "last")) if last else ParseResult.fail("no_match")


first_number = Parser(name="first_number", fn=_first_number)
"""The first number in the completion, normalized (rules in :mod:`mint_envkit.parsers.numbers`).

Use it when the prompt asks for only the number, so the reply is expected to start with
it. Statuses: ``ok``, ``empty`` (blank text), ``no_match`` (no number).

Example::

    assert first_number("**73** apples").value == "73"
    assert first_number("$1,200.50 total").value == "1200.5"
    assert first_number("2 + 3 = 5").value == "2"
    assert first_number("no digits").status == "no_match"
"""

last_number = Parser(name="last_number", fn=_last_number)
"""The last number in the completion, normalized (rules in :mod:`mint_envkit.parsers.numbers`).

Use it for chain-of-thought replies where the final answer comes last (better still, ask
for ``\\boxed{}`` or ``<answer>`` and use :data:`~mint_envkit.parsers.boxed` or
:func:`~mint_envkit.parsers.xml_tag`). Statuses: ``ok``, ``empty``, ``no_match``.

Example::

    assert last_number("2 + 3 = 5").value == "5"
    assert last_number("Total: -1,000.").value == "-1000"
    assert last_number("It grew 12%.").value == "12"
"""


def all_numbers(text: str, *, lists: Literal["first", "last"] = "last") -> list[str]:
    """Every number in ``text``, in order, each normalized as the extractors normalize it.

    The plain scan that :data:`first_number` and :data:`last_number` shortcut: the first
    item here is what ``first_number`` reads (with ``lists="first"``), the last item what
    ``last_number`` reads. A list-like run such as ``1,2,3`` or ``1/2/3`` (not a thousands
    group, not a fraction) is one match; ``lists`` says which of its items to keep.
    Blank text gives ``[]``. Never raises on a ``str``.

    Example::

        assert all_numbers("2 + 3 = 5") == ["2", "3", "5"]
        assert all_numbers("pick 1,2,3 or $1,200.50") == ["3", "1200.5"]
        assert all_numbers("pick 1,2,3", lists="first") == ["1"]
    """
    prepared = _prepare(text)
    if prepared is None:
        return []
    return [_read(match, lists) for match in _NUMBER.finditer(prepared)]


def _strip_decoration(text: str) -> str:
    text = text.replace("{,}", ",").replace("\\$", "$").replace("\\%", "%")
    text = text.strip().strip("*_$ \t\r\n")
    if text.startswith("\\(") and text.endswith("\\)"):
        text = text[2:-2]
    text = text.rstrip(". \t\r\n").rstrip("%").strip().strip("*_$ \t\r\n")
    return text[1:] if text.startswith("+") else text


def as_number(text: object) -> str | None:
    """The normalized number when ``text`` is exactly one number, else ``None``.

    Accepts what the extractors accept (as one whole string, not a list), surrounding
    ``$``/``%``/``**``/``\\( \\)`` and a trailing period, a leading ``+``, and LaTeX
    ``\\frac{a}{b}`` (also ``\\dfrac``, ``\\tfrac``) of integers. ``int``, ``float``,
    ``Decimal`` and ``Fraction`` are read through ``str``; other types give ``None``.
    Never raises.

    Example::

        assert as_number(" $1,200.50 ") == "1200.5"
        assert as_number(r"\\frac{1}{2}") == "1/2"
        assert as_number("5 apples") is None
    """
    if isinstance(text, bool) or not isinstance(text, str | int | float | Decimal | Fraction):
        return None
    text = _strip_decoration(str(text))
    match = _NUMBER.fullmatch(text)
    if match is not None:
        return None if _kind(match) == "list" else _read(match, "last")
    latex = _LATEX_FRAC.fullmatch(text)
    if latex is not None and latex["den"].strip("0"):
        return _fraction_text(latex["sign"] is not None, latex["num"], latex["den"])
    return None


def _exact(number: str) -> Fraction | None:
    if len(number) > _MAX_EXACT_CHARS:
        return None
    return Fraction(number)


def same_number(a: object, b: object) -> bool:
    """True when ``a`` and ``b`` are each exactly one number (:func:`as_number`) and equal.

    Exact comparison (``fractions.Fraction``), no float tolerance: ``"5.0"`` equals ``"5"``,
    ``"1,000"`` equals ``"1000"``, ``"1/2"`` equals ``"0.5"``, but ``"0.3333"`` does not
    equal ``"1/3"``. Anything that is not a whole number string (``"5 apples"``, ``None``,
    ``"x"``) gives ``False``. Never raises.

    Example::

        assert same_number("5.0", "5") and same_number("1,000", 1000)
        assert same_number(r"\\frac{3}{4}", "0.75")
        assert not same_number("5", "five") and not same_number("5 apples", "5")
    """
    left, right = as_number(a), as_number(b)
    if left is None or right is None:
        return False
    if left == right:
        return True
    if "/" not in left and "/" not in right:
        return False  # normalized decimals are equal exactly when their text is
    try:
        left_value, right_value = _exact(left), _exact(right)
    except (ValueError, ZeroDivisionError, InvalidOperation):
        return False
    return left_value is not None and left_value == right_value
