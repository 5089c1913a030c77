"""Code envs for the code audit's tests: tests too weak in several ways, and strong ones.

Each problem is ``(function, tests, solution)``; :func:`groups` makes one GroupBuilder per
problem for :func:`~mint_envkit.auditing.code.audit_code`, and the builders are ENV_SPECs
for ``mint-envkit audit``.
"""

from __future__ import annotations

from typing import Any

from mint_envkit import CodeEnv, DatasetBuilder, RewardContext, component
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.sandbox import code_passes, python_code, run_tests

TINY = "mint-envkit/tiny-qwen3"


def problem(function: str, tests: list, solution: str | None = None) -> dict[str, Any]:
    question = f"Write a Python function `{function}`." if "(" in function else f"Write {function}."
    out: dict[str, Any] = {"question": question, "tests": tests}
    return out if solution is None else {**out, "solution": solution}


# Tests that mostly expect True: the case (`def f(*a): return True` passes them).
MOSTLY_TRUE = [
    problem(
        "is_even(n)",
        ["assert is_even(4) is True", "assert is_even(0) is True", "assert is_even(10)"],
        "def is_even(n):\n    return n % 2 == 0",
    ),
    problem(
        "is_positive(n)",
        ["assert is_positive(3) is True", "assert is_positive(8)"],
        "def is_positive(n):\n    return n > 0",
    ),
    problem(
        "is_sorted(xs)",
        ["assert is_sorted([1, 2, 3])", "assert is_sorted([])", "assert is_sorted([4, 4])"],
        "def is_sorted(xs):\n    return all(a <= b for a, b in zip(xs, xs[1:]))",
    ),
    problem(
        "add(a, b)",
        ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(0, 7) == 7"],
        "def add(a, b):\n    return a + b",
    ),
]

# Other classes of weak tests, each passed by another trivial program.
OTHER_WEAK = [
    # only cases whose answer is 0: a constant 0 (and False, which equals 0) passes
    problem(
        "count_vowels(s)",
        ["assert count_vowels('sky') == 0", "assert count_vowels('') == 0"],
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)",
    ),
    # only inputs the answer equals: returning the first argument passes
    problem(
        "absolute(x)",
        ["assert absolute(3) == 3", "assert absolute(12) == 12"],
        "def absolute(x):\n    return -x if x < 0 else x",
    ),
    # `assert (f(x), "message")` asserts a non-empty tuple: always true, no assertion at all
    problem("increment(x)", ["assert (increment(1), 'should be 2')"]),
    # a program whose expected output is its input: echoing stdin passes
    problem(
        "a program that prints its input line reversed",
        [{"stdin": "aba\n", "stdout": "aba\n"}, {"stdin": "x\n", "stdout": "x\n"}],
    ),
    # a program whose expected output is nothing: a program that does nothing passes
    problem("a program that prints nothing for a blank line", [{"stdin": "\n", "stdout": ""}]),
]

STRONG = [
    problem(
        "add(a, b)",
        ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(0, 7) == 7"],
        "def add(a, b):\n    return a + b",
    ),
    problem(
        "is_even(n)",
        [
            "assert is_even(4) is True",
            "assert is_even(7) is False",
            "assert is_even(0) is True",
            "assert is_even(-3) is False",
        ],
        "def is_even(n):\n    return n % 2 == 0",
    ),
    problem(
        "clamp(x)",
        [
            "assert clamp(5) == 5",
            "assert clamp(-3) == 0",
            "assert clamp(0) == 0",
            "assert clamp(-1) == 0",
        ],
        "def clamp(x):\n    if x < 0:\n        return 0\n    return x",
    ),
    problem(
        "reverse(s)",
        [{"stdin": "abc\n", "stdout": "cba\n"}, {"stdin": "xy\n", "stdout": "yx\n"}],
        "print(input()[::-1])",
    ),
]

# clamp with two tests: 3 of its 7 mutants survive, and which ones is known
# (`x <= 0` and `x < 1` are equivalent on integers; `x < -1` is a gap: no test at -1).
CLAMP_WEAK = problem(
    "clamp(x)",
    ["assert clamp(5) == 5", "assert clamp(-3) == 0"],
    "def clamp(x):\n    if x < 0:\n        return 0\n    return x",
)

# solutions that fail their own tests: a wrong one, and one that does not parse
BROKEN = [
    problem(
        "double(x)",
        ["assert double(2) == 4", "assert double(5) == 10"],
        "def double(x):\n    return x * 3",
    ),
    problem("half(x)", ["assert half(4) == 2"], "def half(x)\n    return x / 2"),
]


def groups(problems: list[dict[str, Any]], env: type = CodeEnv) -> list[GroupBuilder]:
    return [
        GroupBuilder(problem=p, env=env, group_size=1, model_name=TINY, index=i)
        for i, p in enumerate(problems)
    ]


def _builder(problems: list[dict[str, Any]]) -> DatasetBuilder:
    return DatasetBuilder(
        env=CodeEnv, problems=problems, batch_size=2, group_size=1, model_name=TINY, shuffle=False
    )


mostly_true_builder = _builder(MOSTLY_TRUE)
no_solution_builder = _builder(
    [{k: v for k, v in p.items() if k != "solution"} for p in STRONG[:2]]
)
weak_builder = _builder([*MOSTLY_TRUE, *OTHER_WEAK, CLAMP_WEAK, BROKEN[0]])
"""Every kind above in one env (docs/audit.md shows its audit)."""


# --- issue 44, round 2: other members of the classes the reward zoo holds ---------------


async def none_failed(context: RewardContext) -> float:
    """1.0 when no test *fails*: a program that raises (every test an error) passes."""
    code = python_code(context.completion)
    if not code:
        return 0.0
    run = await run_tests(code.value, context.answer)
    return float(bool(run.tests) and all(t.status != "fail" for t in run.tests))


class NoFailureEnv(CodeEnv):
    reward_fn = component(none_failed, bounds=(0.0, 1.0))


class SharePassedEnv(CodeEnv):
    reward_fn = code_passes(partial=True)


# tests that tell a solution from every trivial program, but not from one that raises
# when only assertion failures count (NoFailureEnv)
RAISES_PASS = [
    problem(
        "triple(x)",
        ["assert triple(2) == 6", "assert triple(-1) == -3", "assert triple(0) == 0"],
        "def triple(x):\n    return 3 * x",
    ),
    problem(
        "initials(name)",
        ["assert initials('Ada Lovelace') == 'AL'", "assert initials('Alan Turing') == 'AT'"],
        "def initials(name):\n    return ''.join(w[0] for w in name.split())",
    ),
]

# each task's only test is the example its prompt shows (a returned value, not printed)
EXAMPLE_ONLY = [
    {
        "question": "Write a Python function `cube(x)`. For example, cube(2) returns `8`.",
        "tests": ["assert cube(2) == 8"],
        "solution": "def cube(x):\n    return x ** 3",
    },
    {
        "question": "Write a Python function `shout(s)` (upper case and '!'). "
        "For example, shout('hi') returns 'HI!'.",
        "tests": ["assert shout('hi') == 'HI!'"],
        "solution": "def shout(s):\n    return s.upper() + '!'",
    },
]
EXAMPLE_AND_MORE = [
    {**p, "tests": [*p["tests"], more]}
    for p, more in zip(
        EXAMPLE_ONLY, ["assert cube(-3) == -27", "assert shout('ok') == 'OK!'"], strict=True
    )
]

# partial credit over tests half of which expect False: `return False` earns half
HALF_FALSE = [
    problem(
        "is_vowel(c)",
        [
            "assert is_vowel('a') == True",
            "assert is_vowel('e') == True",
            "assert is_vowel('b') == False",
            "assert is_vowel('z') == False",
        ],
        "def is_vowel(c):\n    return c in 'aeiou'",
    ),
    problem(
        "is_digit(c)",
        [
            "assert is_digit('7') == True",
            "assert is_digit('0') == True",
            "assert is_digit('x') == False",
            "assert is_digit(' ') == False",
        ],
        "def is_digit(c):\n    return c in '0123456789'",
    ),
]
# partial credit over tests whose expected values differ: a constant earns a quarter at most
SPREAD_VALUES = [
    problem(
        "vowel_count(s)",
        [
            "assert vowel_count('tree') == 2",
            "assert vowel_count('sky') == 0",
            "assert vowel_count('cat') == 1",
            "assert vowel_count('audio') == 4",
        ],
        "def vowel_count(s):\n    return sum(c in 'aeiou' for c in s)",
    ),
    problem(
        "tens(n)",
        [
            "assert tens(42) == 4",
            "assert tens(7) == 0",
            "assert tens(93) == 9",
            "assert tens(15) == 1",
        ],
        "def tens(n):\n    return n // 10 % 10",
    ),
]
