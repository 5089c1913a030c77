"""Trivial programs: they define what the tests call, and run as a program on a stdin."""

from __future__ import annotations

from mint_envkit.sandbox.cases import split_tests
from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS, called_names


def test_a_trivial_program_defines_what_the_tests_call_and_runs_as_a_program_on_stdin():
    cases = split_tests(["assert math.floor(area(2)) == 3", "assert [x for x in ids(k=1)]"])
    assert called_names(cases) == ["math", "area", "ids"]
    returning_0 = next(p for p in TRIVIAL_PROGRAMS if p.name == "returning 0")
    assert returning_0.source(["math", "area"], functions=True, main=True) == (
        "import math\ndef area(*args, **kwargs):\n    return 0\n"
        'if __name__ == "__main__":\n    print(0)'
    )


def test_a_stdin_task_gets_the_program_body_alone():
    echo = next(p for p in TRIVIAL_PROGRAMS if p.name == "returning its first argument")
    assert echo.source([], functions=False, main=True) == (
        "import sys\nsys.stdout.write(sys.stdin.read())"
    )
    nothing = next(p for p in TRIVIAL_PROGRAMS if p.name == "doing nothing (pass)")
    assert nothing.source([], functions=False, main=True) == "pass"
    assert nothing.source([], functions=True, main=False) == "pass"  # tests call nothing
