"""result_text: a tool's result as tool-message text, cut to the cap, converted only as far as it."""

from __future__ import annotations

import json

import pytest

from mint_envkit.tools.results import CutResult, capped, result_text


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1.5, None, True], "é": "ü"},
        {1: "int key", None: "null key", 2.5: "float key", False: "bool key"},
        [[], {}, (1, 2), float("nan"), -0.0, 10**30],
        "plain text",
        7,
    ],
)
def test_a_result_within_the_cap_is_what_json_dumps_writes(value):
    expected = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    assert result_text(value, 10_000) == expected
    assert result_text(value, None) == expected


def test_a_string_says_how_much_was_cut():
    assert capped("abcdef", 2) == "ab\n[4 of 6 chars cut: a tool result is capped at 2 chars]"
    assert result_text("x" * 10, 4) == capped("x" * 10, 4)
    assert result_text("x" * 10, 10) == "x" * 10


class Counted(list):
    """A list that counts the elements read from it."""

    read = 0

    def __iter__(self):
        for item in super().__iter__():
            Counted.read += 1
            yield item


def test_a_big_value_is_converted_only_as_far_as_the_cap():
    Counted.read = 0
    value = {"rows": Counted(range(1_000_000)), "text": "y" * 10_000_000}
    text = result_text(value, 100)
    assert text == json.dumps({"rows": list(range(1000))})[:100] + (
        "\n[the rest cut: a tool result is capped at 100 chars]"
    )
    assert Counted.read < 100  # not a million
    long_string = result_text(["y" * 10_000_000], 50)
    assert long_string.startswith('["' + "y" * 48 + "\n[the rest cut")


def test_a_value_that_is_not_json_is_shown_with_str_and_capped():
    assert result_text({1, 2}, 100) == "{1, 2}"
    assert result_text({"when": {1, 2}}, 100) == "{'when': {1, 2}}"
    circular: list = []
    circular.append(circular)
    assert result_text(circular, 100) == "[[...]]"

    class Unshowable:
        def __str__(self):
            raise RuntimeError("no")

    assert result_text(Unshowable(), 100) == "<a Unshowable that cannot be shown: RuntimeError>"
    assert result_text(list(range(100)), None) == json.dumps(list(range(100)))


def test_a_result_cut_before_it_arrived_says_how_big_it_was():
    cut = CutResult("abcdef", total_bytes=52_428_857, why="the 4194304-byte bound on one message")
    assert result_text(cut, 3) == (
        "abc\n[the rest cut: the answer was 52428857 bytes, over the 4194304-byte bound on "
        "one message; a tool result is capped at 3 chars]"
    )
    assert result_text(cut, None).startswith("abcdef\n[the rest cut: the answer was 52428857")


class CountedRepr:
    """An element whose repr is counted: what writing a set of them costs."""

    made = 0

    def __repr__(self) -> str:
        CountedRepr.made += 1
        return "c"


def test_a_big_set_is_written_only_as_far_as_the_cap():
    """issue 46: a @tool returning a 3-million-element set had its whole str() built on
    the event loop (1.03 s) before the cut; now only what the cap keeps is written."""
    big = {CountedRepr() for _ in range(100_000)}
    CountedRepr.made = 0
    text = result_text(big, 1000)
    assert text.startswith("{c, c, ") and text.endswith(
        "[the rest cut: a tool result is capped at 1000 chars]"
    )
    assert CountedRepr.made < 1000  # not 100,000
    assert result_text([{1, 2}, frozenset({3}), set(), (b"x",)], 100) == str(
        [{1, 2}, frozenset({3}), set(), (b"x",)]
    )
