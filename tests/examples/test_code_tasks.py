"""The code tasks example: every task's tests are right (its reference solution passes them,
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


def _name(problem: dict) -> str:
    return problem["question"].split("`")[1].split("(")[0]


def test_the_split_holds_8_tasks_out_of_32():
    train, held_out = example.code_problems(), example.code_problems(held_out=True)
    assert (len(train), len(held_out)) == (24, 8)
    assert not {p["question"] for p in train} & {p["question"] for p in held_out}
    assert {_name(p) for p in train + held_out} == set(example.SOLUTIONS)


async def test_every_task_passes_its_reference_and_fails_a_wrong_function():
    problems = example.code_problems() + example.code_problems(held_out=True)
    limits = Limits(wall_s=10)
    right = await asyncio.gather(
        *(run_tests(p["solution"], p["tests"], limits=limits) for p in problems)
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
    right, bare = f"```python\n{problem['solution']}\n```", "def add(a, b): return a + b"
    argv = ["check", f"{example.__file__}:CodeTaskEnv", "--problem", json.dumps(problem)]
    assert main([*argv, "--reply", right, "--reply", bare]) == 0
    out = capsys.readouterr().out
    assert "```python" in out  # the few-shot example is in the rendered prompt
    assert "reward +1.000  parse ok" in out and "'code/passes/pass': 1.0" in out
    assert "reward +0.000  parse no_match" in out
