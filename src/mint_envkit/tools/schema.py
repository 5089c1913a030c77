"""Tools from plain functions: :class:`Tool`, :func:`tool`, the JSON schema of a signature.

See :mod:`mint_envkit.tools` for the supported types and an example.

Example::

    from mint_envkit.tools.schema import tool

    @tool
    def add(a: int, b: int = 0) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, overload

from mint_envkit.errors import ToolDefinitionError
from mint_envkit.tools.threads import ToolThreads, default_threads

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARGS_HEADERS = ("args:", "arguments:", "parameters:", "params:")
_SECTION = re.compile(r"^(?:[A-Z][A-Za-z ]*:|[A-Z][A-Za-z ]*\n-{3,})")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return ""


def _schema_for(hint: Any, where: str) -> dict[str, Any]:
    """The JSON schema of one type hint; ``where`` names the parameter in errors."""
    if hint is Any:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        kinds = {_json_type(a) for a in args}
        if "" in kinds or not args:
            raise ToolDefinitionError(
                f"{where}: Literal values must be strings, numbers or booleans, got {args!r}"
            )
        schema: dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1:
            schema["type"] = kinds.pop()
        return schema
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        parts = [_schema_for(a, where) for a in options]
        if len(options) < len(args):
            parts.append({"type": "null"})
        if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if origin in (list, tuple) or hint in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise ToolDefinitionError(
                f"{where}: only variable-length tuples (tuple[T, ...]) are supported, "
                f"got {hint!r}; use list[T]"
            )
        item = args[0] if args else Any
        items = _schema_for(item, where)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict or hint is dict:
        if args and args[0] is not str:
            raise ToolDefinitionError(
                f"{where}: JSON object keys are strings; use dict[str, ...], got {hint!r}"
            )
        values = _schema_for(args[1], where) if args else {}
        schema = {"type": "object"}
        if values:
            schema["additionalProperties"] = values
        return schema
    raise ToolDefinitionError(
        f"{where}: type {hint!r} has no JSON schema here; use str, int, float, bool, "
        "list[...], dict[str, ...], Literal[...] or Optional[...]"
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Reads Google style (``Args:`` then ``name (type): text``) and numpy style
    (``Parameters`` underlined, then ``name : type`` and indented text).
    """
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        numpy = stripped.lower() == "parameters" and i + 1 < len(lines)
        numpy = numpy and set(lines[i + 1].strip()) == {"-"}
        if stripped.lower() in _ARGS_HEADERS or numpy:
            i += 2 if numpy else 1
            current = None
            base = None
            while i < len(lines):
                line = lines[i]
                if not line.strip():
                    i += 1
                    continue
                indent = len(line) - len(line.lstrip())
                if base is None:
                    base = indent
                if indent < base or (indent == base and _SECTION.match(line.strip())):
                    break
                if indent == base:
                    head, _, text = line.strip().partition(" : " if numpy else ":")
                    current = head.split("(")[0].strip().lstrip("*")
                    params[current] = "" if numpy else text.strip()
                elif current is not None:
                    params[current] = (params[current] + " " + line.strip()).strip()
                i += 1
            continue
        if _SECTION.match(stripped) or (
            i + 1 < len(lines) and stripped and set(lines[i + 1].strip()) == {"-"}
        ):
            break
        description.append(line)
        i += 1
    return "\n".join(description).strip(), params


class Tool:
    """A function the model can call, with its JSON schema.

    Make one with :func:`tool`. A ``Tool`` is still callable as the function.

    Attributes:
        name: the tool's name (the function's, unless given).
        description: what the tool does (the docstring's first part).
        parameters: the JSON schema of the arguments (``{"type": "object", ...}``).
        fn: the function.
        is_async: True for an ``async def`` function.

    Example::

        @tool
        def add(a: int, b: int = 0) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

        add.schema  # {'type': 'function', 'function': {'name': 'add', ...}}
        await add.run({"a": 2, "b": 3}, timeout_s=1.0)  # 5
    """

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        if not callable(fn) or isinstance(fn, type):
            raise ToolDefinitionError(f"a tool must be a function, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} must be letters, digits, '_', '.', '-'; pass name=..."
            )
        doc_text, doc_params = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else doc_text
        self.is_async = inspect.iscoroutinefunction(fn)
        self.parameters = self._parameters(doc_params)

    def _parameters(self, doc_params: dict[str, str]) -> dict[str, Any]:
        try:
            hints = typing.get_type_hints(self.fn)
        except Exception as err:
            raise ToolDefinitionError(
                f"tool {self.name!r}: its type hints cannot be resolved ({err}); "
                "import every type the signature names"
            ) from err
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in inspect.signature(self.fn).parameters.values():
            where = f"tool {self.name!r}: parameter {param.name!r}"
            if param.kind is param.VAR_POSITIONAL or param.kind is param.VAR_KEYWORD:
                star = "*" if param.kind is param.VAR_POSITIONAL else "**"
                raise ToolDefinitionError(
                    f"{where} is {star}{param.name}; a tool takes named parameters only "
                    "(the model sends a JSON object)"
                )
            if param.kind is param.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"{where} is positional-only; remove the '/' so it can be passed by name"
                )
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"{where} has no type hint; annotate it (e.g. {param.name}: str) so the "
                    "model knows what to send"
                )
            schema = _schema_for(hints[param.name], where)
            if doc_params.get(param.name):
                schema["description"] = doc_params[param.name]
            properties[param.name] = schema
            if param.default is param.empty:
                required.append(param.name)
        return {"type": "object", "properties": properties, "required": required}

    @property
    def schema(self) -> dict[str, Any]:
        """The tool in the chat-template ``tools=`` format (OpenAI function style)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    async def run(
        self,
        arguments: dict[str, Any],
        *,
        timeout_s: float | None,
        threads: ToolThreads | None = None,
    ) -> Any:
        """Call the tool with ``arguments``, within ``timeout_s`` seconds.

        The call runs in a daemon thread of ``threads`` (a process-wide
        :class:`ToolThreads` by default), an async tool on an event loop of its own
        in that thread, so neither a blocking sync tool nor an async tool that
        blocks its loop can hold the caller past ``timeout_s``. At the timeout an
        async tool is cancelled and a sync one abandoned (its result is dropped).

        Raises:
            TimeoutError: the tool ran over ``timeout_s``.
            EnvError: every thread of ``threads`` is busy; the tool was not run.
            Exception: whatever the tool raised.
        """
        pool = threads if threads is not None else default_threads()
        return await pool.call(self, arguments, timeout_s=timeout_s)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a function: ``@tool`` or ``@tool(name=..., description=...)``.

    Raises:
        ToolDefinitionError: the signature cannot be a tool (the message names
            the parameter).

    Example::

        @tool
        async def lookup(city: str, unit: Literal["C", "F"] = "C") -> str:
            \"\"\"The weather in a city.

            Args:
                city: the city name.
                unit: the temperature unit.
            \"\"\"
            return f"20 {unit} in {city}"
    """
    if fn is None:
        return lambda f: Tool(f, name=name, description=description)
    return Tool(fn, name=name, description=description)


def as_tool(value: Any) -> Tool:
    """A :class:`Tool` as is, or a function made into one (``ToolEnv.tools`` takes both).

    Example::

        # not run: `calculate` comes from your own code
        as_tool(calculate).name  # 'calculate'
    """
    return value if isinstance(value, Tool) else Tool(value)
