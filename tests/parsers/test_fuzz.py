"""Property tests: no built-in parser raises on any str, and results are self-consistent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mint_envkit.parsers import (
    Parser,
    as_number,
    boxed,
    choice,
    exact,
    first_number,
    last_number,
    same_number,
    strip_thinking,
    xml_tag,
)
from mint_envkit.parsers.numbers import all_numbers
from mint_envkit.parsers.result import STATUSES

FUZZ = settings(max_examples=200, deadline=None)

PARSERS: list[Parser] = [
    first_number,
    last_number,
    boxed,
    xml_tag("answer"),
    choice("ABCD"),
    choice("1234"),
    exact(),
    exact(str.lower),
    strip_thinking,
    last_number.after_thinking(),
    boxed.after_thinking(),
    boxed.map(choice("ABCD")),
]

# every unicode code point, lone surrogates included
any_text = st.text(st.characters(exclude_categories=()))

FRAGMENTS = [
    "\\boxed{", "\\fbox{", "{", "}", "<think>", "</think>", "<answer>", "</answer>",
    "0", "1", "5", "9", "12", "1,000", ",", ".", "-", "−", "$", "%", "/", "e", "E", "+",
    "**", "(", ")", " ", "\n", "A", "B", "a", "or", "answer is ", "Answer: ", "{,}", "４",
]  # fmt: skip
fragment_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
texts = st.one_of(any_text, fragment_text)


@FUZZ
@given(texts)
def test_no_parser_raises_and_results_are_consistent(text: str) -> None:
    for parser in PARSERS:
        result = parser(text)
        assert result.status in STATUSES
        assert bool(result) == (result.status == "ok")
        assert (result.value is None) == (result.status != "ok")
        if result:
            assert isinstance(result.value, str) and result.value.strip()


@FUZZ
@given(texts, texts)
def test_same_number_never_raises_and_is_symmetric(a: str, b: str) -> None:
    assert same_number(a, b) == same_number(b, a)


@FUZZ
@given(texts)
def test_numbers_are_normalized_idempotently(text: str) -> None:
    for parser in (first_number, last_number):
        result = parser(text)
        if result:
            value = result.value
            assert first_number(value).value == value
            assert last_number(value).value == value
            assert as_number(value) == value
            assert same_number(value, value)


@FUZZ
@given(st.decimals(allow_nan=False, allow_infinity=False, places=4), st.integers(0, 3))
def test_same_number_ignores_trailing_zeros_and_separators(number, zeros: int) -> None:
    text = f"{number:,f}" + ("0" * zeros if "." in f"{number:f}" else "")
    assert same_number(text, str(number))
    assert same_number(last_number(f"so the answer is {text}.").value, number)


@FUZZ
@given(texts)
def test_fast_number_search_matches_a_plain_scan(text: str) -> None:
    first, last = first_number(text), last_number(text)
    if not text.strip():
        assert first.status == last.status == "empty"
        assert all_numbers(text) == []
    elif not (every := all_numbers(text)):
        assert first.status == last.status == "no_match"
    else:
        assert first.value == all_numbers(text, lists="first")[0]
        assert last.value == every[-1]


@FUZZ
@given(texts)
def test_other_parsers_are_idempotent(text: str) -> None:
    for parser in (exact(), strip_thinking, choice("ABCD")):
        result = parser(text)
        if result:
            assert parser(result.value).value == result.value
    stripped = strip_thinking(text)
    if stripped:
        assert "<think>" not in stripped.value and "</think>" not in stripped.value


def _reference_boxed(text: str) -> tuple[str | None, str]:
    """A slow, obviously correct boxed: try every box start, match braces by counting."""
    if not text.strip():
        return None, "empty"
    best: tuple[int, int] | None = None  # (close index, content start)
    seen_box = False
    for start in range(len(text)):
        for prefix in ("\\boxed{", "\\fbox{"):
            if text.startswith(prefix, start):
                seen_box = True
                depth, i = 1, start + len(prefix)
                while i < len(text) and depth:
                    depth += {"{": 1, "}": -1}.get(text[i], 0)
                    i += 1
                if depth == 0 and (best is None or i - 1 > best[0]):
                    best = (i - 1, start + len(prefix))
    if not seen_box:
        return None, "no_match"
    if best is None:
        return None, "truncated"
    content = text[best[1] : best[0]].strip()
    return (content, "ok") if content else (None, "empty")


box_text = st.lists(
    st.sampled_from(["\\boxed{", "\\fbox{", "{", "}", "x", "1", " ", "\\"]), max_size=30
).map("".join)


@settings(max_examples=400, deadline=None)
@given(box_text)
def test_boxed_matches_a_slow_reference(text: str) -> None:
    result = boxed(text)
    assert (result.value, result.status) == _reference_boxed(text)


def _reference_xml(text: str, name: str = "answer") -> tuple[str | None, str]:
    """A slow xml_tag: the last opening tag that has a closing tag after it."""
    if not text.strip():
        return None, "empty"
    opening, closing = f"<{name}>", f"</{name}>"
    starts = [i for i in range(len(text)) if text.startswith(opening, i)]
    if not starts:
        return None, "no_match"
    for start in reversed(starts):
        end = text.find(closing, start + len(opening))
        if end >= 0:
            content = text[start + len(opening) : end].strip()
            return (content, "ok") if content else (None, "empty")
    return None, "truncated"


xml_text = st.lists(
    st.sampled_from(["<answer>", "</answer>", "x", " ", "<", ">"]), max_size=20
).map("".join)


@FUZZ
@given(xml_text)
def test_xml_tag_matches_a_slow_reference(text: str) -> None:
    result = xml_tag("answer")(text)
    assert (result.value, result.status) == _reference_xml(text)
