"""Answers marked up in the completion: :data:`boxed` and :func:`xml_tag`.

Both read the LAST complete answer, strip whitespace around it, and never join several
answers together. Both run in linear time on any input.

Example::

    from mint_envkit.parsers import boxed, xml_tag

    assert boxed(r"\\boxed{840} so \\boxed{840}").value == "840"
    assert xml_tag("answer")("<answer> 7 </answer>").value == "7"
"""

from __future__ import annotations

import re
from itertools import accumulate, chain, repeat

from mint_envkit.errors import ConfigError
from mint_envkit.parsers.parser import Parser
from mint_envkit.parsers.result import ParseResult

_BOX_STARTS = ("\\boxed{", "\\fbox{")
_BOX_START = re.compile(r"\\(?:boxed|fbox)\{")
_BRACE_STEP = {"{": 1, "}": -1}
_TAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _content(text: str) -> ParseResult:
    stripped = text.strip()
    return ParseResult.ok(stripped) if stripped else ParseResult.fail("empty")


def _walk(
    text: str, pos: int, limit: int, depth: int, open_boxes: list[tuple[int, int]]
) -> tuple[int, tuple[int, int] | None]:
    """Walk ``text[pos:limit]`` (no box starts in it) entering at brace ``depth``.

    Pops the boxes that close in it (a box closes where the depth comes back to its level,
    the depth before its ``{``; inner boxes close first) and returns the depth at
    ``limit`` and the content span of the last box closed, if any.
    """
    last = None
    if open_boxes and text.find("{", pos, limit) < 0:
        # the usual "\\boxed{42}": while levels are adjacent, each "}" closes a box
        while open_boxes and open_boxes[-1][0] == depth - 1:
            close = text.find("}", pos, limit)
            if close < 0:
                break
            last, depth, pos = (open_boxes.pop()[1], close), depth - 1, close + 1
    if not open_boxes or text.find("}", pos, limit) < 0:
        return depth + text.count("{", pos, limit) - text.count("}", pos, limit), last
    # running depths of the stretch, computed in C, so any brace pattern stays linear
    steps = list(accumulate(map(_BRACE_STEP.get, text[pos:limit], repeat(0))))
    lowest, start = min(steps), 0
    while open_boxes and open_boxes[-1][0] - depth >= lowest:
        level, content_start = open_boxes.pop()
        close = steps.index(level - depth, start)
        last, start = (content_start, pos + close), close + 1
    return depth + steps[-1], last


def _boxed(text: str) -> ParseResult:
    if not text.strip():
        return ParseResult.fail("empty")
    found = [i for i in (text.find(start) for start in _BOX_STARTS) if i >= 0]
    if not found:
        return ParseResult.fail("no_match")
    open_boxes: list[tuple[int, int]] = []  # (depth before its "{", where its content starts)
    last: tuple[int, int] | None = None  # content span of the box that closed last so far
    depth = 0  # braces opened minus braces closed since the first box
    pos = min(found)  # text[:pos] is done
    for box in chain(_BOX_START.finditer(text, pos), [None]):
        limit = len(text) if box is None else box.start()
        if pos < limit:
            depth, closed = _walk(text, pos, limit, depth, open_boxes)
            last = closed or last
        if box is None:
            break
        open_boxes.append((depth, box.end()))
        depth, pos = depth + 1, box.end()
    if last is None:
        return ParseResult.fail("truncated")
    return _content(text[last[0] : last[1]])


boxed = Parser(name="boxed", fn=_boxed)
"""The content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``), stripped.

Braces nest (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``). With several boxes the one
that closes last wins (so for nested boxes, the outer one); boxes are never concatenated.
Statuses: ``ok``; ``empty`` (blank text, or the last box is blank); ``no_match`` (no
``\\boxed{``); ``truncated`` (a box was opened but none closed, e.g. ``\\boxed{12``). A
complete box followed by an unclosed one gives the complete one. ``\\boxed 5`` (no
braces) and ``\\boxed {5}`` (a space) are not read.

Example::

    assert boxed(r"\\boxed{\\frac{1}{2}}").value == r"\\frac{1}{2}"
    assert boxed(r"\\boxed{3} no, \\boxed{ 4 }").value == "4"
    assert boxed(r"so \\boxed{12").status == "truncated"
"""


def xml_tag(name: str) -> Parser:
    """A Parser for the content of the last complete ``<name>...</name>``, stripped.

    ``name`` must be a plain tag name (a letter or ``_``, then letters, digits, ``_``,
    ``.``, ``-``); anything else raises :class:`~mint_envkit.errors.ConfigError`. Tags are
    matched exactly: case-sensitive, no attributes, no spaces inside the angle brackets.
    The last complete pair is the last ``<name>`` that has a ``</name>`` after it, up to
    the first such ``</name>``, so a nested ``<a><a>5</a></a>`` gives ``5``.
    Statuses: ``ok``; ``empty`` (blank text or blank content); ``no_match`` (no opening
    tag at all; a stray closing tag is ignored); ``truncated`` (an opening tag but no
    complete pair, the usual sign of a reply cut at the token limit). The parser's name
    is ``"xml_tag(<name>)"``.

    Example::

        answer = xml_tag("answer")
        assert answer("<answer>3</answer> <answer>\\n 4 </answer>").value == "4"
        assert answer("<answer>4").status == "truncated"
        assert answer.name == "xml_tag(answer)"
    """
    if not isinstance(name, str) or not _TAG_NAME.fullmatch(name):
        raise ConfigError(
            f"xml_tag name {name!r} is not a plain tag name; pass the name without angle "
            "brackets, e.g. xml_tag('answer') (letters, digits, '_', '.', '-')"
        )
    opening, closing = f"<{name}>", f"</{name}>"

    def parse(text: str) -> ParseResult:
        if not text.strip():
            return ParseResult.fail("empty")
        first_open, last_close = text.find(opening), text.rfind(closing)
        if first_open < 0:
            return ParseResult.fail("no_match")
        if last_close < first_open:
            return ParseResult.fail("truncated")
        start = text.rfind(opening, 0, last_close) + len(opening)
        return _content(text[start : text.find(closing, start)])

    return Parser(name=f"xml_tag({name})", fn=parse)
