"""The candidates a prompt offers, and the prompt with them in another order."""

from __future__ import annotations

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.parsers.candidates import permute_candidates, prompt_candidates


def _texts(text: str, kind: str) -> list[str]:
    return [c.text for c in prompt_candidates(text)[kind]]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("Which comes first: 'pear' or 'apple'?", "quoted", ["pear", "apple"]),
        ('Say "hello" or “bye”.', "quoted", ["hello", "bye"]),
        ("What's the capital of 'France'? Don't guess.", "quoted", ["France"]),
        ("Which is a prime? A) 4 B) 6 C) 7 D) 9", "option", ["A", "B", "C", "D"]),
        ("Which is a prime? A) 4 B) 6 C) 7 D) 9", "option_text", ["4", "6", "7", "9"]),
        ("Pick. (A) 3 (B) 5", "option_text", ["3", "5"]),
        (
            "Largest?\nA) Mars\nB) Jupiter\nC) Venus\nAnswer with the letter.",
            "option_text",
            ["Mars", "Jupiter", "Venus"],
        ),
        ("Only A) one option here", "option", []),
        ("What is 31 + 23?", "number", ["31", "23"]),
        ("Is 7 a prime? Answer yes or no.", "number", ["7"]),
    ],
)
def test_candidates_by_kind_in_prompt_order(text, kind, expected):
    assert _texts(text, kind) == expected


def test_the_last_word_of_a_yes_no_prompt_is_a_candidate():
    assert _texts("Is 7 a prime? Answer yes or no.", "word")[-2:] == ["or", "no"]


def test_permuting_moves_the_content_and_keeps_everything_else():
    assert permute_candidates("First: 'pear' or 'apple'?", "quoted", [1, 0]) == (
        "First: 'apple' or 'pear'?"
    )
    text = "Which is a prime? A) 4 B) 6 C) 7 D) 9"
    assert permute_candidates(text, "option_text", [1, 2, 3, 0]) == (
        "Which is a prime? A) 6 B) 7 C) 9 D) 4"
    )


@pytest.mark.parametrize(
    ("kind", "order", "match"),
    [("number", [1, 0], "reorders"), ("quoted", [0, 0], "permutation"), ("quoted", [0], "0..1")],
)
def test_bad_permutations_are_refused(kind, order, match):
    with pytest.raises(ConfigError, match=match):
        permute_candidates("First: 'pear' or 'apple'?", kind, order)
