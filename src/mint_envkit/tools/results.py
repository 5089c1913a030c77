"""A tool's result as the text of its ``tool`` message, cut to the result cap.

A string is kept as it is, anything else is written as JSON (or with ``str()`` when it
is not JSON). With a cap, the text is cut to that many chars and ends with a marker.
A value that is not a string is converted only as far as the cap reaches: its JSON is
made piece by piece and the making stops past the cap, so a result of millions of
elements costs the caller's event loop what the kept part costs, not the whole
conversion. A value that is not JSON (a ``set``, a list holding one) is written as
``str()`` writes it, also piece by piece for the builtin containers (before, a
3-million-element set was written whole: 1.03 s of the loop in issue 46's probe). A :class:`CutResult` is a result already cut before it reached the kit
(an MCP server's answer over the bound on one message, see
:mod:`~mint_envkit.tools.mcp_cut`); its marker says how big the answer was.

Example::

    from mint_envkit.tools.results import result_text

    result_text({"a": 1}, 100)  # '{"a": 1}'
    result_text("x" * 10, 4)  # 'xxxx\\n[6 of 10 chars cut: a tool result is capped at 4 chars]'
    result_text(list(range(1_000_000)), 20)  # '[0, 1, 2, 3, 4, 5, 6\\n[the rest cut: ...]'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


class CutResult:
    """A tool result cut before it reached the kit: the text kept, and the size of the whole.

    Attributes:
        text: the start of the result's text that was kept.
        total_bytes: how many bytes the whole answer had.
        why: what cut it, for the marker.

    Example::

        CutResult("xxxx", total_bytes=52_428_857, why="the bound on one MCP message")
    """

    def __init__(self, text: str, *, total_bytes: int, why: str) -> None:
        self.text = text
        self.total_bytes = total_bytes
        self.why = why

    def __repr__(self) -> str:
        return f"CutResult({len(self.text)} chars kept of {self.total_bytes} bytes)"


def capped(text: str, cap: int | None) -> str:
    """``text`` cut to ``cap`` chars (None: no cap), with a marker saying how much was cut.

    Example::

        capped("abcdef", 2)  # 'ab\\n[4 of 6 chars cut: a tool result is capped at 2 chars]'
    """
    if cap is None or len(text) <= cap:
        return text
    return (
        f"{text[:cap]}\n[{len(text) - cap} of {len(text)} chars cut: a tool result is "
        f"capped at {cap} chars]"
    )


def _pieces(value: Any, room: int, path: set[int]) -> Iterator[str]:
    """``value``'s JSON (as ``json.dumps`` writes it) piece by piece; strings cut to ``room`` chars.

    ``path``: the ids of the containers being written. Raises TypeError for a value that
    is not JSON, ValueError for a cycle (as ``json.dumps`` does).
    """
    if isinstance(value, str):
        yield json.dumps(value[:room], ensure_ascii=False)
        return
    if value is None or isinstance(value, bool | int | float):
        yield json.dumps(value)
        return
    if not isinstance(value, list | tuple | dict):
        raise TypeError(f"a {type(value).__name__} is not JSON")
    if id(value) in path:
        raise ValueError("circular reference")
    path.add(id(value))
    if isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            if not (key is None or isinstance(key, str | bool | int | float)):
                raise TypeError(f"keys must be str, int, float, bool or None, not {type(key)}")
            name = key if isinstance(key, str) else json.dumps(key)
            yield (", " if index else "") + json.dumps(name[:room], ensure_ascii=False) + ": "
            yield from _pieces(item, room, path)
        yield "}"
    else:
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ", "
            yield from _pieces(item, room, path)
        yield "]"
    path.discard(id(value))


_OPEN = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), dict: ("{", "}")}


def _repr_pieces(value: Any, room: int, path: set[int]) -> Iterator[str]:
    """``repr(value)`` piece by piece for the builtin containers (what ``str()`` of one
    writes); a string or bytes leaf cut to ``room`` chars first."""
    kind = type(value)
    if kind is str or kind is bytes:
        yield repr(value[:room])
        return
    if kind not in (list, tuple, set, frozenset, dict):
        yield _shown(value, whole=True)
        return
    if id(value) in path:  # as repr() marks a container inside itself
        yield "{...}" if kind is dict else "[...]"
        return
    if kind is set and not value:
        yield "set()"
        return
    if kind is frozenset:
        yield "frozenset()" if not value else "frozenset({"
        if not value:
            return
        opening, closing = "", "})"
    else:
        opening, closing = _OPEN[kind]
    path.add(id(value))
    yield opening
    items = value.items() if kind is dict else value
    for index, item in enumerate(items):
        if index:
            yield ", "
        if kind is dict:
            yield from _repr_pieces(item[0], room, path)
            yield ": "
            yield from _repr_pieces(item[1], room, path)
        else:
            yield from _repr_pieces(item, room, path)
    if kind is tuple and len(value) == 1:
        yield ","
    yield closing
    path.discard(id(value))


def _shown(value: Any, whole: bool = False) -> str:
    try:
        return repr(value) if whole else str(value)
    except Exception as err:
        return f"<a {type(value).__name__} that cannot be shown: {type(err).__name__}>"


def _shown_within(value: Any, cap: int) -> str:
    """``str(value)`` cut to ``cap`` chars and a marker; a builtin container (a set, a list
    holding one) is written only as far as the cap reaches, never whole."""
    if type(value) not in (list, tuple, set, frozenset, dict):
        return capped(_shown(value), cap)
    try:
        return _joined_within(_repr_pieces(value, cap + 1, set()), cap)
    except (RecursionError, ValueError):  # too deep; an int too long to write
        return capped(_shown(value), cap)


def _joined_within(pieces: Iterable[str], cap: int) -> str:
    """The ``pieces`` joined, read only until they pass ``cap`` chars: then cut there,
    with a marker (what the pieces' generator raises passes through)."""
    parts: list[str] = []
    size = 0
    for piece in pieces:
        parts.append(piece)
        size += len(piece)
        if size > cap:
            text = "".join(parts)
            return f"{text[:cap]}\n[the rest cut: a tool result is capped at {cap} chars]"
    return "".join(parts)


def result_text(value: Any, cap: int | None) -> str:
    """The text of the tool message for ``value``, at most ``cap`` chars and a marker (None: whole).

    Example::

        result_text(5, 100)  # '5'
        result_text(["ab", "cd"], 5)  # '["ab"\\n[the rest cut: a tool result is capped at 5 chars]'
    """
    if isinstance(value, CutResult):
        kept = value.text if cap is None else value.text[:cap]
        limit = "" if cap is None else f"; a tool result is capped at {cap} chars"
        return (
            f"{kept}\n[the rest cut: the answer was {value.total_bytes} bytes, over "
            f"{value.why}{limit}]"
        )
    if isinstance(value, str):
        return capped(value, cap)
    if cap is None:
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return _shown(value)
    try:
        return _joined_within(_pieces(value, cap + 1, set()), cap)
    except (TypeError, ValueError, RecursionError):
        return _shown_within(value, cap)
