"""Bounded and stand_in: an MCP message over the bound is kept as its start and end, and
stood in for by a small message answering the same request."""

from __future__ import annotations

import json

import pytest

from mint_envkit.tools.mcp_cut import CUT_META, TAIL_BYTES, Bounded, message_id, stand_in


def bounded(message: dict, limit: int = 1000, chunk: int = 777) -> Bounded:
    data = json.dumps(message, ensure_ascii=False).encode()
    out = Bounded(limit)
    for start in range(0, len(data), chunk):
        out.add(data[start : start + chunk])
    return out


def answer(text: str, *, id_=3, error=False, id_last=False) -> dict:
    result = {"content": [{"type": "text", "text": text}], "isError": error}
    if id_last:
        return {"result": result, "jsonrpc": "2.0", "id": id_}
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def test_a_message_within_the_bound_is_kept_whole():
    message = answer("short")
    kept = bounded(message)
    assert not kept.cut and json.loads(kept.data) == message


def test_a_longer_one_keeps_its_start_and_end_only():
    kept = bounded(answer("x" * 100_000), limit=1000)
    assert kept.cut and kept.size > 100_000
    assert len(kept.data) == 1000 and len(kept.tail) == TAIL_BYTES
    assert kept.tail.endswith(b'"isError": false}}')


@pytest.mark.parametrize("id_last", [False, True])
def test_a_cut_tool_result_stands_in_with_the_start_of_its_text(id_last):
    text = 'é"\\\n' + "x" * 100_000
    kept = bounded(answer(text, id_="req-7", id_last=id_last))
    assert message_id(kept, {"req-7": "tools/call"}) == "req-7"
    standing = stand_in(kept, {"req-7": "tools/call", 8: "tools/call"})
    assert standing is not None and standing["id"] == "req-7"
    result = standing["result"]
    shown = result["content"][0]["text"]
    assert text.startswith(shown) and len(shown) > 900
    assert result["_meta"][CUT_META] == {"bytes": kept.size, "limit": 1000, "failed": False}
    assert result["isError"] is True  # the carrier; "failed" says whether the tool failed


def test_a_cut_error_is_a_failed_stand_in():
    failed = stand_in(bounded(answer("y" * 100_000, error=True)), {3: "tools/call"})
    assert failed["result"]["_meta"][CUT_META]["failed"] is True
    protocol = {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "m" * 100_000}}
    standing = stand_in(bounded(protocol), {3: "tools/call"})
    assert standing["result"]["_meta"][CUT_META]["failed"] is True
    assert standing["result"]["content"][0]["text"].startswith("mmm")


def test_a_cut_answer_to_another_request_is_an_error_saying_its_size():
    kept = bounded({"jsonrpc": "2.0", "id": 4, "result": {"tools": ["t" * 100_000]}})
    standing = stand_in(kept, {4: "tools/list"})
    assert standing == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {
            "code": -32603,
            "message": f"the server's answer to tools/list was {kept.size} bytes, over the "
            "1000-byte bound the kit reads of one MCP message",
        },
    }


def test_a_cut_message_no_request_waits_for_is_dropped():
    assert stand_in(bounded(answer("x" * 100_000, id_=9)), {3: "tools/call"}) is None
    notification = {"jsonrpc": "2.0", "method": "notifications/message", "params": "p" * 10**5}
    assert stand_in(bounded(notification), {3: "tools/call"}) is None
    # an id deep in the content is not the message's
    nested = {"result": {"content": [{"type": "text", "text": "z" * 10**5}], "id": 3}}
    assert stand_in(bounded(nested), {3: "tools/call"}) is None


def test_a_known_request_needs_no_id_in_the_message():
    kept = bounded({"result": {"content": [{"type": "text", "text": "z" * 10**5}]}})
    assert stand_in(kept, {5: "tools/call"}, answers=5)["id"] == 5


@pytest.mark.parametrize(
    ("raw_end", "shown"),
    [(b"ab\\u00", "ab"), (b"ab\\ud83d", "ab"), (b"ab\\\\", "ab\\"), (b"ab\xc3", "ab")],
)
def test_a_text_cut_inside_an_escape_or_a_character_loses_only_that(raw_end, shown):
    head = b'{"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "'
    kept = Bounded(len(head) + len(raw_end))
    kept.add(head + raw_end + b"q" * 5000 + b'"}]}}')
    assert stand_in(kept, {3: "tools/call"})["result"]["content"][0]["text"] == shown


def test_an_answer_of_many_blocks_reaches_the_sdk_as_one_text_block():
    """issue 46: the SDK validated 100k blocks one by one (its lock held for seconds);
    over MAX_MCP_ITEMS the kit reads the text and hands the SDK one block."""
    from mint_envkit.tools.mcp_cut import MAX_MCP_ITEMS
    from mint_envkit.tools.mcp_stdio import read_message as message

    blocks = [{"type": "text", "text": f"item {i}"} for i in range(MAX_MCP_ITEMS + 1)]
    line = Bounded(8 << 20)
    line.add(json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": blocks}}).encode())
    handed = message(line, {7: "tools/call"}).message
    assert len(handed.result["content"]) == 1
    assert handed.result["content"][0]["text"] == "\n".join(b["text"] for b in blocks)
    assert handed.result["_meta"][CUT_META]["items"] == MAX_MCP_ITEMS + 1
    few = Bounded(8 << 20)
    few.add(json.dumps({"jsonrpc": "2.0", "id": 8, "result": {"content": blocks[:3]}}).encode())
    assert len(message(few, {8: "tools/call"}).message.result["content"]) == 3  # as it came


def test_an_undecodable_answer_becomes_a_parse_error_for_its_request():
    from mint_envkit.tools.mcp_stdio import read_message as message

    line = Bounded()
    line.add(b'{"jsonrpc": "2.0", "id": 9, "result": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}")
    handed = message(line, {9: "tools/call"}).message
    assert handed.error.code == -32700 and "does not decode" in handed.error.message
