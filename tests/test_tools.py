"""@tool: JSON schemas from signatures and docstrings; bad signatures fail when made."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import pytest

from mint_envkit import Tool, ToolDefinitionError, tool
from mint_envkit.tools.arguments import validate_arguments


@tool
def search(
    query: str,
    limit: int = 5,
    mode: Literal["fast", "exact"] = "fast",
    tags: list[str] | None = None,
    weights: dict[str, float] | None = None,
) -> str:
    """Search the notes.

    Args:
        query (str): the words to look for,
            on one or more lines.
        limit: the most results.

    Returns:
        the matches.
    """
    return f"{query}:{limit}:{mode}"


def test_schema_from_signature_and_google_docstring():
    assert isinstance(search, Tool)
    function = search.schema["function"]
    assert function["name"] == "search"
    assert function["description"] == "Search the notes."
    params = function["parameters"]
    assert params["required"] == ["query"]
    assert params["properties"]["query"] == {
        "type": "string",
        "description": "the words to look for, on one or more lines.",
    }
    assert params["properties"]["limit"] == {"type": "integer", "description": "the most results."}
    assert params["properties"]["mode"] == {"enum": ["fast", "exact"], "type": "string"}
    assert params["properties"]["tags"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    }
    assert params["properties"]["weights"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert search("x") == "x:5:fast"  # still callable as the function


def test_numpy_docstring_and_optional_primitive():
    @tool(name="scale", description="Scale a value.")
    def f(x: float, factor: int | None = None) -> float:
        """Ignored summary.

        Parameters
        ----------
        x : float
            the value
        """
        return x

    assert f.name == "scale" and f.description == "Scale a value."
    props = f.parameters["properties"]
    assert props["x"] == {"type": "number", "description": "the value"}
    assert props["factor"] == {"type": ["integer", "null"]}


def no_hint(a, b: int) -> int:
    return b


def star_args(a: int, *rest: int) -> int:
    return a


def star_kwargs(a: int, **options: str) -> int:
    return a


def bad_type(a: int, when: complex) -> int:
    return a


@pytest.mark.parametrize(
    ("fn", "names"),
    [
        (no_hint, ["'a'", "no type hint"]),
        (star_args, ["'rest'", "*rest"]),
        (star_kwargs, ["'options'", "**options"]),
        (bad_type, ["'when'", "complex"]),
    ],
)
def test_bad_signatures_name_the_parameter(fn, names):
    with pytest.raises(ToolDefinitionError) as info:
        tool(fn)
    for name in names:
        assert name in str(info.value)


def test_validate_arguments():
    assert validate_arguments(search, {"query": "a", "limit": 2, "tags": ["x"]}) is None
    assert "missing required argument(s) 'query'" in validate_arguments(search, {})
    assert "unknown argument(s) 'q'" in validate_arguments(search, {"query": "a", "q": 1})
    assert "must be of type integer" in validate_arguments(search, {"query": "a", "limit": True})
    assert "must be one of" in validate_arguments(search, {"query": "a", "mode": "slow"})
    assert "[1]" in validate_arguments(search, {"query": "a", "tags": ["x", 2]})
    assert "JSON object" in validate_arguments(search, ["a"])


async def test_run_sync_in_a_thread_and_async_with_timeouts():
    @tool
    def slow(seconds: float) -> str:
        """Sleep in a thread."""
        time.sleep(seconds)
        return "done"

    @tool
    async def slow_async(seconds: float) -> str:
        """Sleep on the loop."""
        await asyncio.sleep(seconds)
        return "done"

    assert await slow.run({"seconds": 0.0}, timeout_s=5) == "done"
    assert await slow_async.run({"seconds": 0.0}, timeout_s=5) == "done"
    for t in (slow, slow_async):
        with pytest.raises(TimeoutError):
            await t.run({"seconds": 0.5}, timeout_s=0.05)
