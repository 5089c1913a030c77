"""MCP messages read within a bound: :class:`Bounded` keeps a message's start and end, :func:`stand_in` replaces one that is too long.

A server may answer with megabytes (a tool that returns a file, a hostile one that
returns 50 MB). The kit reads at most :data:`MAX_MCP_MESSAGE_BYTES` of one message
whole; of a longer one it keeps only the first that many bytes and the last
:data:`TAIL_BYTES`, and reads the rest without keeping it. Such a message is then
replaced by a small one standing for it (:func:`stand_in`): for an answer to
``tools/call``, a result whose text is the start of the answer's first ``text`` (or
error ``message``) with, in its ``_meta``, :data:`CUT_META` and the answer's size
(:class:`~mint_envkit.tools.mcp_tool.McpTool` makes it a
:class:`~mint_envkit.tools.results.CutResult`); for an answer to another request, a
JSON-RPC error saying how big it was. The answer's id is read from its start (a
top-level ``"id"``, where servers write it), else from its end; a message whose id
is not one of the requests waiting is dropped.

Example::

    from mint_envkit.tools.mcp_cut import Bounded, stand_in

    message = Bounded(limit=64)
    message.add(b'{"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "')
    message.add(b"x" * 1000 + b'"}]}}')
    message.cut  # True
    stand_in(message, {3: "tools/call"})["result"]["content"][0]["text"]  # 'xxxxxxxxx'
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping
from typing import Any

MAX_MCP_MESSAGE_BYTES = 4 * 1024 * 1024
"""The longest MCP message (a line over stdio, a body over HTTP) the kit reads whole."""
TAIL_BYTES = 4096
"""The bytes kept of the end of a longer message (where its id may be)."""
MAX_MCP_ITEMS = 10_000
"""The most values of one ``tools/call`` answer handed to the SDK as they are: an answer
with more (more content blocks, or structured content with more values, counted
roughly as its commas) is read by the kit into text first (:func:`many_items`): the
SDK's validation of 100k blocks held the interpreter's lock for seconds, stalling the
episode's event loop in another thread."""
CUT_META = "mint-envkit/cut"
"""The ``_meta`` key of a stand-in result: ``{"bytes": the answer's size, "limit": the bound,
"failed": whether the answer was an error}`` (the stand-in itself is always ``isError``, so
the SDK does not check its cut text against the tool's output schema)."""
_SCAN_BYTES = 65536
_TOKEN = re.compile(rb'\s*(?:("(?:[^"\\]|\\.)*")|([{}\[\]:,])|([^\s"{}\[\]:,]+))')
_SCALAR = rb'(?:"(?:[^"\\]|\\.)*"|[^\s",{}\[\]:]+)'
_TRAILING = re.compile(rb'((?:,\s*"(?:[^"\\]|\\.)*"\s*:\s*' + _SCALAR + rb"\s*)+)}\s*$")
_MEMBER = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*(' + _SCALAR + rb")")
_OPEN_ESCAPE = re.compile(
    r"(?:^|[^\\])(?:\\\\)*(\\u(?:[0-9a-fA-F]{0,3}|[dD][89abAB][0-9a-fA-F]{2}))$"
)
"""A ``\\u`` escape cut short, or a first surrogate without its second, at the end."""


class Bounded:
    """One message's bytes as they arrive: all of them up to ``limit``, else its start and end.

    Example::

        message = Bounded()
        message.add(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')
        message.cut, message.data  # (False, b'{"jsonrpc": ...}')
    """

    def __init__(self, limit: int = MAX_MCP_MESSAGE_BYTES) -> None:
        self.limit = limit
        self.size = 0
        self._head = bytearray()
        self._tail = b""

    def add(self, data: bytes | bytearray | memoryview) -> None:
        """Take the next bytes of the message."""
        self.size += len(data)
        room = self.limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if len(data) >= TAIL_BYTES:
            self._tail = bytes(data[-TAIL_BYTES:])
        elif data:
            self._tail = (self._tail + bytes(data))[-TAIL_BYTES:]

    @property
    def cut(self) -> bool:
        """True when the message was longer than ``limit`` (only its start and end are kept)."""
        return self.size > self.limit

    @property
    def data(self) -> bytes:
        """The whole message (when not :attr:`cut`), or its first ``limit`` bytes."""
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        """The last bytes of a cut message (at most :data:`TAIL_BYTES`)."""
        return self._tail


def _value(token: bytes) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return None


def _top_members(head: bytes) -> dict[str, Any]:
    """The top-level members found in the start of a message: scalars by value, others as ``...``."""
    members: dict[str, Any] = {}
    depth, state, key, pos = 0, "", "", 0
    text = head[:_SCAN_BYTES]
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            return members
        pos = match.end()
        string, mark, bare = match.groups()
        if mark in (b"{", b"["):
            if depth == 1 and state == "value":
                members[key], state = ..., "next"
            depth += 1
            if depth == 1:
                state = "key" if mark == b"{" else ""
        elif mark in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                return members
        elif depth != 1:
            continue
        elif mark == b",":
            state = "key"
        elif mark == b":" and state == "colon":
            state = "value"
        elif state == "key" and string is not None:
            key, state = str(_value(string)), "colon"
        elif state == "value":
            members[key], state = _value(string if string is not None else bare), "next"


def _trailing_members(tail: bytes) -> dict[str, Any]:
    """The top-level scalar members at the very end of a message (after its big value)."""
    match = _TRAILING.search(tail)
    if match is None:
        return {}
    return {
        str(_value(b'"' + name + b'"')): _value(value)
        for name, value in _MEMBER.findall(match.group(1))
    }


def _backslashes_before(data: bytes, end: int) -> int:
    count = 0
    while end - count > 0 and data[end - count - 1] == 0x5C:  # a backslash
        count += 1
    return count


def _string_start(head: bytes, keys: tuple[str, ...]) -> str:
    """The decoded start of the first string value of one of ``keys`` in ``head`` ('' if none)."""
    names = b"|".join(re.escape(key.encode()) for key in keys)
    found = re.search(rb'"(?:' + names + rb')"\s*:\s*"', head)
    if found is None:
        return ""
    start = end = found.end()
    while True:  # the closing quote: one not escaped by an odd run of backslashes
        end = head.find(b'"', end)
        if end < 0:
            end = len(head) - _backslashes_before(head, len(head)) % 2
            break
        if _backslashes_before(head, end) % 2 == 0:
            break
        end += 1
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head[start:end], final=False)
    open_escape = _OPEN_ESCAPE.search(text[-64:])
    if open_escape is not None:
        text = text[: len(text) - len(text[-64:]) + open_escape.start(1)]
    try:
        return str(json.loads(f'"{text}"', strict=False))
    except ValueError:
        return text


def message_id(message: Bounded, waiting: Mapping[Any, str]) -> Any:
    """The id of the request a message answers (read from its start or end, without
    parsing it whole), if it is one of ``waiting`` (else None).

    Example::

        message_id(message, {3: "tools/call"})  # 3
    """
    tail = message.tail if message.cut else message.data[-TAIL_BYTES:]
    for members in (_top_members(message.data), _trailing_members(tail)):
        found = members.get("id")
        if found is not None and not isinstance(found, bool) and found in waiting:
            return found
    return None


def undecodable(message: Bounded, waiting: Mapping[Any, str], why: str) -> dict[str, Any] | None:
    """A JSON-RPC parse error answering the request an undecodable message was for, or None.

    The SDK's stdio session drops a line its parser refuses (nesting past pydantic's
    limit of about 200 levels, an integer out of its range, broken JSON) and the request
    it answered waits for its whole timeout; this error answers it at once instead.

    Example::

        line = Bounded()
        line.add(b'{"jsonrpc": "2.0", "id": 4, "result": ' + b"[" * 5000 + b"]" * 5000 + b"}")
        undecodable(line, {4: "tools/call"}, "recursion limit exceeded")["error"]["code"]  # -32700
    """
    found = message_id(message, waiting)
    if found is None:
        return None
    error = {
        "code": -32700,
        "message": (
            f"the server's answer to {waiting[found]} ({message.size} bytes) does not "
            f"decode: {why[:300]}"
        ),
    }
    return {"jsonrpc": "2.0", "id": found, "error": error}


def _items_text(result: dict[str, Any], limit: int) -> tuple[str, int, bool]:
    """``(text, blocks, cut)``: the text blocks of ``result`` joined, up to ``limit`` chars."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    parts: list[str] = []
    size = 0
    for index, block in enumerate(blocks):
        if size > limit:
            return "\n".join(parts)[:limit], len(blocks), True
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            kind = block.get("type") if isinstance(block, dict) else None
            parts.append(f"[{kind or 'unknown'} content, not shown]")
        size += len(parts[-1]) + (1 if index else 0)
    if blocks:
        return "\n".join(parts)[:limit], len(blocks), size > limit
    from mint_envkit.tools.results import result_text  # a light sibling: no cycle at import

    structured = result.get("structuredContent")
    text = result_text(structured, limit)
    return text, 0, len(text) > limit


def many_items(
    message: Bounded, waiting: Mapping[Any, str], *, answers: Any = None
) -> dict[str, Any] | None:
    """A small stand-in for a ``tools/call`` answer with over :data:`MAX_MCP_ITEMS` values, or None.

    Read with the standard library's parser (C, tens of ms for 4 MiB), its text
    blocks are joined up to the bound on one message (structured content, when there
    is no text, is written as JSON up to it), and the answer is replaced by one text
    block with :data:`CUT_META` in its ``_meta`` (``items``: the blocks; ``cut``:
    whether text was left out). Its structured content is not handed on: the SDK
    would check it, value by value, against the tool's output schema.

    Example::

        line = Bounded()
        line.add(json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": [
            {"type": "text", "text": str(i)} for i in range(20_000)]}}).encode())
        many_items(line, {5: "tools/call"})["result"]["_meta"]  # {'mint-envkit/cut': {..., 'items': 20000}}
    """
    data = message.data
    if message.cut or data.count(b",") <= MAX_MCP_ITEMS:
        return None
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return None  # the SDK's parser refuses it too: undecodable()
    found = parsed.get("id") if isinstance(parsed, dict) else None
    if answers in waiting:
        found = answers
    result = parsed.get("result") if isinstance(parsed, dict) else None
    if found not in waiting or waiting[found] != "tools/call" or not isinstance(result, dict):
        return None
    text, blocks, cut = _items_text(result, message.limit)
    meta = {"bytes": message.size, "limit": message.limit, "items": blocks, "cut": cut}
    meta["failed"] = result.get("isError") is True
    answer = {
        "content": [{"type": "text", "text": text}],
        "isError": True,
        "resultType": "complete",
    }
    answer["_meta"] = {CUT_META: meta}
    return {"jsonrpc": "2.0", "id": found, "result": answer}


def stand_in(
    message: Bounded, waiting: Mapping[Any, str], *, answers: Any = None
) -> dict[str, Any] | None:
    """A small JSON-RPC message standing for a cut one (see the module), or None to drop it.

    ``waiting``: the ids of the requests not yet answered, with their methods;
    ``answers``: the id of the request the message is known to answer (an HTTP
    response body), else it is read from the message.

    Example::

        stand_in(message, {3: "tools/call"})
        # {'jsonrpc': '2.0', 'id': 3, 'result': {'content': [{'type': 'text', 'text': ...}],
        #  'isError': True, 'resultType': 'complete',
        #  '_meta': {'mint-envkit/cut': {'bytes': 1034, 'limit': 64, 'failed': False}}}}
    """
    found = answers if answers in waiting else message_id(message, waiting)
    if found is None:
        return None
    size = {"bytes": message.size, "limit": message.limit}
    method = waiting[found]
    if method != "tools/call":
        error = {
            "code": -32603,
            "message": (
                f"the server's answer to {method} was {message.size} bytes, over the "
                f"{message.limit}-byte bound the kit reads of one MCP message"
            ),
        }
        return {"jsonrpc": "2.0", "id": found, "error": error}
    top = _top_members(message.data)
    failed = "error" in top or re.search(rb'"isError"\s*:\s*true', message.tail) is not None
    text = _string_start(message.data, ("message",) if "error" in top else ("text", "message"))
    content = [{"type": "text", "text": text}]
    # isError: so the SDK does not hold a cut text against the tool's output schema;
    # whether the answer was an error is in the _meta
    result = {"content": content, "isError": True, "resultType": "complete"}
    result["_meta"] = {CUT_META: {**size, "failed": failed}}
    return {"jsonrpc": "2.0", "id": found, "result": result}
