"""A tool call's arguments, read and checked: bounded JSON, then the tool's schema.

A model may write anything: text that is not JSON, JSON nested thousands of levels
deep (Python's parser recurses), megabytes of it, a list where an object belongs.
:func:`load_json` reads JSON text within a size and a depth and says why not;
:func:`validate_arguments` checks a value against a tool's schema. Neither raises
on what a model wrote, and their messages quote at most a short preview of it.

Example::

    from mint_envkit.tools.arguments import load_json

    load_json('{"a": 1}')  # ({'a': 1}, None)
    load_json("[" * 5000)  # (None, 'nested deeper than 64 levels')
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mint_envkit.checks import is_integer, is_number

if TYPE_CHECKING:
    from mint_envkit.tools.schema import Tool

MAX_ARGUMENT_CHARS = 1_000_000
"""The longest JSON text of a tool call's arguments that is read (longer: an invalid call)."""
MAX_JSON_DEPTH = 64
"""The deepest nesting of lists and objects a tool call may hold (deeper: an invalid call)."""
_PREVIEW_CHARS = 120


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep lists and objects (and tuples) nest in ``value``, counted up to ``limit + 1``.

    Iterative, so a value nested deeper than Python's recursion limit is measured
    without recursing; it stops at ``limit + 1``, so the cost is bounded by the value's
    size, not its depth.

    Example::

        json_depth({"a": [1, [2]]})  # 3
        json_depth(1)  # 0
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def load_json(
    text: str, *, max_chars: int | None = MAX_ARGUMENT_CHARS, max_depth: int = MAX_JSON_DEPTH
) -> tuple[Any, str | None]:
    """Read JSON a model wrote: ``(value, None)``, or ``(None, why not)``; it never raises.

    Text longer than ``max_chars`` (None: no cap) is not parsed; text that is not
    JSON, or that nests lists and objects deeper than ``max_depth``, is refused
    (Python's parser recurses, so deep nesting would raise ``RecursionError``).
    The reason reads after "is" / "are": ``'not JSON (Expecting value at
    position 0)'``, ``'nested deeper than 64 levels'``, ``'2000000 chars long;
    the limit is 1000000'``.

    Example::

        load_json('{"a": 1}')  # ({'a': 1}, None)
        load_json("{a: 1}")  # (None, 'not JSON (Expecting property name ... at position 1)')
    """
    if max_chars is not None and len(text) > max_chars:
        return None, f"{len(text)} chars long; the limit is {max_chars}"
    deep = f"nested deeper than {max_depth} levels"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg} at position {err.pos})"
    except RecursionError:
        return None, deep
    if json_depth(value, max_depth) > max_depth:
        return None, deep
    return value, None


def _key(key: Any) -> str:
    """A key as ``repr`` when short (``'q'``), else a preview."""
    return repr(key) if isinstance(key, str) and len(key) <= _PREVIEW_CHARS else _preview(key)


def _preview(value: Any) -> str:
    """``value`` as short JSON (or repr) for a message; never raises, never long."""
    if isinstance(value, str) and len(value) > _PREVIEW_CHARS:
        value = value[:_PREVIEW_CHARS]
    try:
        if json_depth(value, 8) > 8:
            text = f"<{type(value).__name__} nested deeper than 8 levels>"
        else:
            text = json.dumps(value, ensure_ascii=False)
    except Exception:
        try:
            text = repr(value)[: _PREVIEW_CHARS + 1]
        except Exception:
            text = f"<{type(value).__name__}>"
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "..."


def _matches(value: Any, schema: dict[str, Any], path: str) -> str | None:
    if "anyOf" in schema:
        errors = [_matches(value, s, path) for s in schema["anyOf"]]
        return None if None in errors else errors[0]
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of {json.dumps(schema['enum'])}, got {_preview(value)}"
    kind = schema.get("type")
    if kind is None:
        return None
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": is_integer,
        "number": is_number,
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if not any(checks[k](value) for k in kinds):
        return f"{path} must be of type {' or '.join(kinds)}, got {_preview(value)}"
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            error = _matches(item, schema["items"], f"{path}[{index}]")
            if error:
                return error
    if isinstance(value, dict) and "additionalProperties" in schema:
        for key, item in value.items():
            error = _matches(item, schema["additionalProperties"], f"{path}[{_key(key)}]")
            if error:
                return error
    return None


def validate_arguments(tool_: Tool, arguments: Any) -> str | None:
    """Why ``arguments`` do not fit the tool's schema, or None when they do.

    Checks: a JSON object, nested at most :data:`MAX_JSON_DEPTH` levels, every
    required parameter present, no unknown parameter, and every value of its
    declared type. Never raises on what a model wrote; quotes at most a short
    preview of a bad value.

    Example::

        # not run: `calculate` comes from your own code
        validate_arguments(calculate, {"expression": 2})
        # "argument 'expression' must be of type string, got 2"
    """
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {_preview(arguments)}"
    if json_depth(arguments) > MAX_JSON_DEPTH:
        return f"arguments are nested deeper than {MAX_JSON_DEPTH} levels"
    properties = tool_.parameters["properties"]
    missing = [p for p in tool_.parameters["required"] if p not in arguments]
    if missing:
        return f"missing required argument(s) {', '.join(map(repr, missing))}"
    unknown = [k for k in arguments if k not in properties]
    if unknown:
        return (
            f"unknown argument(s) {', '.join(_key(k) for k in unknown[:10])}; "
            f"{tool_.name} takes {', '.join(map(repr, properties)) or 'no arguments'}"
        )
    for key, value in arguments.items():
        error = _matches(value, properties[key], f"argument {key!r}")
        if error:
            return error
    return None
