"""Multiple-choice answers: :func:`choice`.

Example::

    from mint_envkit.parsers import choice

    abcd = choice("ABCD")
    assert abcd("The answer is (C).").value == "C"
    assert abcd("A or B").status == "ambiguous"
    assert abcd("A cat sat on the mat.").status == "no_match"
"""

from __future__ import annotations

import re
from collections import deque

from mint_envkit.errors import ConfigError
from mint_envkit.parsers.parser import Parser
from mint_envkit.parsers.result import ParseResult

_BOUNDARY = r"(?![A-Za-z0-9]|[.,]\d)"  # the letter is not the start of a word or number
_SEPARATOR = r"\s*+(?:,|/|&|(?i:or|and)\b)\s*+"
_ALTERNATIVE = r"\s*+(?:/|&|(?i:or|and)\b)\s*+"  # no comma: "B, C is wrong" is not two answers


def _check_options(options: object) -> str:
    if not isinstance(options, str) or len(options) < 2:
        raise ConfigError(
            f"choice options must be a str of at least two option characters, got "
            f"{options!r}; e.g. choice('ABCD')"
        )
    bad = [char for char in options if not (char.isascii() and char.isalnum())]
    if bad:
        raise ConfigError(
            f"choice options {options!r} contain {bad[0]!r}; options are single ASCII "
            "letters or digits written together, e.g. choice('ABCDE')"
        )
    if len(set(options.upper())) != len(options):
        raise ConfigError(
            f"choice options {options!r} repeat a character (case is ignored when "
            "comparing); list each option once, e.g. choice('ABCD')"
        )
    return options


def choice(options: str = "ABCD") -> Parser:
    """A Parser for one multiple-choice option (one character of ``options``).

    Rules, tried in order on the stripped text (the first that applies decides):

    1. The whole reply is one option, maybe decorated: ``B``, ``(B)``, ``B)``, ``B.``,
       ``**B**``, ``[B]``, ``B:``. Any case (``b`` gives ``B``).
    2. The whole reply lists options: ``A or B``, ``A and C``, ``A/B``, ``A, B`` gives
       ``ambiguous`` (``B or B`` gives ``B``). Any case.
    3. An answer marker: the LAST ``answer``, ``correct option``, ``correct choice`` or
       ``correct letter`` (any case) followed by optional ``:``/``=``/``is``/``would be``/
       ``should be``/``option`` and a decorated option, e.g. ``Answer: B``, ``The answer
       is (B)``, ``**Final answer:** B``, ``the correct option is C``. If another option
       follows with ``or``/``and``/``/``/``&`` (``the answer is A or B``) the result is
       ``ambiguous``.
    4. The last line is one decorated option (as in rule 1), e.g. after reasoning.
    5. The reply starts with an option closed by ``)``, ``.``, ``:``, ``]`` or wrapped in
       ``(...)``, ``[...]``, ``**...**``: ``B) Paris``, ``(B) Paris``, ``**B** Paris``.

    Outside rules 1, 2 and 4 the option must be written in the case given in
    ``options`` (``ABCD``: uppercase), and it must not start a longer word or number. So
    the article in "A cat..." or "the answer is a cat" is not read as option A, while a
    reply starting "A. Einstein..." is (rule 5). "I choose B" and "Option B is correct"
    are not read (no marker): ask the model for an explicit "Answer: X" or a box
    (``boxed.map(choice("ABCD"))``). A think block is read like any text, so use
    ``choice(...).after_thinking()`` for thinking models.

    Statuses: ``ok``, ``empty``, ``ambiguous``, ``no_match``. The value is the option as
    written in ``options``. ``options`` must be at least two distinct ASCII letters or
    digits (case-insensitively distinct), else :class:`~mint_envkit.errors.ConfigError`.
    The parser's name is ``"choice(<options>)"``.

    Example::

        abcd = choice("ABCD")
        assert abcd("**Answer:** (D)").value == "D"
        assert abcd("b").value == "B"
        assert abcd("The answer is A or B").status == "ambiguous"
        assert abcd("B) 42 apples").value == "B"
    """
    options = _check_options(options)
    by_char = {char: option for option in options for char in (option.upper(), option.lower())}
    exact = re.escape(options)
    any_case = re.escape("".join(by_char))
    letter = rf"[*_(\[]*+(?P<letter>[{exact}])[*_)\]]*+{_BOUNDARY}"
    whole = re.compile(rf"[\s*_(\[]*+(?P<letter>[{any_case}])[\s*_)\].:]*+")
    any_case_item = rf"[*_(\[]*+[{any_case}][*_)\]]*+"
    listing = re.compile(rf"{any_case_item}(?:{_SEPARATOR}{any_case_item})+[\s.]*+")
    separator = re.compile(_SEPARATOR)
    marker = re.compile(
        r"(?i:\banswer|\bcorrect\s++(?:option|choice|letter))\b[\s:=*_]*+"
        r"(?:(?i:is|(?:would|will|should|must)\s++be)\b[\s:*_]*+)?"
        r"(?:(?i:option|choice|letter)\b\s*+)?" + letter
    )
    another = re.compile(_ALTERNATIVE + letter)
    start = re.compile(
        rf"[*_]*+(?:\((?P<a>[{exact}])\)|\[(?P<b>[{exact}])\]|(?P<c>[{exact}])(?:[).:\]]|(?=[*_])))"
        + _BOUNDARY
    )

    def parse(text: str) -> ParseResult:
        text = text.strip()
        if not text:
            return ParseResult.fail("empty")
        found = whole.fullmatch(text)
        if found:
            return ParseResult.ok(by_char[found["letter"]])
        if listing.fullmatch(text):
            items = separator.split(text.rstrip(". \t\r\n"))
            named = {by_char.get(item.strip("*_()[] \t\r\n")) for item in items}
            named.discard(None)
            if len(named) > 1:
                return ParseResult.fail("ambiguous")
            if named:
                return ParseResult.ok(named.pop() or "")
        markers = deque(marker.finditer(text), maxlen=1)  # only the last one counts
        if markers:
            other = another.match(text, markers[0].end())
            if other and other["letter"] != markers[0]["letter"]:
                return ParseResult.fail("ambiguous")
            return ParseResult.ok(markers[0]["letter"])
        found = whole.fullmatch(text.rpartition("\n")[2])
        if found:
            return ParseResult.ok(by_char[found["letter"]])
        found = start.match(text)
        if found:
            return ParseResult.ok(found["a"] or found["b"] or found["c"])
        return ParseResult.fail("no_match")

    return Parser(name=f"choice({options})", fn=parse)
