"""Hand-written table of tricky completions: expected value AND status for each row."""

from __future__ import annotations

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import (
    Parser,
    ParseResult,
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

answer_tag = xml_tag("answer")
abcd = choice("ABCD")

# (id, parser, completion, expected value, expected status)
ROWS = [
    # --- numbers: formats ---
    ("first-plain", first_number, "42", "42", "ok"),
    ("last-bold", last_number, "The answer is **73**", "73", "ok"),
    ("first-bold", first_number, "**73** apples", "73", "ok"),
    ("last-thousands", last_number, "They paid 1,000", "1000", "ok"),
    ("last-thousands-many", last_number, "population 12,345,678", "12345678", "ok"),
    ("first-list-not-thousands", first_number, "1,2,3", "1", "ok"),
    ("last-list-not-thousands", last_number, "1,2,3", "3", "ok"),
    ("last-list-bad-group", last_number, "1,234,5", "5", "ok"),
    ("first-list-long-group", first_number, "1,2345", "1", "ok"),
    ("last-dollars", last_number, "It costs $1,200.50", "1200.5", "ok"),
    ("last-percent", last_number, "growth of 12%", "12", "ok"),
    ("last-trailing-period", last_number, "So the total is 5.", "5", "ok"),
    ("last-negative", last_number, "x = -3", "-3", "ok"),
    ("last-unicode-minus", last_number, "x = −3", "-3", "ok"),
    ("last-negative-dollars", last_number, "a loss of -$40", "-40", "ok"),
    ("last-minus-space-is-not-sign", last_number, "- 3", "3", "ok"),
    ("last-range-not-negative", last_number, "pages 10-12", "12", "ok"),
    ("first-range", first_number, "pages 10-12", "10", "ok"),
    ("last-normalize-5.00", last_number, "5.00", "5", "ok"),
    ("last-normalize-5.0", last_number, "5.0", "5", "ok"),
    ("last-normalize-0.50", last_number, "0.50", "0.5", "ok"),
    ("last-normalize-minus-zero", last_number, "-0", "0", "ok"),
    ("last-normalize-minus-zero-decimal", last_number, "-0.000", "0", "ok"),
    ("last-leading-zeros", last_number, "007", "7", "ok"),
    ("last-leading-dot", last_number, "about .5", "0.5", "ok"),
    ("last-fraction", last_number, "the ratio is 3/4", "3/4", "ok"),
    ("last-negative-fraction", last_number, "slope -03/4", "-3/4", "ok"),
    ("last-date-not-fraction", last_number, "on 12/25/2023", "2023", "ok"),
    ("last-zero-denominator-not-fraction", last_number, "5/0", "0", "ok"),
    ("last-scientific", last_number, "about 1e3", "1000", "ok"),
    ("last-scientific-negative-exponent", last_number, "2.5E-4", "0.00025", "ok"),
    ("last-latex-thousands", last_number, r"\boxed{1{,}000}", "1000", "ok"),
    ("last-fullwidth-digits", last_number, "答案是４２", "42", "ok"),
    ("last-version-string", last_number, "v1.2.3", "3", "ok"),
    # --- numbers: first vs last when the reply restates the question ---
    ("first-restated", first_number, "2 + 3 = 5", "2", "ok"),
    ("last-restated", last_number, "2 + 3 = 5", "5", "ok"),
    ("last-cot", last_number, "Tom has 3 apples and buys 4, so 3 + 4 = 7.", "7", "ok"),
    # --- numbers: failures ---
    ("first-empty", first_number, "", None, "empty"),
    ("last-whitespace", last_number, "  \n\t ", None, "empty"),
    ("last-no-number", last_number, "I don't know", None, "no_match"),
    ("last-only-signs", last_number, "- - $ %", None, "no_match"),
    # --- boxed ---
    ("boxed-plain", boxed, r"so \boxed{5}", "5", "ok"),
    ("boxed-nested-braces", boxed, r"\boxed{\frac{1}{2}}", r"\frac{1}{2}", "ok"),
    (
        "boxed-deep-braces",
        boxed,
        r"\boxed{\sqrt{\frac{a}{b^{2}}}}",
        r"\sqrt{\frac{a}{b^{2}}}",
        "ok",
    ),
    ("boxed-two-same-not-concatenated", boxed, r"\boxed{840} so \boxed{840}", "840", "ok"),
    ("boxed-two-takes-last", boxed, r"\boxed{3}, no wait, \boxed{4}", "4", "ok"),
    ("boxed-whitespace-stripped", boxed, "\\boxed{  12 \n}", "12", "ok"),
    ("boxed-fbox", boxed, r"\fbox{7}", "7", "ok"),
    ("boxed-nested-box-outer", boxed, r"\boxed{1 + \boxed{2}}", r"1 + \boxed{2}", "ok"),
    ("boxed-unclosed", boxed, r"the answer is \boxed{12", None, "truncated"),
    ("boxed-unclosed-inner-brace", boxed, r"\boxed{\frac{1}{2}", None, "truncated"),
    ("boxed-complete-then-unclosed", boxed, r"\boxed{5} and \boxed{6", "5", "ok"),
    ("boxed-stray-closers-before", boxed, r"}} \boxed{5} }}", "5", "ok"),
    ("boxed-empty-box", boxed, r"\boxed{}", None, "empty"),
    ("boxed-blank-box", boxed, r"\boxed{  }", None, "empty"),
    ("boxed-none", boxed, "the answer is 5", None, "no_match"),
    ("boxed-no-brace", boxed, r"\boxed 5", None, "no_match"),
    ("boxed-empty-text", boxed, "", None, "empty"),
    # --- xml_tag ---
    ("xml-plain", answer_tag, "<answer>7</answer>", "7", "ok"),
    ("xml-stripped", answer_tag, "<answer>\n  Paris  \n</answer>", "Paris", "ok"),
    ("xml-repeated-last", answer_tag, "<answer>3</answer> <answer>4</answer>", "4", "ok"),
    ("xml-nested-innermost", answer_tag, "<answer>x<answer>5</answer></answer>", "5", "ok"),
    ("xml-unclosed", answer_tag, "<answer>12", None, "truncated"),
    ("xml-closed-then-unclosed", answer_tag, "<answer>a</answer> <answer>b", "a", "ok"),
    ("xml-close-before-open", answer_tag, "</answer> <answer>b", None, "truncated"),
    ("xml-stray-close", answer_tag, "5</answer>", None, "no_match"),
    ("xml-none", answer_tag, "just 5", None, "no_match"),
    ("xml-empty-content", answer_tag, "<answer> </answer>", None, "empty"),
    ("xml-case-sensitive", answer_tag, "<Answer>5</Answer>", None, "no_match"),
    ("xml-attributes-not-read", answer_tag, '<answer id="1">5</answer>', None, "no_match"),
    # --- choice ---
    ("choice-bare", abcd, "B", "B", "ok"),
    ("choice-parens", abcd, "(B)", "B", "ok"),
    ("choice-close-paren", abcd, "B)", "B", "ok"),
    ("choice-period", abcd, "B.", "B", "ok"),
    ("choice-bold", abcd, "**B**", "B", "ok"),
    ("choice-lowercase-whole", abcd, "b", "B", "ok"),
    ("choice-answer-colon", abcd, "Answer: B", "B", "ok"),
    ("choice-answer-is", abcd, "The answer is B", "B", "ok"),
    ("choice-answer-is-parens", abcd, "I think the correct answer is (C) because", "C", "ok"),
    ("choice-bold-marker", abcd, "**Final answer:** D", "D", "ok"),
    ("choice-correct-option", abcd, "So the correct option is A.", "A", "ok"),
    ("choice-last-marker-wins", abcd, "The answer is A. Wait, the answer is B.", "B", "ok"),
    ("choice-last-line", abcd, "Paris is the capital.\n\n**C**", "C", "ok"),
    ("choice-starts-with-option", abcd, "B) Paris, because it is the capital", "B", "ok"),
    ("choice-starts-with-parens", abcd, "(D) 42", "D", "ok"),
    ("choice-or-ambiguous", abcd, "A or B", None, "ambiguous"),
    ("choice-slash-ambiguous", abcd, "A/C", None, "ambiguous"),
    ("choice-comma-list-ambiguous", abcd, "A, B", None, "ambiguous"),
    ("choice-same-twice-ok", abcd, "B or b", "B", "ok"),
    ("choice-marker-or-ambiguous", abcd, "The answer is A or B.", None, "ambiguous"),
    ("choice-marker-comma-not-ambiguous", abcd, "The answer is B, C is wrong", "B", "ok"),
    ("choice-article-not-option", abcd, "A cat sat on the mat.", None, "no_match"),
    ("choice-article-after-marker", abcd, "The answer is a cat.", None, "no_match"),
    ("choice-letter-starts-word", abcd, "The answer is Brazil", None, "no_match"),
    ("choice-not-an-option", abcd, "Answer: E", None, "no_match"),
    ("choice-no-marker", abcd, "I choose B", None, "no_match"),
    ("choice-empty", abcd, "   ", None, "empty"),
    ("choice-digits", choice("1234"), "The answer is 3", "3", "ok"),
    ("choice-digits-not-decimal", choice("1234"), "The answer is 3.5", None, "no_match"),
    # --- exact ---
    ("exact-stripped", exact(), "  Paris \n", "Paris", "ok"),
    ("exact-normalize", exact(str.lower), " PARIS ", "paris", "ok"),
    ("exact-empty", exact(), "", None, "empty"),
    ("exact-whitespace", exact(str.lower), " \n ", None, "empty"),
    # --- strip_thinking ---
    (
        "think-removed",
        strip_thinking,
        "<think>2+2=4</think>\nThe answer is 4.",
        "The answer is 4.",
        "ok",
    ),
    ("think-no-tags", strip_thinking, " 4 ", "4", "ok"),
    ("think-two-blocks", strip_thinking, "<think>a</think>b<think>c</think> d", "b d", "ok"),
    ("think-unclosed", strip_thinking, "<think>2+2=", None, "unclosed_think"),
    (
        "think-closed-then-unclosed",
        strip_thinking,
        "<think>a</think>5<think>b",
        None,
        "unclosed_think",
    ),
    ("think-stray-close", strip_thinking, "let me think... 2+2=4</think>\n4", "4", "ok"),
    ("think-stray-close-last-wins", strip_thinking, "a</think>b</think>c", "c", "ok"),
    (
        "think-nested-ends-at-last-close",
        strip_thinking,
        "<think>a<think>b</think>c</think>d",
        "d",
        "ok",
    ),
    ("think-only-thinking", strip_thinking, "<think>hmm</think>", None, "empty"),
    ("think-empty", strip_thinking, "", None, "empty"),
    # --- composition ---
    ("after-thinking-number", last_number.after_thinking(), "<think>3 or 4?</think> 4", "4", "ok"),
    (
        "after-thinking-unclosed",
        last_number.after_thinking(),
        "<think>3 or 4?",
        None,
        "unclosed_think",
    ),
    ("after-thinking-stray", boxed.after_thinking(), r"\boxed{3}?</think>\boxed{4}", "4", "ok"),
    (
        "after-thinking-only-thinking",
        boxed.after_thinking(),
        r"<think>\boxed{3}</think>",
        None,
        "empty",
    ),
    ("after-thinking-choice", abcd.after_thinking(), "<think>A or B?</think>Answer: B", "B", "ok"),
    ("map-boxed-choice", boxed.map(abcd), r"\boxed{(C)}", "C", "ok"),
    ("map-failure-passes-through", boxed.map(str.lower), r"\boxed{X", None, "truncated"),
    ("map-to-none", answer_tag.map(lambda value: None), "<answer>x</answer>", None, "no_match"),
]


@pytest.mark.parametrize(
    ("parser", "text", "value", "status"),
    [
        pytest.param(parser, text, value, status, id=row_id)
        for row_id, parser, text, value, status in ROWS
    ],
)
def test_table(parser: Parser, text: str, value: str | None, status: str) -> None:
    result = parser(text)
    assert (result.value, result.status) == (value, status)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("5.0", "5", True, id="decimal-zero"),
        pytest.param("5", "5.00", True, id="decimal-zeros"),
        pytest.param("1,000", "1000", True, id="thousands"),
        pytest.param("$1,200.50", "1200.5", True, id="dollars"),
        pytest.param("**73**", "73", True, id="bold"),
        pytest.param("-0", "0", True, id="minus-zero"),
        pytest.param("−3", "-3", True, id="unicode-minus"),
        pytest.param("1/2", "0.5", True, id="fraction-decimal"),
        pytest.param("2/4", "1/2", True, id="fraction-unreduced"),
        pytest.param(r"\frac{3}{4}", "0.75", True, id="latex-frac"),
        pytest.param(r"-\dfrac{1}{2}", "-0.5", True, id="latex-dfrac-negative"),
        pytest.param("1e3", "1000", True, id="scientific"),
        pytest.param("12%", "12", True, id="percent-stripped"),
        pytest.param("5.", "5", True, id="trailing-period"),
        pytest.param(1000, "1,000", True, id="int-argument"),
        pytest.param(0.5, "1/2", True, id="float-argument"),
        pytest.param("0.1", "0.10000001", False, id="no-float-tolerance"),
        pytest.param("1/3", "0.3333333333", False, id="fraction-not-rounded"),
        pytest.param("5", "6", False, id="different"),
        pytest.param("5 apples", "5", False, id="not-a-whole-number"),
        pytest.param("1,2,3", "123", False, id="list-not-number"),
        pytest.param("five", "5", False, id="word"),
        pytest.param("", "", False, id="empty"),
        pytest.param(None, "5", False, id="none"),
        pytest.param(True, "1", False, id="bool-is-not-a-number"),
        pytest.param("nan", "nan", False, id="nan"),
        pytest.param(float("inf"), float("inf"), False, id="inf"),
        pytest.param("1/0", "1/0", False, id="zero-denominator"),
    ],
)
def test_same_number(a: object, b: object, expected: bool) -> None:
    assert same_number(a, b) is expected
    assert same_number(b, a) is expected


def test_as_number_examples() -> None:
    assert as_number(" $1,200.50 ") == "1200.5"
    assert as_number(r"\frac{1}{2}") == "1/2"
    assert as_number("+5") == "5"
    assert as_number("5 apples") is None
    assert as_number(["5"]) is None


def test_all_numbers_examples() -> None:
    assert all_numbers("2 + 3 = 5") == ["2", "3", "5"]
    assert all_numbers("pick 1,2,3 or $1,200.50") == ["3", "1200.5"]
    assert all_numbers("pick -1,2,3", lists="first") == ["-1"]
    assert all_numbers("1/2 of 10e2") == ["1/2", "1000"]
    assert all_numbers("  ") == all_numbers("no digits") == []


def test_parser_names() -> None:
    assert first_number.name == "first_number"
    assert last_number.name == "last_number"
    assert boxed.name == "boxed"
    assert answer_tag.name == "xml_tag(answer)"
    assert abcd.name == "choice(ABCD)"
    assert exact().name == "exact"
    assert exact(str.lower).name == "exact(lower)"
    assert strip_thinking.name == "strip_thinking"
    assert last_number.after_thinking().name == "last_number.after_thinking()"
    assert boxed.map(abcd).name == "boxed.map(choice(ABCD))"
    assert boxed.map(str.strip, name="stripped").name == "stripped"


def test_parse_result_constructors() -> None:
    assert ParseResult.ok("5") == ParseResult("5", "ok")
    assert ParseResult.fail("empty") == ParseResult(None, "empty")
    assert bool(ParseResult.ok("0")) and not ParseResult.fail("no_match")
    assert STATUSES == (
        "ok",
        "no_match",
        "empty",
        "unclosed_think",
        "ambiguous",
        "truncated",
        "timeout",
    )


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: ParseResult.fail("ok"), id="fail-ok"),
        pytest.param(lambda: ParseResult("x", "no_match"), id="value-with-failure"),
        pytest.param(lambda: ParseResult(None, "ok"), id="ok-without-value"),
        pytest.param(lambda: ParseResult("x", "great"), id="unknown-status"),
    ],
)
def test_parse_result_rejects_inconsistent(make) -> None:
    with pytest.raises(ConfigError):
        make()


def test_from_function_coerces_returns() -> None:
    def words(text: str) -> str | None:
        return text.split()[0] if text.split() else None

    parser = Parser.from_function(words)
    assert parser.name == "words"
    assert parser("hello world") == ParseResult.ok("hello")
    assert parser("   ") == ParseResult.fail("no_match")
    assert Parser.from_function(lambda text: "  ", name="blank")("x") == ParseResult.fail("empty")
    assert (
        Parser.from_function(lambda text: ParseResult.fail("ambiguous"), name="amb")("x").status
        == "ambiguous"
    )


def test_from_function_propagates_user_errors() -> None:
    def broken(text: str) -> str:
        raise KeyError("bug in user code")

    parser = Parser.from_function(broken)
    with pytest.raises(KeyError, match="bug in user code"):
        parser("anything")
    with pytest.raises(KeyError):
        parser.after_thinking()("<think>x</think> y")
    with pytest.raises(ZeroDivisionError):
        boxed.map(lambda value: str(1 / 0))(r"\boxed{1}")


def test_from_function_wrong_return_type_is_an_error() -> None:
    parser = Parser.from_function(lambda text: 5, name="five")
    with pytest.raises(TypeError, match="five"):
        parser("x")


def test_exact_normalize_wrong_return_type_is_an_error() -> None:
    with pytest.raises(TypeError, match="must return a str"):
        exact(lambda text: len(text))("abc")


def test_non_str_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expects the completion as a str"):
        boxed(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        last_number(b"5")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(lambda: xml_tag(""), "plain tag name", id="xml-empty"),
        pytest.param(lambda: xml_tag("<answer>"), "without angle brackets", id="xml-brackets"),
        pytest.param(lambda: xml_tag("my answer"), "plain tag name", id="xml-space"),
        pytest.param(lambda: xml_tag(3), "plain tag name", id="xml-not-str"),
        pytest.param(lambda: choice(""), "at least two", id="choice-empty"),
        pytest.param(lambda: choice("A"), "at least two", id="choice-one"),
        pytest.param(lambda: choice(["A", "B"]), "at least two", id="choice-list"),
        pytest.param(lambda: choice("A B"), "contain ' '", id="choice-space"),
        pytest.param(lambda: choice("ABA"), "repeat", id="choice-repeat"),
        pytest.param(lambda: choice("Aa"), "repeat", id="choice-repeat-case"),
        pytest.param(lambda: exact("lower"), "str -> str function", id="exact-not-callable"),
        pytest.param(
            lambda: Parser.from_function("x"), "callable", id="from-function-not-callable"
        ),
        pytest.param(
            lambda: Parser.from_function(str.strip, name=""),
            "non-empty",
            id="from-function-empty-name",
        ),
        pytest.param(lambda: boxed.map(3), "callable", id="map-not-callable"),
    ],
)
def test_bad_configuration_raises_config_error(make, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make()


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        choice("")
