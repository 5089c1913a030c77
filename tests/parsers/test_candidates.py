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
        # numbered options on lines (issue 44): "1." / "2)" / "(3)", labels 1, 2, 3
        (
            "Which of these is an animal?\n1. hammer\n2. spoon\n3. horse\n4. kettle\n"
            "Reply with the word only.",
            "option_text",
            ["hammer", "spoon", "horse", "kettle"],
        ),
        ("Pick one:\n1) red\n2) blue\nReply with the number.", "option", ["1", "2"]),
        ("Choose (1) cat (2) dog (3) owl.", "option_text", ["cat", "dog", "owl"]),
        ("Steps: 1. read 3. write", "option", []),  # not in order from 1
        # lettered lines win over a numbered list in the same prompt
        ("1. Read.\n2. Answer.\nA) red\nB) blue", "option_text", ["red", "blue"]),
        # bullet lists
        (
            "Which is a fruit?\n- carrot\n- apple\n- bread\nReply with it.",
            "listed",
            ["carrot", "apple", "bread"],
        ),
        ("Options:\n* north,\n* south.\n• east", "listed", ["north", "south", "east"]),
        ("- only one bullet", "listed", []),
        # "X, Y or Z" phrases
        ("Is the sky red, green or blue?", "alternative", ["red", "green", "blue"]),
        (
            "Name one: red, light green, or dark blue.",
            "alternative",
            ["red", "light green", "dark blue"],
        ),
        ("Is 7 a prime? Answer yes or no.", "alternative", ["yes", "no"]),
        ("Which is larger: 0.5 or 0.45?", "alternative", ["0.5", "0.45"]),
        ("Is it a cat or a dog?", "alternative", ["cat", "dog"]),
        ("What is 2 + 3?", "alternative", []),
        ("Is 7 a prime? Answer yes or no.", "number", ["7"]),
    ],
)
def test_candidates_by_kind_in_prompt_order(text, kind, expected):
    assert _texts(text, kind) == expected


def test_the_last_word_of_a_yes_no_prompt_is_a_candidate():
    assert _texts("Is 7 a prime? Answer yes or no.", "word")[-2:] == ["or", "no"]


def test_permuting_moves_the_content_and_keeps_everything_else():
    numbered = "Which?\n1. hammer\n2. horse\n3. spoon"
    assert permute_candidates(numbered, "option_text", [2, 0, 1]) == (
        "Which?\n1. spoon\n2. hammer\n3. horse"
    )
    bullets = "Which?\n- hammer\n- horse."
    assert permute_candidates(bullets, "listed", [1, 0]) == "Which?\n- horse\n- hammer."
    phrase = "Is the sky red, green or blue?"
    assert permute_candidates(phrase, "alternative", [2, 0, 1]) == "Is the sky blue, red or green?"
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


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        # numbered options: the answer is a text (stays) or a label (moves with its text)
        ("Which?\n1. hammer\n2. horse", "horse", ("Which?\n1. horse\n2. hammer", "horse")),
        ("Which?\n1. hammer\n2. horse", "2", ("Which?\n1. horse\n2. hammer", "1")),
        ("Which?\n- hammer\n- horse", "horse", ("Which?\n- horse\n- hammer", "horse")),
        ("Is it red, green or blue?", "blue", ("Is it green, blue or red?", "blue")),
        # a two-member "X or Y" is the reply's format ("yes or no"): not permuted
        ("Is 7 prime? Answer yes or no.", "yes", None),
    ],
)
def test_the_default_counterfactual_permutes_every_list_kind(question, answer, expected):
    from mint_envkit.envs.perturb import permuted_problem

    changed = permuted_problem({"question": question, "answer": answer})
    if expected is None:
        assert changed is None
    else:
        assert (changed["question"], changed["answer"]) == expected
