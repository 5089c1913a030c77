"""How a run's report is read back: the values the sandbox reported, judged here.

:func:`make_input` builds the sandbox program's stdin: the run's random nonce, the
model's code and each case's sandbox side (:meth:`~mint_envkit.sandbox.cases.Case.sent`:
an expression or a stdin, never the expected value). The program
(:func:`~mint_envkit.sandbox.inside.program`) answers with lines ``<nonce> {json}``, one
value (or exception) per case; the nonce separates them from what the code prints.
:func:`read_report` decodes each value and compares it with its case's expected value
(:func:`~mint_envkit.sandbox.cases.verdict`): the verdict is made here, in trusted code.

The code can print lines with the nonce too (it can read it from its own memory): a
forged line can only carry a value, which passes only when it is the expected one. A
case reported twice, a report of a case that does not exist, or a line that does not
decode (not JSON, over :data:`MAX_REPORT_LINE_CHARS`, or a value past the bounds of
:func:`~mint_envkit.sandbox.inside.decode`: depth, size, digits) is tampering: that case is an ``error`` and the run's outcome ``error``. The
program reports ``ready`` before the code runs; a run without it is the sandbox's
failure (:class:`~mint_envkit.errors.SandboxError`), never a score.

Example::

    from mint_envkit import run_tests
    from mint_envkit.sandbox import CodeRun

    run = await run_tests("def add(a, b):\\n    return a + b", ["assert add(1, 2) == 3"])
    assert run.outcome == "pass" and run.tests[0].status == "pass"
"""

from __future__ import annotations

import json
import secrets
from typing import Literal

import attrs

from mint_envkit.errors import SandboxError
from mint_envkit.sandbox.cases import Case, verdict
from mint_envkit.sandbox.executor import ProcessResult
from mint_envkit.sandbox.inside import decode

Outcome = Literal["pass", "fail", "error", "timeout"]
"""How a run of code against its tests went, as a whole.

- ``"pass"``: the code loaded and every test passed.
- ``"fail"``: the code loaded and every case reported, and some test failed (its value
  was not the expected one, or computing it raised).
- ``"error"``: the code did not load (a syntax error, an exception at import, a
  ``sys.exit``), or the run died before every case reported (out of memory, over the
  output cap, the process limit, an ``os._exit``), or its report was tampered with (a
  case reported twice, a line that does not decode).
- ``"timeout"``: the run went past its wall-clock or CPU limit.

Example::

    outcome: Outcome = "fail"
"""

TestStatus = Literal["pass", "fail", "error", "not_run"]
"""How one test went: its value was the expected one (``pass``), was not, or computing it
raised an ``AssertionError`` (``fail``), computing it raised anything else, its value
cannot leave the sandbox or its report was tampered with (``error``), or no value came
(``not_run``: the code did not load, or the run ended first).

Example::

    status: TestStatus = "not_run"
"""

_TAIL = 2000
MAX_REPORT_LINE_CHARS = 64 << 20
"""The longest report line the host reads (64 Mi chars); a longer one is tampering.

The executors cap a run's whole output (``Limits.output_bytes``, 1 MiB by default); this
bounds the reader itself, whatever executor gave it the output.

Example::

    assert MAX_REPORT_LINE_CHARS == 64 << 20
"""


@attrs.frozen
class TestResult:
    """One test's result: its source, its :data:`TestStatus`, the error it raised.

    Example::

        result = TestResult(test="assert add(1, 2) == 3", status="fail",
                            error="AssertionError: ")
        assert not result.passed
    """

    __test__ = False  # not a pytest test class

    test: str
    status: TestStatus
    error: str = ""

    @property
    def passed(self) -> bool:
        """True when the test passed.

        Example::

            assert TestResult("assert True", "pass").passed
        """
        return self.status == "pass"


@attrs.frozen
class CodeRun:
    """What running the model's code against its tests gave.

    Attributes:
        outcome: an :data:`Outcome` (``pass`` / ``fail`` / ``error`` / ``timeout``).
        tests: one :class:`TestResult` per test, in order.
        message: why the run ended short (the load error, the limit hit), or "".
        stdout, stderr: what the code printed (the harness's lines taken out; the
            last 2000 characters of each).
        wall_s: seconds the run took, as the executor measured them.

    Example::

        from mint_envkit import run_tests

        run = await run_tests("def f(x):\\n    return x", ["assert f(1) == 1", "assert f(2) == 3"])
        assert run.outcome == "fail" and run.passed == 1 and run.fraction == 0.5
    """

    outcome: Outcome
    tests: tuple[TestResult, ...]
    message: str = ""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    @property
    def passed(self) -> int:
        """How many tests passed.

        Example::

            assert CodeRun("pass", (TestResult("assert 1", "pass"),)).passed == 1
        """
        return sum(test.passed for test in self.tests)

    @property
    def fraction(self) -> float:
        """The share of tests that passed (0.0 with no tests).

        Example::

            assert CodeRun("error", (TestResult("assert 1", "not_run"),)).fraction == 0.0
        """
        return self.passed / len(self.tests) if self.tests else 0.0


def make_input(code: str, cases: list[Case], processes: int) -> tuple[str, str]:
    """The sandbox program's stdin line for ``code`` and ``cases``, and the run's nonce.

    Only each case's sandbox side goes in (:meth:`~mint_envkit.sandbox.cases.Case.sent`).

    Example::

        from mint_envkit.sandbox.cases import split_tests

        line, nonce = make_input("x = 1", split_tests(["assert x == 12345"]), 16)
        assert line.endswith("\\n") and nonce in line and "12345" not in line
    """
    nonce = "mint-" + secrets.token_hex(16)
    header = {
        "nonce": nonce,
        "code": code,
        "cases": [case.sent() for case in cases],
        "nproc": int(processes),
    }
    return json.dumps(header) + "\n", nonce


@attrs.define
class _Report:
    """What the report lines said, and the first sign of tampering."""

    ready: bool = False
    load_error: str = ""
    loaded: int = 0
    cases: dict[int, tuple[str, object]] = attrs.Factory(dict)
    twice: set[int] = attrs.Factory(set)
    tampered: str = ""

    def flag(self, why: str) -> None:
        self.tampered = self.tampered or why

    def add(self, event: object, count: int) -> None:
        kind = event.get("event") if isinstance(event, dict) else None
        if not isinstance(event, dict) or kind not in ("ready", "load", "case", "done"):
            self.flag(f"a report line that is no event: {str(event)[:100]}")
        elif kind == "ready":
            self.ready = True
        elif kind == "load":
            self.loaded += 1
            if self.loaded > 1:
                self.flag("the code's load reported twice")
            if event.get("status") == "error":
                self.load_error = str(event.get("error", ""))[:500]
        elif kind == "case":
            self._case(event, count)

    def _case(self, event: dict, count: int) -> None:
        index = event.get("index")
        if type(index) is not int or not 0 <= index < count:
            self.flag(f"a report of case {str(index)[:20]}, which does not exist")
        elif index in self.cases:
            self.twice.add(index)
            self.flag(f"case {index} reported twice")
        elif set(event) == {"event", "index", "value"}:
            try:
                self.cases[index] = ("value", decode(event["value"]))
            except ValueError as err:  # decode raises nothing else
                self.cases[index] = ("bad", f"ValueError: its report does not decode: {err}")
                self.flag(f"case {index}'s value does not decode: {str(err)[:200]}")
        elif set(event) == {"event", "index", "raised"} and isinstance(event["raised"], str):
            self.cases[index] = ("raised", event["raised"][:500])
        else:
            self.cases[index] = ("bad", "ValueError: its report is malformed")
            self.flag(f"case {index}'s report is malformed")


def _events(stdout: str, nonce: str, count: int) -> tuple[_Report, str]:
    report = _Report()
    kept: list[str] = []
    marker = nonce + " "
    for line in stdout.split("\n"):
        if line.startswith(marker):
            if kept and not kept[-1]:
                kept.pop()  # the newline the program writes before its line
            if len(line) > MAX_REPORT_LINE_CHARS:
                report.flag(
                    f"a report line of {len(line)} chars, over the {MAX_REPORT_LINE_CHARS} "
                    "the host reads"
                )
                continue
            try:
                event = json.loads(line[len(marker) :])
            except (ValueError, RecursionError):  # an int of over 4300 digits is a ValueError
                report.flag("a report line that is not JSON")
                continue
            try:
                report.add(event, count)
            except Exception as err:  # the reader never raises on what the sandbox sent
                report.flag(f"a report line the host could not read ({type(err).__name__})")
        else:
            kept.append(line)
    return report, "\n".join(kept)


def _result(case: Case, index: int, report: _Report) -> TestResult:
    if index in report.twice:
        return TestResult(case.test, "error", "ValueError: its value was reported twice")
    kind, body = report.cases.get(index, ("missing", ""))
    if kind == "value":
        return TestResult(case.test, *verdict(case, body))
    if kind == "raised":
        failed = str(body).startswith("AssertionError")
        return TestResult(case.test, "fail" if failed else "error", str(body))
    if kind == "bad":
        return TestResult(case.test, "error", str(body))
    return TestResult(case.test, "not_run")


def read_report(result: ProcessResult, cases: list[Case], nonce: str) -> CodeRun:
    """Judge the values the run reported, and its end, into a :class:`CodeRun`.

    A run whose program never reported that it started raises
    :class:`~mint_envkit.errors.SandboxError` (the sandbox failed, not the code: the
    program reports it before the code runs).

    Example::

        from mint_envkit.sandbox.cases import split_tests

        ready = '\\nn {"event": "ready"}\\n'
        run = read_report(ProcessResult("timeout", -9, ready, "", 10.0),
                          split_tests(["assert f()"]), "n")
        assert run.outcome == "timeout" and run.tests[0].status == "not_run"
    """
    report, stdout = _events(result.stdout, nonce, len(cases))
    if not report.ready:  # the program reports it before the code runs
        raise SandboxError(
            f"the sandbox did not start its program ({result.status}, exit code "
            f"{result.exit_code}{': ' + result.message if result.message else ''}); its "
            f"stderr ends: {result.stderr[-300:]!r}"
        )
    results = tuple(_result(case, index, report) for index, case in enumerate(cases))
    outcome: Outcome
    message = ""
    if result.status == "timeout":
        outcome, message = "timeout", result.message
    elif report.tampered:
        outcome, message = "error", f"the run's report was tampered with: {report.tampered}"
    elif report.load_error:
        outcome, message = "error", report.load_error
    elif result.status != "finished" or any(test.status == "not_run" for test in results):
        outcome, message = "error", result.message
        if not message:
            message = f"the run ended (exit code {result.exit_code}) before the tests finished"
    else:
        outcome = "pass" if all(test.passed for test in results) else "fail"
    return CodeRun(
        outcome=outcome,
        tests=results,
        message=message,
        stdout=stdout[-_TAIL:],
        stderr=result.stderr[-_TAIL:],
        wall_s=result.wall_s,
    )
