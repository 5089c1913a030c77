"""~1 MB adversarial inputs: every parser must finish and give a sane result.

There are no timing asserts here (speed is measured by benchmarks/parsers_speed.py);
a parser with quadratic behaviour or catastrophic regex backtracking would make this
file hang instead of pass.
"""

from __future__ import annotations

import pytest

from mint_envkit.parsers import (
    boxed,
    choice,
    exact,
    first_number,
    last_number,
    same_number,
    strip_thinking,
    xml_tag,
)
from mint_envkit.parsers.result import STATUSES

MB = 1_000_000

INPUTS = {
    "one-comma-500k": "1," * 500_000,
    "boxed-open-200k": "\\boxed{" * 200_000,
    "boxed-open-200k-one-close": "\\boxed{" * 200_000 + "}",
    "boxed-closed-125k": "\\boxed{1}" * 110_000,
    "boxed-nested-100k": "\\boxed{" * 100_000 + "}" * 100_000,
    "boxed-deep-braces": "\\boxed{" + "{" * 500_000 + "}" * 500_001,
    "boxed-alternating-braces": "\\boxed{{" + "}{" * 500_000,
    "boxed-brace-pairs": "\\boxed{{}" * 125_000,
    "answer-open-100k": "<answer>" * 100_000,
    "answer-close-100k": "</answer>" * 100_000,
    "minus-1m": "-" * MB,
    "thousands-runs": "1,000," * 166_666 + "0000",
    "slash-runs": "12/" * 333_333,
    "digits-1m": "9" * MB,
    "exponent-runs": "1.2e" * 250_000,
    "dots-digits": "1." * 500_000,
    "dollar-minus": "-$" * 500_000 + "5",
    "think-open-140k": "<think>" * 140_000,
    "think-close-110k": "</think>" * 110_000,
    "answer-marker-or": "answer is A or " * 70_000,
    "answer-then-stars": "answer" + "*" * MB,
    "option-parens": "(A) " * 250_000,
    "spaces-1m": " " * MB + "x",
    "fullwidth-digits-1m": "４" * MB,
}

PARSERS = [
    first_number,
    last_number,
    boxed,
    xml_tag("answer"),
    choice("ABCD"),
    exact(),
    strip_thinking,
    last_number.after_thinking(),
]


@pytest.mark.parametrize("name", list(INPUTS))
def test_every_parser_finishes_on_adversarial_input(name: str) -> None:
    text = INPUTS[name]
    for parser in PARSERS:
        result = parser(text)
        assert result.status in STATUSES
        assert bool(result) == (result.value is not None)


def test_adversarial_results_are_right() -> None:
    assert first_number(INPUTS["one-comma-500k"]).value == "1"
    assert last_number(INPUTS["one-comma-500k"]).value == "1"
    assert boxed(INPUTS["boxed-open-200k"]).status == "truncated"
    assert boxed(INPUTS["boxed-open-200k-one-close"]).status == "empty"
    assert boxed(INPUTS["boxed-closed-125k"]).value == "1"
    assert boxed(INPUTS["boxed-alternating-braces"]).status == "truncated"
    assert boxed(INPUTS["boxed-deep-braces"]).value == "{" * 500_000 + "}" * 500_000
    assert xml_tag("answer")(INPUTS["answer-open-100k"]).status == "truncated"
    assert xml_tag("answer")(INPUTS["answer-close-100k"]).status == "no_match"
    assert last_number(INPUTS["minus-1m"]).status == "no_match"
    assert last_number(INPUTS["digits-1m"]).value == "9" * MB
    assert last_number(INPUTS["dollar-minus"]).value == "-5"
    assert strip_thinking(INPUTS["think-open-140k"]).status == "unclosed_think"
    assert strip_thinking(INPUTS["think-close-110k"]).status == "empty"
    assert choice("ABCD")(INPUTS["answer-marker-or"]).value == "A"  # always the same letter


def test_huge_numbers_compare_exactly() -> None:
    big = "9" * MB
    assert same_number(big, big + ".000")
    assert not same_number(big, "9" * (MB - 1) + "8")
    assert not same_number(big + "/7", big + "/8")  # too long for exact fractions: text compare
