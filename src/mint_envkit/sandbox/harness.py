"""The program that runs inside the sandbox, and how its report is read back.

The harness receives the model's code and the tests on stdin (one JSON line), runs the
code, then each test in the code's namespace, and reports every step as a line
``<nonce> {json}`` on its standard output; the nonce is random per run, so lines the
code prints cannot pass for the harness's own. :func:`read_report` turns those lines
and the :class:`~mint_envkit.sandbox.ProcessResult` into a :class:`CodeRun`.

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

from mint_envkit.sandbox.executor import ProcessResult

Outcome = Literal["pass", "fail", "error", "timeout"]
"""How a run of code against its tests went, as a whole.

- ``"pass"``: the code loaded and every test passed.
- ``"fail"``: the code loaded and ran its tests, and some test failed (an ``assert``
  that did not hold, or a test that raised).
- ``"error"``: the code did not load (a syntax error, an exception at import, a
  ``sys.exit``), or the run died before the tests finished (out of memory, over the
  output cap, the process limit, an ``os._exit``).
- ``"timeout"``: the run went past its wall-clock or CPU limit.

Example::

    outcome: Outcome = "fail"
"""

TestStatus = Literal["pass", "fail", "error", "not_run"]
"""How one test went: its assert held (``pass``), failed (``fail``), it raised anything
else (``error``), or it never ran (``not_run``: the code did not load, or the run ended
first).

Example::

    status: TestStatus = "not_run"
"""

HARNESS = r"""
def _harness():
    import json, os, resource, sys
    header = json.loads(sys.stdin.readline())
    nonce, code, tests = header["nonce"], header["code"], header["tests"]
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (header["nproc"], header["nproc"]))
    except (ValueError, OSError):
        pass
    del header
    out = os.dup(1)

    def report(**event):
        os.write(out, ("\n" + nonce + " " + json.dumps(event) + "\n").encode())

    def why(err):
        return (type(err).__name__ + ": " + str(err))[:500]

    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(compile(code, "<solution>", "exec"), namespace)
    except BaseException as err:
        report(event="load", status="error", error=why(err))
        return
    report(event="load", status="ok")
    for index, test in enumerate(tests):
        try:
            exec(compile(test, "<test %d>" % index, "exec"), namespace)
        except AssertionError as err:
            report(event="test", index=index, status="fail", error=why(err))
        except BaseException as err:
            report(event="test", index=index, status="error", error=why(err))
        else:
            report(event="test", index=index, status="pass")
    report(event="done")


_harness()
"""
"""The Python source every executor runs: it reads its input from stdin."""

_TAIL = 2000


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


def make_input(code: str, tests: list[str], processes: int) -> tuple[str, str]:
    """The harness's stdin line for ``code`` and ``tests``, and the run's nonce.

    Example::

        line, nonce = make_input("x = 1", ["assert x == 1"], 16)
        assert line.endswith("\\n") and nonce in line
    """
    nonce = "mint-" + secrets.token_hex(16)
    header = {"nonce": nonce, "code": code, "tests": tests, "nproc": int(processes)}
    return json.dumps(header) + "\n", nonce


def _events(stdout: str, nonce: str) -> tuple[list[dict], str]:
    events: list[dict] = []
    kept: list[str] = []
    marker = nonce + " "
    for line in stdout.split("\n"):
        if line.startswith(marker):
            if kept and not kept[-1]:
                kept.pop()  # the newline the harness writes before its line
            try:
                event = json.loads(line[len(marker) :])
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
        else:
            kept.append(line)
    text = "\n".join(kept)
    return events, text


def read_report(result: ProcessResult, tests: list[str], nonce: str) -> CodeRun:
    """Turn the harness's report lines and the run's end into a :class:`CodeRun`.

    Example::

        run = read_report(ProcessResult("timeout", -9, "", "", 10.0), ["assert f()"], "n")
        assert run.outcome == "timeout" and run.tests[0].status == "not_run"
    """
    events, stdout = _events(result.stdout, nonce)
    statuses: dict[int, tuple[TestStatus, str]] = {}
    load_error = ""
    done = False
    for event in events:
        kind = event.get("event")
        if kind == "load" and event.get("status") == "error":
            load_error = str(event.get("error", ""))
        elif kind == "test" and isinstance(event.get("index"), int):
            status = event.get("status")
            if status in ("pass", "fail", "error"):
                statuses[event["index"]] = (status, str(event.get("error", "")))
        elif kind == "done":
            done = True
    results = tuple(
        TestResult(test, *statuses.get(index, ("not_run", ""))) for index, test in enumerate(tests)
    )
    outcome: Outcome
    if result.status == "timeout":
        outcome, message = "timeout", result.message
    elif done and result.status == "finished":
        outcome = "pass" if all(test.passed for test in results) else "fail"
        message = ""
    else:
        outcome = "error"
        message = load_error or result.message
        if not message:
            message = f"the run ended (exit code {result.exit_code}) before the tests finished"
    return CodeRun(
        outcome=outcome,
        tests=results,
        message=message,
        stdout=stdout[-_TAIL:],
        stderr=result.stderr[-_TAIL:],
        wall_s=result.wall_s,
    )
