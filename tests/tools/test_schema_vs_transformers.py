"""Why tools/schema.py is not ``transformers.utils.get_json_schema`` (issue 43 asked to use
it where it gives the same result): on the functions both read, the parameters agree
except for optional values, where transformers writes the non-standard ``nullable``; and
transformers refuses what the kit's tools take (a docstring without an ``Args:`` section,
as in the kit's own ``@tool`` example, NumPy-style docstrings, ``tuple[T, ...]``)."""

from __future__ import annotations

import pytest
from transformers.utils import get_json_schema

from mint_envkit.tools.schema import tool


def add(a: int, b: float = 0.5) -> float:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


def pick(items: list[str], weights: dict[str, float], mode: str = "first") -> str:
    """Pick one item.

    Args:
        items: the items
        weights: a weight per item
        mode: how to pick
    """
    return items[0]


def maybe(text: str | None = None) -> str:
    """Echo.

    Args:
        text: what to echo
    """
    return text or ""


def bare(a: int) -> int:
    """Double a number."""
    return 2 * a


def numpy_style(a: int) -> int:
    """Double a number.

    Parameters
    ----------
    a : int
        the number
    """
    return 2 * a


def many(points: tuple[int, ...]) -> int:
    """Sum points.

    Args:
        points: the points
    """
    return sum(points)


@pytest.mark.parametrize("fn", [add, pick], ids=lambda fn: fn.__name__)
def test_where_both_read_a_function_the_parameters_agree(fn):
    theirs = get_json_schema(fn)["function"]
    ours = tool(fn).schema["function"]
    assert ours == {k: v for k, v in theirs.items() if k != "return"}


def test_an_optional_value_is_standard_json_schema_here_and_nullable_there():
    theirs = get_json_schema(maybe)["function"]["parameters"]["properties"]["text"]
    ours = tool(maybe).schema["function"]["parameters"]["properties"]["text"]
    assert theirs["nullable"] is True and "nullable" not in ours
    assert ours["type"] == ["string", "null"]


@pytest.mark.parametrize("fn", [bare, numpy_style, many], ids=lambda fn: fn.__name__)
def test_what_transformers_refuses_the_kit_reads(fn):
    with pytest.raises(Exception):  # noqa: B017 (transformers' own parsing errors)
        get_json_schema(fn)
    properties = tool(fn).schema["function"]["parameters"]["properties"]
    assert list(properties) == list(fn.__annotations__)[:-1]
