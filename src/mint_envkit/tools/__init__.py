"""Tools: plain Python functions a model can call, with a JSON schema read from their signature.

A tool is a function (sync or async) with a type hint on every parameter and a
docstring. :func:`tool` reads its name, its description (the docstring's first
part) and its parameters (types from the hints, descriptions from the
docstring's ``Args:`` or numpy ``Parameters`` section, ``required`` from the
parameters without a default) into a :class:`Tool`. A signature no schema can
say (a parameter without a type hint, ``*args``, ``**kwargs``, a positional-only
parameter, an unsupported type) raises :class:`~mint_envkit.errors.ToolDefinitionError`
naming the parameter, when the tool is made.

Supported types: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``,
``list[T]``, ``tuple[T, ...]``, ``dict[str, T]``, ``Literal[...]`` of strings,
numbers or booleans, ``Optional[T]`` / ``T | None`` and unions of these.

Example::

    from mint_envkit import tool

    @tool
    def calculate(expression: str) -> str:
        \"\"\"Evaluate an arithmetic expression.

        Args:
            expression: the expression, e.g. "2 * (3 + 4)".
        \"\"\"
        ...

    calculate.schema["function"]["parameters"]
    # {'type': 'object', 'properties': {'expression': {'type': 'string',
    #   'description': 'the expression, e.g. "2 * (3 + 4)".'}}, 'required': ['expression']}

Tools may also come from MCP servers: :class:`McpServer` in ``ToolEnv.mcp_servers``
(:mod:`~mint_envkit.tools.mcp`; the ``mcp`` SDK is imported only when one starts).

How a call runs (threads, limits, timeouts, result caps) is told in
``docs/tools.md``: :mod:`~mint_envkit.tools.threads` runs calls,
:mod:`~mint_envkit.tools.arguments` reads and checks their arguments,
:mod:`~mint_envkit.tools.results` makes a result the text of its message (cut to the
cap), :mod:`~mint_envkit.tools.keeper` ends every process a server the kit started
left behind.
"""

from __future__ import annotations

from mint_envkit.tools.mcp import McpServer
from mint_envkit.tools.schema import Tool, tool
from mint_envkit.tools.threads import ToolThreads

__all__ = [
    "McpServer",
    "Tool",
    "ToolThreads",
    "tool",
]
