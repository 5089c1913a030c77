"""The host reads values, never verdicts: a forged or doubled report is tampering, and a
value passes only when it is the expected one."""

from __future__ import annotations

import json

import pytest

from mint_envkit import SandboxError
from mint_envkit.sandbox import ProcessResult
from mint_envkit.sandbox.cases import split_tests
from mint_envkit.sandbox.harness import make_input, read_report

CASES = split_tests(["assert add(2, 3) == 5", "assert add(1, 1) == 2"])
NONCE = "mint-" + "ab" * 16


def lines(*events: object, nonce: str = NONCE) -> str:
    return "".join(f"\n{nonce} {json.dumps(event)}\n" for event in events)


def judged(stdout: str, status: str = "finished"):
    """The run's report read back, as if the program had started (it reports ``ready``)."""
    stdout = lines(READY) + stdout
    return read_report(ProcessResult(status, 0, stdout, "", 0.1), CASES, NONCE)  # type: ignore[arg-type]


LOAD = {"event": "load", "status": "ok"}
READY = {"event": "ready"}


def value(index: int, data: object) -> dict:
    return {"event": "case", "index": index, "value": data}


def test_values_are_judged_here():
    run = judged("hello" + lines(LOAD, value(0, 5), value(1, 2), {"event": "done"}))
    assert run.outcome == "pass" and run.stdout.strip() == "hello"
    run = judged(lines(LOAD, value(0, 5), value(1, 3)))
    assert run.outcome == "fail" and [t.status for t in run.tests] == ["pass", "fail"]


def test_a_verdict_line_is_not_a_value():
    verdicts = [{"event": "test", "index": i, "status": "pass"} for i in (0, 1)]
    run = judged(lines(LOAD, *verdicts))
    assert run.outcome == "error" and "tampered" in run.message
    assert [t.status for t in run.tests] == ["not_run", "not_run"]


def test_a_case_reported_twice_is_an_error_whichever_value_is_right():
    run = judged(lines(LOAD, value(0, 4), value(0, 5), value(1, 2)))
    assert run.outcome == "error" and "case 0 reported twice" in run.message
    assert [t.status for t in run.tests] == ["error", "pass"]


def test_reports_of_missing_cases_and_undecodable_values_are_tampering():
    for bad in (value(2, 5), value(-1, 5), value("0", 5), value(1, {"object": 1})):
        run = judged(lines(LOAD, value(0, 5), bad, value(1, 2)))
        assert run.outcome == "error" and "tampered" in run.message, bad
    run = judged(lines(LOAD, value(0, 5)) + f"\n{NONCE} not json\n" + lines(value(1, 2)))
    assert run.outcome == "error" and "not JSON" in run.message


def test_lines_with_another_nonce_are_the_codes_output():
    forged = lines(LOAD, value(0, 5), value(1, 2), nonce="mint-" + "00" * 16)
    run = judged(forged)
    assert run.outcome == "error" and "mint-0000" in run.stdout


def test_an_exception_raised_computing_a_value_fails_or_errs_the_test():
    raised = {"event": "case", "index": 1, "raised": "AssertionError: inner"}
    run = judged(lines(LOAD, {"event": "case", "index": 0, "raised": "NameError: add"}, raised))
    assert run.outcome == "fail" and [t.status for t in run.tests] == ["error", "fail"]


def test_a_run_that_ends_early_or_times_out_never_passes():
    complete = lines(LOAD, value(0, 5), value(1, 2))
    assert judged(complete, "timeout").outcome == "timeout"
    assert judged(complete, "output_limit").outcome == "error"
    assert judged(lines(LOAD, value(0, 5))).outcome == "error"


def test_the_input_holds_the_computed_sides_only():
    line, nonce = make_input("def add(a, b): ...", CASES, 8)
    header = json.loads(line)
    assert header["cases"] == [{"expression": "add(2, 3)"}, {"expression": "add(1, 1)"}]
    assert header["nonce"] == nonce and nonce.startswith("mint-")


def test_a_program_that_never_started_is_the_sandboxs_failure_not_a_score():
    for status in ("finished", "timeout"):
        result = ProcessResult(status, 1, "", "bwrap: Can't fork", 0.1)  # type: ignore[arg-type]
        with pytest.raises(SandboxError, match="did not start its program"):
            read_report(result, CASES, NONCE)
