"""The host's reader never raises on what the sandbox sends (issue 46): whatever the report
lines hold (random JSON, forged tags, huge ints, deep nesting, broken lines), ``read_report``
returns a run, and a value it cannot convert makes its test an ``error`` with the reason."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mint_envkit.sandbox import ProcessResult
from mint_envkit.sandbox.cases import split_tests
from mint_envkit.sandbox.harness import read_report
from mint_envkit.sandbox.inside import MAX_DEPTH, MAX_INT_DIGITS, MAX_ITEMS, decode

NONCE = "mint-" + "cd" * 16
CASES = split_tests(
    ["assert f() == 5", "assert f() in [1, 2.5, 'a']", "assert f()", "assert f() is None"]
)
READY = f'\n{NONCE} {{"event": "ready"}}\n'
FUZZ = settings(max_examples=250, deadline=None)

HUGE = [10**400, -(10**400), 2**4000, 10**4299]
TAGS = ["int", "bytes", "complex", "tuple", "set", "frozenset", "dict", "object", ""]


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(HUGE),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.builds(lambda tag, body: {tag: body}, st.sampled_from(TAGS), inner),
        st.builds(
            lambda tag, body: {tag: body}, st.sampled_from(TAGS), st.lists(inner, max_size=3)
        ),
        st.dictionaries(st.text(max_size=5), inner, max_size=3),
    ),
    max_leaves=12,
)
adversarial = st.sampled_from(
    [
        {"complex": [10**400, 0]},
        {"complex": [0, -(10**400)]},
        {"complex": [1, "x"]},
        {"complex": [[1], 2]},
        {"int": "0x" + "f" * (MAX_INT_DIGITS + 1)},
        {"int": "-0x" + "1" * MAX_INT_DIGITS},
        {"int": "0xzz"},
        {"int": hex(10**5000)},
        {"bytes": "zz"},
        {"set": [[1], [2]]},
        {"dict": [[[1], 2]]},
        {"dict": [[1, 2, 3]]},
        {"set": [k * (2**61 - 1) for k in range(20)]},
        {"tuple": _deep(MAX_DEPTH + 3)},
        _deep(MAX_DEPTH + 3),
        [0] * 1000,
    ]
)
events = st.one_of(
    st.builds(
        lambda index, value: {"event": "case", "index": index, "value": value},
        st.one_of(st.integers(-2, 5), st.sampled_from([True, "0", None, 10**400])),
        st.one_of(values, adversarial),
    ),
    st.builds(
        lambda index, raised: {"event": "case", "index": index, "raised": raised},
        st.integers(-1, 4),
        st.one_of(st.text(max_size=30), st.integers(), st.none()),
    ),
    st.builds(
        lambda status, error: {"event": "load", "status": status, "error": error},
        st.sampled_from(["ok", "error", 3]),
        values,
    ),
    st.fixed_dictionaries({"event": st.sampled_from(["ready", "done", "test", 7])}),
    values,
)


def _line(event: object) -> str:
    try:
        return f"\n{NONCE} {json.dumps(event)}\n"
    except ValueError:  # json.dumps of an int past Python's digit limit
        return f'\n{NONCE} {{"event": "case", "index": 0, "value": 1{"0" * 5000}}}\n'


raw_lines = st.one_of(
    st.text(max_size=60).map(lambda text: f"\n{NONCE} {text}\n"),
    st.text(max_size=60),
    st.sampled_from(
        [
            f"\n{NONCE} " + "[" * 100_000 + "\n",
            f'\n{NONCE} {{"event": "case", "index": 0, "value": 1{"0" * 200_000}}}\n',
            f"\n{NONCE} NaN\n",
            f"\n{NONCE} \ud800\n",
            f"\n{NONCE}\n",
        ]
    ),
)


def _read(stdout: str, status: str = "finished"):
    result = ProcessResult(status, 0, READY + stdout, "", 0.1)  # type: ignore[arg-type]
    return read_report(result, CASES, NONCE)


@FUZZ
@given(st.lists(st.one_of(events.map(_line), raw_lines), max_size=8),
       st.sampled_from(["finished", "timeout", "output_limit"]))  # fmt: skip
def test_the_reader_never_raises_on_any_report(lines: list[str], status: str):
    run = _read("".join(lines), status)
    assert run.outcome in ("pass", "fail", "error", "timeout")
    assert len(run.tests) == len(CASES)
    for test in run.tests:
        assert test.status in ("pass", "fail", "error", "not_run")


@FUZZ
@given(st.one_of(values, adversarial))
def test_decode_returns_or_raises_value_error_only(data: object):
    with contextlib.suppress(ValueError):
        decode(data)


def test_the_forged_401_digit_complex_scores_error_with_the_reason():
    forged = _line({"event": "case", "index": 0, "value": {"complex": [10**400, 0]}})
    run = _read(forged)
    assert run.outcome == "error" and run.tests[0].status == "error"
    assert "too large for a float" in run.tests[0].error, run.tests[0]
    assert "tampered" in run.message and "too large for a float" in run.message


def test_values_past_the_bounds_are_errors_that_say_which_bound():
    too_long = {"int": "0x" + "f" * (MAX_INT_DIGITS + 1)}
    run = _read(_line({"event": "case", "index": 0, "value": too_long}))
    assert run.tests[0].status == "error" and f"over the {MAX_INT_DIGITS}" in run.tests[0].error
    many = [0] * (MAX_ITEMS + 1)
    run = _read(_line({"event": "case", "index": 0, "value": many}))
    assert run.tests[0].status == "error" and f"more than {MAX_ITEMS} values" in run.tests[0].error


def test_an_int_too_long_for_decimal_is_shown_by_its_size():
    # 4,153 hex digits: within the bound, but past Python's 4,300-decimal-digit repr
    run = _read(_line({"event": "case", "index": 0, "value": {"int": hex(10**5000)}}))
    assert run.tests[0].status == "fail" and "<an int of 16610 bits>" in run.tests[0].error
