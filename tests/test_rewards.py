"""Reward composition: gated, weighted, metric names, config errors, error propagation."""

from __future__ import annotations

import math

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import Parser, ParseResult, boxed, choice, exact, last_number, xml_tag
from mint_envkit.parsers.result import STATUSES
from mint_envkit.rewards import (
    Reward,
    RewardBreakdown,
    component,
    correct,
    gated,
    valid_format,
    weighted,
)
from mint_envkit.rewards.parts import default_check

GATED = gated(correct(boxed), gate=valid_format(xml_tag("answer")))


@pytest.mark.parametrize(
    ("completion", "answer", "total", "correct_value", "format_value"),
    [
        pytest.param(r"<answer>\boxed{5}</answer>", "5", 1.0, 1.0, 1.0, id="right-and-formatted"),
        pytest.param(r"\boxed{5}", "5", 0.0, 1.0, 0.0, id="right-but-no-tag"),
        pytest.param(r"<answer>\boxed{6}</answer>", "5", 0.0, 0.0, 1.0, id="formatted-but-wrong"),
        pytest.param("<answer>5</answer>", "5", 0.0, 0.0, 1.0, id="no-box"),
        pytest.param(r"<answer>\boxed{5.0}</answer>", "5", 1.0, 1.0, 1.0, id="numeric-equality"),
    ],
)
def test_gated(
    completion: str, answer: str, total: float, correct_value: float, format_value: float
) -> None:
    breakdown = GATED(completion, answer)
    assert breakdown.total == total
    assert breakdown.components == {
        "gated": total,
        "correct": correct_value,
        "format": format_value,
    }


def test_gated_otherwise_value() -> None:
    reward = gated(correct(boxed), gate=valid_format(xml_tag("answer")), otherwise=-1.0)
    assert reward(r"\boxed{5}", "5").total == -1.0
    assert reward(r"<answer>\boxed{5}</answer>", "5").total == 1.0


def test_gate_must_score_zero_or_one() -> None:
    half = component(lambda completion, answer: 0.5, name="half")
    reward = gated(correct(boxed), gate=half)
    with pytest.raises(ConfigError, match=r"gate 'half' scored 0\.5"):
        reward(r"\boxed{5}", "5")


def test_weighted_spec_example() -> None:
    reward = weighted(correct=(correct(last_number), 1.0), fmt=(valid_format(boxed), 0.1))
    breakdown = reward(r"so \boxed{5}", "5")
    assert breakdown.total == pytest.approx(1.1)
    assert breakdown.components == {"weighted": breakdown.total, "correct": 1.0, "fmt": 1.0}
    wrong = reward("so 4", "5")
    assert wrong.total == 0.0
    assert wrong.statuses == {"correct": "ok", "fmt": "no_match"}


def test_weighted_negative_weight_penalty_and_nesting() -> None:
    too_long = component(lambda completion, answer: float(len(completion) > 10), name="too_long")
    reward = weighted(
        main=(gated(correct(boxed), gate=valid_format(xml_tag("answer"))), 1.0),
        length=(too_long, -0.5),
    )
    breakdown = reward(r"<answer>\boxed{5}</answer>", "5")
    assert breakdown.total == 0.5
    assert breakdown.components == {
        "weighted": 0.5,
        "main": 1.0,
        "correct": 1.0,
        "format": 1.0,
        "length": 1.0,
    }


def test_metrics_names() -> None:
    breakdown = GATED(r"<answer>\boxed{5}", "5")
    metrics = breakdown.metrics
    assert metrics["reward/total"] == 0.0
    assert metrics["reward/gated"] == 0.0
    assert metrics["reward/correct"] == 1.0
    assert metrics["reward/format"] == 0.0
    assert metrics["parse/format/truncated"] == 1.0
    assert metrics["parse/correct/ok"] == 1.0
    expected = {"reward/total", "reward/gated", "reward/correct", "reward/format"}
    expected |= {f"parse/{name}/{status}" for name in ("correct", "format") for status in STATUSES}
    assert set(metrics) == expected
    assert all(isinstance(value, float) for value in metrics.values())
    assert sum(metrics[f"parse/format/{status}"] for status in STATUSES) == 1.0


def test_component_metrics_have_no_parse_status() -> None:
    def short(completion: str, answer: str) -> float:
        return 1.0 if len(completion) < 5 else 0.0

    breakdown = component(short)("abc", "")
    assert breakdown.metrics == {"reward/total": 1.0, "reward/short": 1.0}


def test_correct_reports_parse_failure_status() -> None:
    reward = correct(last_number.after_thinking())
    breakdown = reward("<think>the answer is 5", "5")
    assert breakdown.total == 0.0
    assert breakdown.statuses == {"correct": "unclosed_think"}
    assert breakdown.metrics["parse/correct/unclosed_think"] == 1.0


def test_correct_default_check() -> None:
    assert correct(boxed)(r"\boxed{1,000}", "1000").total == 1.0
    assert correct(boxed)(r"\boxed{\frac{1}{2}}", "0.5").total == 1.0
    assert correct(boxed)(r"\boxed{Paris}", " Paris ").total == 1.0
    assert correct(boxed)(r"\boxed{paris}", "Paris").total == 0.0
    assert correct(last_number)("so 42", 42).total == 1.0  # type: ignore[arg-type]
    assert default_check("5", "5.0") and not default_check("5", "five")


def test_no_reference_answer_is_never_right() -> None:
    assert not default_check("None", None)
    assert correct(exact())("None", None).total == 0.0  # type: ignore[arg-type]
    assert correct(exact())("None", "None").total == 1.0


def test_the_breakdown_carries_the_answer_check_verdict() -> None:
    right = GATED(r"<answer>\boxed{5}</answer>", "5")
    assert (right.correct, right.parse) == (True, ParseResult.ok("5"))
    untagged = GATED(r"\boxed{5}", "5")  # the right answer, but the gate failed: not credited
    assert (untagged.total, untagged.correct, untagged.parse) == (0.0, False, ParseResult.ok("5"))
    wrong = GATED("<answer>5</answer>", "5")
    assert (wrong.correct, wrong.parse.status) == (False, "no_match")
    both = weighted(a=(correct(last_number), 1.0), b=(correct(boxed), 1.0))
    assert both(r"\boxed{5} or 7", "5").correct is False  # every answer check must pass
    assert both(r"\boxed{5}", "5").correct is True
    no_check = weighted(fmt=(valid_format(boxed), 1.0))(r"\boxed{5}", "5")
    assert (no_check.correct, no_check.parse) == (None, None)
    assert GATED.checks_answer and not valid_format(boxed).checks_answer


def test_bounds_are_known_unless_a_part_is_a_plain_component() -> None:
    assert correct(boxed).bounds == (0.0, 1.0)
    assert gated(correct(boxed), gate=valid_format(boxed), otherwise=-1.0).bounds == (-1.0, 1.0)
    penalty = weighted(ok=(correct(boxed), 1.0), fmt=(valid_format(boxed), -0.5))
    assert penalty.bounds == (-0.5, 1.0)
    free = component(lambda c, a: 0.0, name="free")
    assert free.bounds is None
    assert weighted(ok=(correct(boxed), 1.0), free=(free, 1.0)).bounds is None
    given = component(lambda c, a: 0.5, name="given", bounds=(0.0, 1.0))
    assert weighted(ok=(correct(boxed), 1.0), given=(given, -1.0)).bounds == (-1.0, 1.0)


def test_a_component_outside_its_bounds_or_with_bad_bounds_is_refused() -> None:
    loud = component(lambda c, a: 2.0, name="loud", bounds=(0.0, 1.0))
    with pytest.raises(ConfigError, match=r"returned 2\.0, outside its bounds \(0\.0, 1\.0\)"):
        loud("x", "y")
    for bounds in ((1.0, 0.0), (0.0,), (0.0, float("inf")), "01"):
        with pytest.raises(ConfigError, match="needs \\(lowest, highest\\)"):
            component(lambda c, a: 0.0, name="b", bounds=bounds)
    with pytest.raises(ConfigError, match="its signature takes neither"):
        component(len, name="n")


def test_plain_functions_are_rewards_and_parsers_where_one_is_asked() -> None:
    def exact_reward(completion: str, answer: str) -> float:
        return float(completion.strip() == answer)

    def first_word(text: str) -> str | None:
        return text.split()[0] if text.split() else None

    assert weighted(a=(exact_reward, 1.0))("5", "5").total == 1.0
    assert gated(exact_reward, gate=valid_format(boxed))("5", "5").total == 0.0
    assert correct(first_word)("Paris is", "Paris").total == 1.0


def test_correct_custom_check_and_name() -> None:
    reward = correct(
        exact(), check=lambda value, answer: value.lower() == answer.lower(), name="loose"
    )
    breakdown = reward("PARIS", "paris")
    assert breakdown.total == 1.0 and breakdown.components == {"loose": 1.0}


def test_correct_with_choice() -> None:
    reward = correct(choice("ABCD"))
    assert reward("The answer is (C).", "C").total == 1.0
    assert reward("A or C", "C").statuses == {"correct": "ambiguous"}


def test_check_must_return_bool() -> None:
    reward = correct(boxed, check=lambda value, answer: 0.5)
    with pytest.raises(ConfigError, match="must return a bool"):
        reward(r"\boxed{5}", "5")


def test_named_renames() -> None:
    reward = correct(last_number).named("math")
    assert reward.name == "math"
    assert reward("5", "5").components == {"math": 1.0}
    assert isinstance(reward, Reward)


def test_breakdown_is_a_value() -> None:
    breakdown = correct(last_number)("5", "5")
    assert breakdown == RewardBreakdown(
        total=1.0,
        components={"correct": 1.0},
        statuses={"correct": "ok"},
        correct=True,
        parse=ParseResult.ok("5"),
    )


# --- errors from user code propagate, they are never scored as 0.0 ---


def test_component_exception_propagates() -> None:
    def broken(completion: str, answer: str) -> float:
        raise RuntimeError("bug in reward code")

    reward = weighted(ok=(correct(boxed), 1.0), bad=(component(broken), 0.5))
    with pytest.raises(RuntimeError, match="bug in reward code"):
        reward(r"\boxed{5}", "5")


def test_check_exception_propagates() -> None:
    def check(value: str, answer: str) -> bool:
        raise KeyError("bug in check")

    with pytest.raises(KeyError, match="bug in check"):
        correct(boxed, check=check)(r"\boxed{5}", "5")


def test_parser_function_exception_propagates() -> None:
    def parse(text: str) -> str:
        raise ValueError("bug in parser")

    reward = gated(correct(Parser.from_function(parse)), gate=valid_format(boxed))
    with pytest.raises(ValueError, match="bug in parser"):
        reward(r"\boxed{5}", "5")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="none"),
        pytest.param("1.0", id="str"),
        pytest.param(math.nan, id="nan"),
        pytest.param(math.inf, id="inf"),
    ],
)
def test_component_must_return_finite_number(value: object) -> None:
    reward = component(lambda completion, answer: value, name="bad")
    with pytest.raises(ConfigError, match="component 'bad' returned"):
        reward("x", "y")


def test_component_accepts_bool_and_int() -> None:
    assert component(lambda c, a: True, name="flag")("x", "y").total == 1.0
    assert component(lambda c, a: 2, name="two")("x", "y").total == 2.0


def test_non_str_completion_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expects the completion as a str"):
        GATED(["5"], "5")  # type: ignore[arg-type]


# --- configuration errors ---


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(lambda: weighted(a=(correct(boxed), math.nan)), "weight nan", id="nan-weight"),
        pytest.param(lambda: weighted(a=(correct(boxed), math.inf)), "weight inf", id="inf-weight"),
        pytest.param(lambda: weighted(a=(correct(boxed), "1")), "weight '1'", id="str-weight"),
        pytest.param(lambda: weighted(a=(correct(boxed), True)), "weight True", id="bool-weight"),
        pytest.param(lambda: weighted(a=(correct(boxed), None)), "weight None", id="none-weight"),
        pytest.param(lambda: weighted(a=correct(boxed)), "pair", id="not-a-pair"),
        pytest.param(lambda: weighted(), "at least one part", id="no-parts"),
        pytest.param(lambda: weighted(a=(boxed, 1.0)), "wrap it", id="parser-not-reward"),
        pytest.param(lambda: weighted(a=(len, 1.0)), "component", id="function-not-reward"),
        pytest.param(lambda: gated(correct(boxed), gate=boxed), "valid_format", id="gate-parser"),
        pytest.param(
            lambda: gated(correct(boxed), gate=valid_format(boxed), otherwise=math.nan),
            "otherwise",
            id="nan-otherwise",
        ),
        pytest.param(
            lambda: gated(correct(boxed), gate=correct(boxed)),
            "named 'correct'",
            id="duplicate-names",
        ),
        pytest.param(
            lambda: weighted(weighted=(correct(boxed), 1.0)),
            "named 'weighted'",
            id="duplicate-root",
        ),
        pytest.param(lambda: correct(3), "needs a Parser", id="correct-not-a-parser"),
        pytest.param(lambda: correct(boxed, check="exact"), "callable", id="check-not-callable"),
        pytest.param(lambda: valid_format("boxed"), "needs a Parser", id="format-not-parser"),
        pytest.param(lambda: component(lambda c, a: 1.0), "needs a name", id="lambda-without-name"),
        pytest.param(lambda: component(3, name="x"), "callable", id="component-not-callable"),
        pytest.param(lambda: correct(boxed).named(""), "not valid", id="empty-name"),
        pytest.param(lambda: correct(boxed).named("my reward"), "not valid", id="name-with-space"),
        pytest.param(lambda: correct(boxed, name="a/b"), "not valid", id="name-with-slash"),
    ],
)
def test_bad_configuration_raises_config_error(make, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make()
