"""One tool an MCP server listed: :class:`McpTool`, its schema read like a ``@tool`` one.

See :mod:`mint_envkit.tools.mcp` for how servers run; this module turns a listed tool
into the kit's schema and a call's ``CallToolResult`` into the text of a tool message.

Example::

    from mint_envkit.tools.mcp_tool import McpTool

    made = McpTool(listed, connection)  # listed: an mcp.types.Tool
    made.schema["function"]["name"]  # 'add'
    await made.run({"a": 2, "b": 3}, timeout_s=5.0)  # '5'
"""

from __future__ import annotations

import asyncio
from typing import Any

from mint_envkit.errors import EnvError
from mint_envkit.tools.mcp_connection import McpConnection, import_mcp, on_mcp_loop
from mint_envkit.tools.mcp_cut import CUT_META, MAX_MCP_MESSAGE_BYTES
from mint_envkit.tools.results import CutResult, result_text
from mint_envkit.tools.schema import _parse_docstring
from mint_envkit.tools.threads import ToolThreads

_GRACE_S = 2.0
"""Seconds past a call's timeout before the caller stops waiting for the SDK's own timeout."""
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not")


def _untitled(schema: Any) -> Any:
    """A JSON schema without the ``title`` keys pydantic writes on every node."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _untitled(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_untitled(sub) for sub in out[key]]
    for key in _SCHEMA_ONES:
        if isinstance(out.get(key), dict):
            out[key] = _untitled(out[key])
    return out


def _content_text(result: Any, limit: int = MAX_MCP_MESSAGE_BYTES) -> str:
    """A ``CallToolResult``'s content as text for the model, at most about ``limit`` chars
    (the blocks past it are not read; the message then ends where it was cut)."""
    parts: list[str] = []
    size = 0
    for block in getattr(result, "content", None) or []:
        if size > limit:
            break
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(block.resource.text)
        else:
            mime = getattr(block, "mime_type", None) or getattr(
                getattr(block, "resource", None), "mime_type", None
            )
            parts.append(f"[{kind or 'unknown'} content{f' ({mime})' if mime else ''}, not shown]")
        size += len(parts[-1]) + 1
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        return result_text(structured, limit)  # JSON, made only as far as the limit
    return "\n".join(parts)


def _read_result(result: Any) -> tuple[str, Any, bool]:
    """``(text, cut meta or None, failed)`` of a ``CallToolResult``: run on the MCP loop,
    so a result of many blocks never costs the episode's event loop its conversion."""
    text = _content_text(result)
    meta = getattr(result, "meta", None)
    cut = meta.get(CUT_META) if isinstance(meta, dict) else None
    failed = cut.get("failed") if isinstance(cut, dict) else getattr(result, "is_error", False)
    return text, cut, bool(failed)


class McpTool:
    """One tool an MCP server listed, with the same ``schema`` as a :class:`~mint_envkit.Tool`.

    The description is the listed one up to its ``Args:`` section, whose entries
    become the parameters' descriptions (as :func:`~mint_envkit.tool` reads a
    docstring); pydantic's ``title`` keys are dropped.

    Example::

        episode.tools["add"].schema
        # {'type': 'function', 'function': {'name': 'add', 'description': 'Add two integers.',
        #   'parameters': {'type': 'object', 'properties': {'a': {'type': 'integer', ...}}, ...}}}
    """

    is_async = True

    def __init__(self, listed: Any, connection: McpConnection) -> None:
        self.remote_name = str(listed.name)
        self.name = connection.server.prefix + self.remote_name
        self.connection = connection
        self.description, doc_params = _parse_docstring(getattr(listed, "description", "") or "")
        schema = _untitled(dict(getattr(listed, "input_schema", None) or {}))
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for key, value in properties.items():
            if isinstance(value, dict) and "description" not in value and doc_params.get(key):
                value["description"] = doc_params[key]
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        rest = {k: v for k, v in schema.items() if k not in ("type", "properties", "required")}
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": list(required),
            **rest,
        }

    @property
    def schema(self) -> dict[str, Any]:
        """The tool in the chat-template ``tools=`` format (as :attr:`Tool.schema`)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(
        self,
        arguments: dict[str, Any],
        *,
        timeout_s: float | None,
        threads: ToolThreads | None = None,
    ) -> str | CutResult:
        """Call the tool on its server; its result as text (``threads`` is unused).

        An answer over the bound on one MCP message comes back as the
        :class:`~mint_envkit.tools.results.CutResult` of its start
        (:mod:`~mint_envkit.tools.mcp_cut`).

        Raises:
            TimeoutError: no answer within ``timeout_s``.
            EnvError: the server answered ``isError`` or a protocol error, or is gone;
                the message says which.
        """
        del threads
        call = on_mcp_loop(self._call(arguments, timeout_s))
        wait = None if timeout_s is None else timeout_s + _GRACE_S
        try:
            text, cut, failed = await asyncio.wait_for(call, wait)
        except (TimeoutError, EnvError):
            raise
        except Exception as err:
            raise self._error(err) from err
        if failed:
            raise EnvError(f"{self.name} failed: {text or 'the server gave no reason'}")
        if isinstance(cut, dict) and "items" in cut:  # over MAX_MCP_ITEMS: read by the kit
            if not cut.get("cut"):
                return text
            why = (
                f"the {cut.get('limit')} chars the kit reads of an answer of {cut['items']} blocks"
            )
            return CutResult(text, total_bytes=int(cut.get("bytes", 0)), why=why)
        if isinstance(cut, dict):  # the answer was over the bound on one message
            why = f"the {cut.get('limit')}-byte bound the kit reads of one MCP message"
            return CutResult(text, total_bytes=int(cut.get("bytes", 0)), why=why)
        return text

    async def _call(
        self, arguments: dict[str, Any], timeout_s: float | None
    ) -> tuple[str, Any, bool]:
        """The call and the reading of its result, on the MCP loop."""
        result = await self.connection.call(self.remote_name, arguments, timeout_s=timeout_s)
        return _read_result(result)

    def _error(self, err: Exception) -> Exception:
        mcp = import_mcp()
        server = self.connection.server.label
        if isinstance(err, mcp.MCPError):
            codes = mcp.types
            if err.code == codes.REQUEST_TIMEOUT:
                return TimeoutError(str(err))
            if err.code == codes.CONNECTION_CLOSED:
                return EnvError(
                    f"{self.name} could not finish: MCP server {server} closed the connection "
                    "(the server exited?)"
                )
            return EnvError(f"{self.name} failed: MCP server {server} answered: {err.message}")
        return EnvError(f"{self.name} failed: {type(err).__name__}: {err}")

    def __repr__(self) -> str:
        return f"McpTool(name={self.name!r}, server={self.connection.server.label})"
