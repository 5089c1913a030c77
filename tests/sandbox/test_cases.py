"""Tests split into cases: the computed side goes into the sandbox, the expected side stays
out, and the verdict is Python's comparison of plain values, made outside."""

from __future__ import annotations

import pytest

from mint_envkit import ConfigError, SandboxError, run_tests
from mint_envkit.sandbox import Limits, ProcessResult
from mint_envkit.sandbox.cases import split_test, split_tests, verdict

SPLITS = [
    ("assert add(2, 3) == 5", "add(2, 3)", "==", 5),
    ("assert 5 == add(2, 3)", "add(2, 3)", "==", 5),
    ("assert add(2, 3) != 4", "add(2, 3)", "!=", 4),
    ("assert f('a') == ('a', [1.5, None], {'k': b'v'})", "f('a')", "==", ("a", [1.5, None], {"k": b"v"})),
    ("assert is_even(4) is True", "is_even(4)", "is", True),
    ("assert f() is not None", "f()", "is not", None),
    ("assert f(1) in [1, 2]", "f(1)", "in", [1, 2]),
    ("assert f(1) not in {3}", "f(1)", "not in", {3}),
    ("assert is_prime(7)", "is_prime(7)", "truthy", None),
    ("assert not is_prime(8)", "is_prime(8)", "falsy", None),
    ("assert not f(1) == 2", "f(1)", "!=", 2),
    ("assert f(-1) == -1, 'negative numbers'", "f(-1)", "==", -1),
    ("assert round(mean([1, 2]), 6) == 1.5", "round(mean([1, 2]), 6)", "==", 1.5),
    ("assert True", "True", "truthy", None),
]  # fmt: skip

REFUSED = [
    ("x = f(1)\nassert x == 2", "not one assert"),
    ("f(1)", "not one assert"),
    ("assert f(1) < 3", "only one ==, !=, in"),
    ("assert 0 < f(1) == 3", "only one ==, !=, in"),
    ("assert f(1) == g(1)", "no literal on either side"),
    ("assert 3 in f(1)", "no literal on the right of `in`"),
    ("assert f(1) is 5", "`is` compares only with True, False or None"),
    ("assert isinstance(f(1), int)", "`isinstance(...)` makes its verdict"),
    ("assert all(f(x) for x in [1, 2])", "`all(...)` makes its verdict"),
    ("assert f(1) and f(2)", "holds a BoolOp"),
    ("assert bool(f(1) == 3)", "`bool(...)` makes its verdict"),
    ("assert g(f(1) == 3)", "holds a Compare"),
    ("assert abs(f(1) - 0.3) < 1e-9", "only one ==, !=, in"),
    ("assert f(1 if x else 2) == 3", "holds a IfExp"),
    ("assert f(", "does not parse"),
]


@pytest.mark.parametrize(("test", "expression", "check", "expected"), SPLITS)
def test_the_forms_that_split(test: str, expression: str, check: str, expected: object):
    case = split_test(test)
    assert (case.expression, case.check, case.expected) == (expression, check, expected)
    assert case.sent() == {"expression": expression}


@pytest.mark.parametrize(("test", "reason"), REFUSED)
def test_a_test_that_does_not_split_is_refused_naming_the_forms_that_do(test: str, reason: str):
    with pytest.raises(ConfigError, match="cannot be split") as raised:
        split_test(test)
    assert reason in str(raised.value) and "assert f(x) == <literal>" in str(raised.value)


def test_a_stdin_case_sends_its_stdin_and_keeps_its_stdout():
    case = split_test({"stdin": "1 2\n", "stdout": "3\n"})
    assert case.sent() == {"stdin": "1 2\n"} and case.check == "stdout"
    assert verdict(case, "3   \n\n")[0] == "pass"  # trailing whitespace, trailing blank lines
    assert verdict(case, " 3\n")[0] == "fail"
    assert verdict(case, 3)[0] == "fail"  # only text is output
    with pytest.raises(ConfigError, match='"stdin": str, "stdout": str'):
        split_test({"stdin": "1"})


def test_bad_test_lists_are_refused():
    for bad in (None, [], [""], [3], "   "):
        with pytest.raises(ConfigError, match="non-empty list"):
            split_tests(bad)
    assert len(split_tests("assert f()")) == 1


def test_verdicts_are_pythons_comparisons_of_plain_values():
    assert verdict(split_test("assert f() == 32"), 32.0)[0] == "pass"
    assert verdict(split_test("assert f() == (1, 2)"), [1, 2])[0] == "fail"
    assert verdict(split_test("assert f() is True"), 1)[0] == "fail"
    assert verdict(split_test("assert f() is True"), True)[0] == "pass"
    assert verdict(split_test("assert f() == {1, 2}"), frozenset({1, 2}))[0] == "pass"
    assert verdict(split_test("assert not f()"), [])[0] == "pass"
    status, error = verdict(split_test("assert f(2) == 5"), -1)
    assert status == "fail" and error == "AssertionError: f(2) gave -1, expected 5"
    status, error = verdict(split_test("assert f(1) in 'abc'"), 1)  # 1 in 'abc' raises
    assert status == "error" and error.startswith("TypeError")


class Recording:
    """An executor that records what it is sent and reports nothing."""

    name = "recording"

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        self.sent += [source, stdin]
        return ProcessResult("finished", 0, "", "", 0.0)


async def test_the_expected_values_never_reach_the_executor():
    executor = Recording()
    secret_value, secret_text = 987654321987, "zebra-quartz-expected"
    tests = [
        f"assert add(2, 3) == {secret_value}",
        f"assert name(1) != {secret_text!r}",
        {"stdin": "1 2", "stdout": secret_text + "-out"},
    ]
    with pytest.raises(SandboxError, match="did not start"):  # it reported nothing
        await run_tests("def add(a, b):\n    return a + b", tests, executor=executor)
    sent = "".join(executor.sent)
    assert "add(2, 3)" in sent and "name(1)" in sent and "1 2" in sent
    assert str(secret_value) not in sent and secret_text not in sent
