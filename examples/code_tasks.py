"""Code rewards in a sandbox: small function-writing tasks, scored by running their tests.

    mint-envkit check examples/code_tasks.py:builder --reply \\
        '"```python\\ndef add(a, b):\\n    return a + b\\n```"'
    mint-envkit eval examples/code_tasks.py:builder --model mint-envkit/smollm2-135m-instruct
    python examples/code_tasks.py --steps 3 --out runs/code_tasks

32 tasks ("Write a Python function `add(a, b)` that ..."), each with three ``assert``
tests and a reference ``solution`` (what ``mint-envkit audit`` runs as the correct reply,
and mutates to measure the tests); every fourth task is held out (the builder's ``test`` split: 8 tasks, never
trained on). The env is :class:`~mint_envkit.sandbox.CodeEnv`: the reply's last
```python block runs in the bubblewrap sandbox against the task's tests, and the reward
is 1 when every test passes (``code/passes/<outcome>`` metrics say pass / fail / error /
timeout). The prompt holds one worked example (``few_shot``) for the format.

Run as a script it trains SmolLM2-135M a few GRPO steps on the training tasks through
the embedded local backend, and measures greedy held-out correctness before and after
(docs/code.md has the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import attrs

from mint_envkit import Config, DatasetBuilder, Message
from mint_envkit.sandbox import CodeEnv, Limits, code_passes

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"
_OUTCOMES = tuple(f"code/passes/{o}" for o in ("pass", "fail", "error", "timeout"))

TASKS: list[tuple[str, str, list[str]]] = [
    ("add(a, b)", "returns the sum of a and b", ["add(2, 3) == 5", "add(-1, 1) == 0", "add(0, 0) == 0"]),
    ("is_even(n)", "returns True when the integer n is even, else False", ["is_even(4) is True", "is_even(7) is False", "is_even(0) is True"]),
    ("square(x)", "returns x squared", ["square(3) == 9", "square(-4) == 16", "square(0) == 0"]),
    ("maximum(a, b)", "returns the larger of a and b", ["maximum(2, 9) == 9", "maximum(5, 1) == 5", "maximum(-3, -7) == -3"]),
    ("absolute(x)", "returns the absolute value of the number x", ["absolute(-5) == 5", "absolute(3) == 3", "absolute(0) == 0"]),
    ("reverse_string(s)", "returns the string s reversed", ["reverse_string('abc') == 'cba'", "reverse_string('') == ''", "reverse_string('ab') == 'ba'"]),
    ("count_vowels(s)", "returns how many vowels (a, e, i, o, u, lowercase) the string s has", ["count_vowels('hello') == 2", "count_vowels('sky') == 0", "count_vowels('aeiou') == 5"]),
    ("factorial(n)", "returns n! for an integer n >= 0", ["factorial(0) == 1", "factorial(5) == 120", "factorial(3) == 6"]),
    ("fibonacci(n)", "returns the n-th Fibonacci number, with fibonacci(0) == 0 and fibonacci(1) == 1", ["fibonacci(0) == 0", "fibonacci(1) == 1", "fibonacci(10) == 55"]),
    ("sum_list(xs)", "returns the sum of the numbers in the list xs", ["sum_list([1, 2, 3]) == 6", "sum_list([]) == 0", "sum_list([-1, 1]) == 0"]),
    ("max_list(xs)", "returns the largest number in the non-empty list xs", ["max_list([1, 5, 3]) == 5", "max_list([-2, -9]) == -2", "max_list([7]) == 7"]),
    ("is_palindrome(s)", "returns True when the string s reads the same backwards, else False", ["is_palindrome('racecar') is True", "is_palindrome('abc') is False", "is_palindrome('') is True"]),
    ("first_char(s)", "returns the first character of the non-empty string s", ["first_char('hello') == 'h'", "first_char('a') == 'a'", "first_char('xyz') == 'x'"]),
    ("last_element(xs)", "returns the last element of the non-empty list xs", ["last_element([1, 2, 3]) == 3", "last_element(['a']) == 'a'", "last_element([0, 9]) == 9"]),
    ("double_all(xs)", "returns a new list with every number of xs doubled", ["double_all([1, 2]) == [2, 4]", "double_all([]) == []", "double_all([-3]) == [-6]"]),
    ("celsius_to_fahrenheit(c)", "converts c degrees Celsius to Fahrenheit (c * 9 / 5 + 32)", ["celsius_to_fahrenheit(0) == 32", "celsius_to_fahrenheit(100) == 212", "celsius_to_fahrenheit(-40) == -40"]),
    ("is_positive(n)", "returns True when the number n is greater than 0, else False", ["is_positive(3) is True", "is_positive(0) is False", "is_positive(-2) is False"]),
    ("count_words(s)", "returns how many words the string s has (words are separated by spaces)", ["count_words('a b c') == 3", "count_words('hello') == 1", "count_words('') == 0"]),
    ("to_upper(s)", "returns the string s in upper case", ["to_upper('abc') == 'ABC'", "to_upper('Hi') == 'HI'", "to_upper('') == ''"]),
    ("min_of_three(a, b, c)", "returns the smallest of a, b and c", ["min_of_three(3, 1, 2) == 1", "min_of_three(5, 5, 9) == 5", "min_of_three(-1, 0, -4) == -4"]),
    ("list_length(xs)", "returns how many elements the list xs has", ["list_length([1, 2, 3]) == 3", "list_length([]) == 0", "list_length(['a']) == 1"]),
    ("average(xs)", "returns the mean of the numbers in the non-empty list xs", ["average([1, 2, 3]) == 2", "average([4]) == 4", "average([1, 2]) == 1.5"]),
    ("remove_spaces(s)", "returns the string s with every space removed", ["remove_spaces('a b c') == 'abc'", "remove_spaces('abc') == 'abc'", "remove_spaces('  ') == ''"]),
    ("is_prime(n)", "returns True when the integer n is a prime number, else False", ["is_prime(7) is True", "is_prime(1) is False", "is_prime(12) is False"]),
    ("gcd(a, b)", "returns the greatest common divisor of the positive integers a and b", ["gcd(12, 18) == 6", "gcd(7, 5) == 1", "gcd(9, 3) == 3"]),
    ("power(base, exp)", "returns base raised to the integer power exp >= 0", ["power(2, 3) == 8", "power(5, 0) == 1", "power(3, 2) == 9"]),
    ("contains(xs, x)", "returns True when x is in the list xs, else False", ["contains([1, 2], 2) is True", "contains([], 1) is False", "contains(['a'], 'b') is False"]),
    ("repeat_string(s, n)", "returns the string s repeated n times", ["repeat_string('ab', 3) == 'ababab'", "repeat_string('x', 0) == ''", "repeat_string('z', 1) == 'z'"]),
    ("sum_of_digits(n)", "returns the sum of the decimal digits of the integer n >= 0", ["sum_of_digits(123) == 6", "sum_of_digits(0) == 0", "sum_of_digits(99) == 18"]),
    ("count_char(s, c)", "returns how many times the character c occurs in the string s", ["count_char('banana', 'a') == 3", "count_char('abc', 'z') == 0", "count_char('', 'a') == 0"]),
    ("square_all(xs)", "returns a new list with every number of xs squared", ["square_all([1, 2, 3]) == [1, 4, 9]", "square_all([]) == []", "square_all([-2]) == [4]"]),
    ("multiply(a, b)", "returns the product of a and b", ["multiply(3, 4) == 12", "multiply(-2, 5) == -10", "multiply(0, 7) == 0"]),
]  # fmt: skip
"""(signature, what it does, test expressions): each test becomes ``assert <expression>``."""

SOLUTIONS: dict[str, str] = {
    "add": "def add(a, b):\n    return a + b",
    "is_even": "def is_even(n):\n    return n % 2 == 0",
    "square": "def square(x):\n    return x * x",
    "maximum": "def maximum(a, b):\n    return a if a > b else b",
    "absolute": "def absolute(x):\n    return -x if x < 0 else x",
    "reverse_string": "def reverse_string(s):\n    return s[::-1]",
    "count_vowels": "def count_vowels(s):\n    return sum(1 for c in s if c in 'aeiou')",
    "factorial": "def factorial(n):\n    result = 1\n    for k in range(2, n + 1):\n        result *= k\n    return result",
    "fibonacci": "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
    "sum_list": "def sum_list(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total",
    "max_list": "def max_list(xs):\n    best = xs[0]\n    for x in xs[1:]:\n        if x > best:\n            best = x\n    return best",
    "is_palindrome": "def is_palindrome(s):\n    return s == s[::-1]",
    "first_char": "def first_char(s):\n    return s[0]",
    "last_element": "def last_element(xs):\n    return xs[-1]",
    "double_all": "def double_all(xs):\n    return [2 * x for x in xs]",
    "celsius_to_fahrenheit": "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32",
    "is_positive": "def is_positive(n):\n    return n > 0",
    "count_words": "def count_words(s):\n    return len(s.split())",
    "to_upper": "def to_upper(s):\n    return s.upper()",
    "min_of_three": "def min_of_three(a, b, c):\n    smallest = a\n    if b < smallest:\n        smallest = b\n    if c < smallest:\n        smallest = c\n    return smallest",
    "list_length": "def list_length(xs):\n    return len(xs)",
    "average": "def average(xs):\n    return sum(xs) / len(xs)",
    "remove_spaces": "def remove_spaces(s):\n    return s.replace(' ', '')",
    "is_prime": "def is_prime(n):\n    if n < 2:\n        return False\n    for d in range(2, int(n ** 0.5) + 1):\n        if n % d == 0:\n            return False\n    return True",
    "gcd": "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a",
    "power": "def power(base, exp):\n    result = 1\n    for _ in range(exp):\n        result *= base\n    return result",
    "contains": "def contains(xs, x):\n    return x in xs",
    "repeat_string": "def repeat_string(s, n):\n    return s * n",
    "sum_of_digits": "def sum_of_digits(n):\n    total = 0\n    while n > 0:\n        total += n % 10\n        n //= 10\n    return total",
    "count_char": "def count_char(s, c):\n    return s.count(c)",
    "square_all": "def square_all(xs):\n    return [x * x for x in xs]",
    "multiply": "def multiply(a, b):\n    return a * b",
}  # fmt: skip
"""A reference solution per task (function name -> source), each problem's ``solution``:
the audit runs it as the correct reply, checks it passes its tests and mutates it to
measure how strong they are (docs/audit.md). It never enters the prompt."""


def code_problems(held_out: bool = False) -> list[dict[str, Any]]:
    """The training tasks (24), or with ``held_out`` the test ones (every fourth: 8)."""
    return [
        {
            "question": f"Write a Python function `{signature}` that {what}.",
            "tests": [f"assert {test}" for test in tests],
            "solution": SOLUTIONS[signature.split("(")[0]],
        }
        for index, (signature, what, tests) in enumerate(TASKS)
        if (index % 4 == 3) == held_out
    ]


class CodeTaskEnv(CodeEnv):
    """One function-writing task; the reply's code runs against its tests in the sandbox."""

    system_prompt = (
        "You are a Python programmer. Reply with the requested function in one ```python "
        "block and nothing else."
    )
    few_shot: ClassVar[list[Message]] = [
        {"role": "user", "content": "Write a Python function `triple(x)` that returns x times 3."},
        {"role": "assistant", "content": "```python\ndef triple(x):\n    return x * 3\n```"},
    ]
    reward_fn = code_passes(limits=Limits(wall_s=10, cpu_s=5, memory_mb=512))


builder = DatasetBuilder(
    env=CodeTaskEnv,
    problems=code_problems(),
    test_problems=code_problems(held_out=True),
    batch_size=4,
    group_size=4,
    model_name=SMOLLM2,
    renderer_name="chat_template",
)
"""24 training tasks, 8 held out, on SmolLM2's tokenizer (``check`` and ``eval`` take it)."""


def _for_model(model: str, **changes: Any) -> DatasetBuilder:
    renderer = "chat_template" if model == SMOLLM2 else "qwen3"
    return attrs.evolve(builder, model_name=model, renderer_name=renderer, **changes)


async def _held_out(config: Config, client: Any) -> dict[str, float]:
    """Greedy figures of ``client`` on the held-out tasks (one :func:`mint_envkit.evaluate`)."""
    from mint_envkit import evaluate
    from mint_envkit.rollouts import SamplingSettings

    held_out = _for_model(
        config.model_name, problems=code_problems(held_out=True), test_problems=None,
        batch_size=8, group_size=1, shuffle=False,
    )  # fmt: skip
    greedy = SamplingSettings(temperature=1e-3, max_tokens=config.max_tokens)
    result = await evaluate(held_out, client=client, samples=1, sampling=greedy, quiet=True)
    metrics = result.metrics("eval")
    return {key.removeprefix("eval/all/"): value for key, value in metrics.items()}


async def learn(args: argparse.Namespace) -> dict[str, Any]:
    """Evaluate greedily on the held-out tasks, train ``args.steps`` steps, evaluate again."""
    from mint_envkit.rl import run_training
    from mint_envkit.rollouts import local_backend, resolve_connection, sampling_client
    from mint_envkit.rollouts import service_client as service_for

    started = time.monotonic()
    model = args.model
    async with local_backend([model]) as url:
        train = _for_model(
            model, seed=args.seed, test_problems=None, group_size=args.group,
            max_generation_tokens=args.max_tokens,
        )  # fmt: skip
        config = Config(
            dataset_builder=train, log_path=str(args.out / "run"),
            learning_rate=args.lr, lora_rank=16, train_unembed=False,
            temperature=0.7, max_steps=args.steps, save_every=0,
            backend="local", base_url=url, sampling_seed=args.seed,
        )  # fmt: skip
        async with service_for(resolve_connection("local", url)) as service:
            before = await _held_out(config, await sampling_client(service, model))
            print("held-out before:", json.dumps(before, sort_keys=True), flush=True)
            result = await run_training(config)
            path = result.final_checkpoint["sampler_path"]
            after = await _held_out(config, await sampling_client(service, model, path))
            print("held-out after:", json.dumps(after, sort_keys=True), flush=True)
    lines = (args.out / "run" / "metrics.jsonl").read_text().splitlines()
    steps = [
        {key: row.get(f"env/all/{key}") for key in ("correct", "parsed", *_OUTCOMES)}
        for row in map(json.loads, filter(str.strip, lines))
    ]
    for number, step in enumerate(steps, 1):
        print(f"step {number}:", json.dumps(step, sort_keys=True), flush=True)
    seconds = round(time.monotonic() - started, 1)
    summary = {"before": before, "after": after, "steps": steps, "seconds": seconds}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


ESCAPES: list[tuple[str, str]] = [
    ("open a socket", "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)"),
    ("write outside the scratch dir", "open('/usr/escaped.txt', 'w').write('x')"),
    ("write to the scratch dir", "open('/work/ok.txt', 'w').write('x')\nprint(open('/work/ok.txt').read())"),
    ("read the host's secrets", "import os\nprint(sorted(os.environ), os.path.exists('/root'))"),
    ("fork bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"),
    ("count forks", "import os, time\nn = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(3)\n            os._exit(0)\n        n += 1\n    except OSError as e:\n        print(n, 'forks, then', e)\n        break"),
    ("allocate 10 GB", "x = bytearray(10 * 2**30)"),
    ("print 1 GB", "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * 2**20)"),
    ("sleep forever", "import time\ntime.sleep(10**9)"),
    ("busy loop", "while True:\n    pass"),
]  # fmt: skip
"""(what it tries, the code) for ``--sandbox-report``."""


async def sandbox_report() -> None:
    """Run each escape attempt of :data:`ESCAPES` in the default sandbox; print what happened."""
    from mint_envkit.sandbox import default_executor, run_tests

    executor = default_executor()
    limits = Limits(wall_s=5, cpu_s=2, memory_mb=512, processes=16, output_bytes=1 << 20)
    print(f"executor {executor.name}, {limits}")
    for label, code in ESCAPES:
        run = await run_tests(code, ["assert True"], executor=executor, limits=limits)
        said = run.message or (run.stdout + run.stderr).strip().splitlines()[-1:] or [""]
        said = said if isinstance(said, str) else said[0]
        print(f"{label:30} {run.outcome:8} {run.wall_s:5.2f} s  {said[:110]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=SMOLLM2, help="mint-envkit/tiny-qwen3: plumbing only")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/code_tasks"))
    parser.add_argument("--sandbox-report", action="store_true", help="run the escapes only")
    args = parser.parse_args(argv)
    asyncio.run(sandbox_report() if args.sandbox_report else learn(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
