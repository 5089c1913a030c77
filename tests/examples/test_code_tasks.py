"""The code tasks example: every task's tests are right (a reference solution passes them,
a wrong one does not), the split holds 8 tasks out, and `check` scores a reply by running it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import code_tasks as example

from mint_envkit import run_tests
from mint_envkit.sandbox import Limits

SOLUTIONS = {
    "add": "def add(a, b):\n    return a + b",
    "is_even": "def is_even(n):\n    return n % 2 == 0",
    "square": "def square(x):\n    return x * x",
    "maximum": "def maximum(a, b):\n    return max(a, b)",
    "absolute": "def absolute(x):\n    return abs(x)",
    "reverse_string": "def reverse_string(s):\n    return s[::-1]",
    "count_vowels": "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)",
    "factorial": "import math\ndef factorial(n):\n    return math.factorial(n)",
    "fibonacci": "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
    "sum_list": "def sum_list(xs):\n    return sum(xs)",
    "max_list": "def max_list(xs):\n    return max(xs)",
    "is_palindrome": "def is_palindrome(s):\n    return s == s[::-1]",
    "first_char": "def first_char(s):\n    return s[0]",
    "last_element": "def last_element(xs):\n    return xs[-1]",
    "double_all": "def double_all(xs):\n    return [2 * x for x in xs]",
    "celsius_to_fahrenheit": "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32",
    "is_positive": "def is_positive(n):\n    return n > 0",
    "count_words": "def count_words(s):\n    return len(s.split())",
    "to_upper": "def to_upper(s):\n    return s.upper()",
    "min_of_three": "def min_of_three(a, b, c):\n    return min(a, b, c)",
    "list_length": "def list_length(xs):\n    return len(xs)",
    "average": "def average(xs):\n    return sum(xs) / len(xs)",
    "remove_spaces": "def remove_spaces(s):\n    return s.replace(' ', '')",
    "is_prime": "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, n))",
    "gcd": "import math\ndef gcd(a, b):\n    return math.gcd(a, b)",
    "power": "def power(base, exp):\n    return base ** exp",
    "contains": "def contains(xs, x):\n    return x in xs",
    "repeat_string": "def repeat_string(s, n):\n    return s * n",
    "sum_of_digits": "def sum_of_digits(n):\n    return sum(int(d) for d in str(n))",
    "count_char": "def count_char(s, c):\n    return s.count(c)",
    "square_all": "def square_all(xs):\n    return [x * x for x in xs]",
    "multiply": "def multiply(a, b):\n    return a * b",
}


def _name(problem: dict) -> str:
    return problem["question"].split("`")[1].split("(")[0]


def test_the_split_holds_8_tasks_out_of_32():
    train, held_out = example.code_problems(), example.code_problems(held_out=True)
    assert (len(train), len(held_out)) == (24, 8)
    assert not {p["question"] for p in train} & {p["question"] for p in held_out}
    assert {_name(p) for p in train + held_out} == set(SOLUTIONS)


async def test_every_task_passes_its_reference_and_fails_a_wrong_function():
    problems = example.code_problems() + example.code_problems(held_out=True)
    limits = Limits(wall_s=10)
    right = await asyncio.gather(
        *(run_tests(SOLUTIONS[_name(p)], p["tests"], limits=limits) for p in problems)
    )
    assert [run.outcome for run in right] == ["pass"] * len(problems)
    wrong = await asyncio.gather(
        *(
            run_tests(f"def {_name(p)}(*args):\n    return None", p["tests"], limits=limits)
            for p in problems
        )
    )
    assert all(run.outcome == "fail" for run in wrong)


def test_check_runs_a_reply_in_the_sandbox(capsys):
    from mint_envkit.cli import main

    problem = example.code_problems()[0]
    right, bare = f"```python\n{SOLUTIONS['add']}\n```", "def add(a, b): return a + b"
    argv = ["check", f"{example.__file__}:CodeTaskEnv", "--problem", json.dumps(problem)]
    assert main([*argv, "--reply", right, "--reply", bare]) == 0
    out = capsys.readouterr().out
    assert "```python" in out  # the few-shot example is in the rendered prompt
    assert "reward +1.000  parse ok" in out and "'code/passes/pass': 1.0" in out
    assert "reward +0.000  parse no_match" in out
