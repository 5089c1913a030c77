"""Tool calls in a model's own format: read them out of a reply.

Qwen2.5, Qwen3 and Hermes models write a tool call as a JSON object between
``<tool_call>`` tags, several per reply allowed::

    <tool_call>
    {"name": "calculate", "arguments": {"expression": "2 + 3"}}
    </tool_call>

:func:`parse_hermes_tool_calls` splits such a reply into its text, the calls it
could read (OpenAI style: ``{"type": "function", "id": ..., "function": {"name":
..., "arguments": "<JSON text>"}}``) and the blocks it could not (``{"raw_text":
..., "error": ...}``), so a malformed call is reported, never lost.

Example::

    from mint_envkit.rendering.tool_calls import parse_hermes_tool_calls

    text, calls, bad = parse_hermes_tool_calls(
        'Let me add.<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>'
    )
    # text == "Let me add."; calls[0]["function"] == {"name": "add", "arguments": '{"a": 2}'}
"""

from __future__ import annotations

import json
import re
from typing import Any

from mint_envkit.tools.arguments import load_json

_TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_OUTRO = (
    "</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _read_call(body: str, index: int) -> tuple[dict[str, Any] | None, str | None]:
    # no size cap here (a reply is as long as its token limit); the env caps the arguments
    value, why = load_json(body, max_chars=None)
    if why is not None:
        return None, f"the tool call is {why}"
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None, 'a tool call must be a JSON object {"name": ..., "arguments": {...}}'
    arguments = value.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call = {"type": "function", "id": f"call_{index}"}
    call["function"] = {"name": value["name"], "arguments": text}
    return call, None


def parse_hermes_tool_calls(
    content: str,
) -> tuple[str, list[dict[str, Any]], list[dict[str, str]]]:
    """Split ``content`` into (text without the calls, calls read, calls not read).

    A ``<tool_call>`` that is never closed is a call not read (the reply was
    probably cut off). Arguments keep the model's JSON text (``"arguments"`` is
    a string, as in OpenAI's format); a non-string ``arguments`` value is
    written back as JSON. A block nested deeper than
    :data:`~mint_envkit.tools.arguments.MAX_JSON_DEPTH` levels is a call not read; it never
    raises ``RecursionError``.

    Example::

        parse_hermes_tool_calls("<tool_call>{oops}</tool_call>")
        # ('', [], [{'raw_text': '{oops}', 'error': 'the tool call is not JSON (...)'}])
    """
    calls: list[dict[str, Any]] = []
    unparsed: list[dict[str, str]] = []
    if _OPEN not in content:
        return content, calls, unparsed
    for match in _BLOCK.finditer(content):
        body = match.group(1).strip()
        call, error = _read_call(body, len(calls))
        if call is not None:
            calls.append(call)
        else:
            unparsed.append({"raw_text": body, "error": error or ""})
    rest = _BLOCK.sub("", content)
    cut = rest.find(_OPEN)
    if cut != -1:
        unparsed.append(
            {
                "raw_text": rest[cut + len(_OPEN) :].strip(),
                "error": "<tool_call> was opened but never closed with </tool_call>",
            }
        )
        rest = rest[:cut]
    return rest.strip(), calls, unparsed


def tools_system_block(tools: list[dict[str, Any]]) -> str:
    """The ``# Tools`` block a renderer writes into the system message (Qwen3's wording).

    Used when a chat template has no tools slot: each schema is one JSON line
    inside ``<tools></tools>``, then the instruction to reply with
    ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, the format
    :func:`parse_hermes_tool_calls` reads back.

    Example::

        tools_system_block([{"type": "function", "function": {"name": "add"}}])
        # '# Tools\\n\\nYou may call ... <tools>\\n{"type": "function", ...}\\n</tools> ...'
    """
    lines = [json.dumps(t, ensure_ascii=False) for t in tools]
    return "\n".join([_TOOLS_INTRO, *lines, _TOOLS_OUTRO])


def format_tool_calls(calls: list[Any]) -> str:
    """Assistant ``tool_calls`` written as ``<tool_call>`` JSON blocks, one per call.

    For a chat template that does not render ``tool_calls``: a few-shot example
    with calls then shows them as the model is asked to write them. Arguments
    given as JSON text are written as the object they hold.

    Example::

        format_tool_calls([{"function": {"name": "add", "arguments": '{"a": 2}'}}])
        # '<tool_call>\\n{"name": "add", "arguments": {"a": 2}}\\n</tool_call>'
    """
    blocks = []
    for call in calls:
        function = call.get("function", call) if isinstance(call, dict) else {}
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            value, why = load_json(arguments, max_chars=None)
            arguments = arguments if why is not None else value
        body = json.dumps(
            {"name": function.get("name"), "arguments": arguments}, ensure_ascii=False
        )
        blocks.append(f"{_OPEN}\n{body}\n{_CLOSE}")
    return "\n".join(blocks)
