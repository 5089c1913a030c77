"""Removing ``<think>...</think>`` blocks from a completion.

The rules (see :data:`mint_envkit.parsers.strip_thinking` for the public parser):

1. Every complete ``<think>...</think>`` block is removed. Blocks do not nest: a block
   ends at the first ``</think>`` after its ``<think>`` (a ``<think>`` written inside a
   block is just thinking text).
2. A ``</think>`` outside any block means the reply started inside a think block (Qwen3
   style templates put the ``<think>`` in the prompt), so everything up to and including
   it is thinking. With several such closers, the last one wins.
3. A ``<think>`` that is never closed makes the status ``"unclosed_think"``.
4. What is left is stripped; nothing left gives ``"empty"``.

Tags are matched exactly (lowercase, no spaces or attributes). Runs in linear time.

Example::

    from mint_envkit.parsers.thinking import remove_thinking

    assert remove_thinking("<think>2+3?</think> 5").value == "5"
    assert remove_thinking("hmm</think>5").value == "5"
    assert remove_thinking("<think>2+3").status == "unclosed_think"
"""

from __future__ import annotations

import re

from mint_envkit.parsers.result import ParseResult

_TAG = re.compile(r"</?think>")


def remove_thinking(text: str) -> ParseResult:
    """Return ``text`` without its thinking, or why that is impossible (see module docs).

    Example::

        assert remove_thinking("<think>a</think>b<think>c</think> d").value == "b d"
    """
    pieces: list[str] = []
    inside = False
    pos = 0  # start of the text not yet assigned to a piece or to thinking
    for match in _TAG.finditer(text):
        is_open = match.group() == "<think>"
        if inside:
            if not is_open:
                inside = False
                pos = match.end()
        elif is_open:
            pieces.append(text[pos : match.start()])
            inside = True
        else:  # a stray </think>: everything so far was thinking
            pieces.clear()
            pos = match.end()
    if inside:
        return ParseResult.fail("unclosed_think")
    pieces.append(text[pos:])
    rest = "".join(pieces).strip()
    if not rest:
        return ParseResult.fail("empty")
    return ParseResult.ok(rest)
