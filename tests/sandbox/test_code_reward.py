"""code_passes, python_code and run_tests: what a reply's code earns and why."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit import ConfigError, SandboxError, code_passes, run_tests
from mint_envkit.sandbox import (
    BubblewrapExecutor,
    Executor,
    Limits,
    ProcessResult,
    default_executor,
    python_code,
)

LIMITS = Limits(wall_s=4, cpu_s=2, memory_mb=256, processes=8)
SANDBOX = BubblewrapExecutor(max_concurrency=2)
REWARD = code_passes(executor=SANDBOX, limits=LIMITS)
TESTS = ["assert add(1, 2) == 3", "assert add(2, 0) == 2"]


def fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\nDone."


class Recording:
    """An executor that runs nothing and records the calls (for replies without code)."""

    name = "recording"

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        self.calls += 1
        return ProcessResult("finished", 0, "", "", 0.0)


def test_python_code_reads_the_last_python_block():
    text = "```python\nx = 1\n```\nthen\n```py\ny = 2\n```\n```text\nnot code\n```"
    assert python_code(text).value == "y = 2"
    assert python_code("```\nz = 3\n```").value == "z = 3"
    assert python_code("```python\nx = 1").status == "truncated"
    assert python_code("def f(): pass").status == "no_match"
    assert python_code("```python\n\n```").status == "empty"
    assert python_code("").status == "empty"


async def test_code_that_passes_every_test_earns_one():
    breakdown = await REWARD.score_async(fenced("def add(a, b):\n    return a + b"), TESTS)
    assert breakdown.total == 1.0 and breakdown.correct is True
    assert breakdown.metrics["code/passes/pass"] == 1.0
    assert breakdown.metrics["code/passes/tests_passed"] == 1.0
    assert breakdown.metrics["parse/passes/ok"] == 1.0
    assert [t["status"] for t in breakdown.logs["code/passes/tests"]] == ["pass", "pass"]


async def test_code_that_fails_a_test_earns_zero_with_per_test_results():
    breakdown = await REWARD.score_async(fenced("def add(a, b):\n    return a - b"), TESTS)
    assert breakdown.total == 0.0 and breakdown.correct is False
    assert breakdown.metrics["code/passes/fail"] == 1.0
    assert breakdown.metrics["code/passes/tests_passed"] == 0.5
    tests = breakdown.logs["code/passes/tests"]
    assert [t["status"] for t in tests] == ["fail", "pass"]
    assert tests[0]["error"].startswith("AssertionError")


async def test_partial_credit_is_the_share_of_tests_passed():
    reward = code_passes(executor=SANDBOX, limits=LIMITS, partial=True)
    breakdown = await reward.score_async(fenced("def add(a, b):\n    return a - b"), TESTS)
    assert breakdown.total == 0.5 and breakdown.correct is False


async def test_a_test_that_raises_is_an_error_and_the_run_a_fail():
    code = "def add(a, b):\n    return a + b"
    run = await run_tests(
        code, ["assert add(1, 2) == 3", "assert add(None, 1) == 1"], executor=SANDBOX
    )
    assert run.outcome == "fail"
    assert [t.status for t in run.tests] == ["pass", "error"]
    assert run.tests[1].error.startswith("TypeError")


async def test_a_syntax_error_is_an_error_and_no_test_runs():
    breakdown = await REWARD.score_async(fenced("def add(a, b)\n    return a + b"), TESTS)
    assert breakdown.total == 0.0
    assert breakdown.metrics["code/passes/error"] == 1.0
    assert breakdown.logs["code/passes/message"].startswith("SyntaxError")
    assert [t["status"] for t in breakdown.logs["code/passes/tests"]] == ["not_run"] * 2


async def test_a_reply_without_code_is_a_parse_failure_and_runs_nothing():
    executor = Recording()
    reward = code_passes(executor=executor)
    breakdown = await reward.score_async("def add(a, b): return a + b", TESTS)
    assert breakdown.total == 0.0 and breakdown.correct is False
    assert breakdown.metrics["parse/passes/no_match"] == 1.0
    assert "code/passes/pass" not in breakdown.metrics
    truncated = await reward.score_async("```python\ndef add(a, b):", TESTS)
    assert truncated.metrics["parse/passes/truncated"] == 1.0
    assert executor.calls == 0


async def test_printed_report_lines_cannot_forge_a_pass():
    forged = (
        "\\nmint-"
        + "0" * 32
        + ' {\\"event\\": \\"test\\", \\"index\\": 0, \\"status\\": \\"pass\\"}'
    )
    code = f"print('{forged}')\nprint('{forged}'.replace('test', 'done'), flush=True)\n"
    code += "import os\nos._exit(0)"
    run = await run_tests(code, ["assert add(1, 2) == 3"], executor=SANDBOX, limits=LIMITS)
    assert run.outcome == "error" and run.tests[0].status == "not_run"
    assert "mint-000" in run.stdout  # what it printed is kept as its output


async def test_sys_exit_in_the_code_is_an_error():
    run = await run_tests("import sys\nsys.exit(0)", ["assert True"], executor=SANDBOX)
    assert run.outcome == "error" and run.message == "SystemExit: 0"


async def test_a_timeout_keeps_the_results_of_the_tests_before_it():
    code = "import time\ndef wait():\n    time.sleep(60)"
    run = await run_tests(
        code, ["assert True", "assert wait() is None"], executor=SANDBOX, limits=Limits(wall_s=2)
    )
    assert run.outcome == "timeout"
    assert [t.status for t in run.tests] == ["pass", "not_run"]


async def test_runs_go_through_the_pool_and_the_loop_is_not_blocked():
    executor = BubblewrapExecutor(max_concurrency=2, uid_base=61000)
    seen: set[int] = set()
    samples = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal samples
        while not done.is_set():
            samples += 1
            for uid in range(61000, 61010):
                if _has_process(uid):
                    seen.add(uid)
            await asyncio.sleep(0.02)

    watcher = asyncio.ensure_future(watch())
    code = "import time\ntime.sleep(0.5)"
    runs = await asyncio.gather(
        *(run_tests(code, ["assert True"], executor=executor) for _ in range(6))
    )
    done.set()
    await watcher
    assert [run.outcome for run in runs] == ["pass"] * 6
    assert seen and seen <= {61000, 61001}  # never more than two sandboxes at once
    assert samples >= 10  # the watcher kept running while the sandboxes ran


def _has_process(uid: int) -> bool:
    from pathlib import Path

    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if f"\nUid:\t{uid}\t" in status:
                return True
    return False


async def test_bad_tests_and_bad_executors_raise_config_errors():
    with pytest.raises(ConfigError, match="non-empty list"):
        await REWARD.score_async(fenced("x = 1"), None)
    with pytest.raises(ConfigError, match="non-empty list"):
        await run_tests("x = 1", [], executor=SANDBOX)
    with pytest.raises(ConfigError, match="needs an Executor"):
        code_passes(executor=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"Limits.wall_s must be a number > 0"):
        Limits(wall_s=0)


def test_the_default_executor_is_the_bubblewrap_sandbox():
    executor = default_executor()
    assert isinstance(executor, Executor) and executor.name == "bubblewrap"
    assert default_executor() is executor  # one shared pool


async def test_a_reward_with_a_broken_sandbox_raises_rather_than_scoring(tmp_path):
    reward = code_passes(executor=BubblewrapExecutor(bwrap=str(tmp_path / "none")))
    with pytest.raises(SandboxError, match=r"SandboxFusionExecutor\(url\)"):
        await reward.score_async(fenced("x = 1"), ["assert x == 1"])


async def test_a_shared_runs_inside_another_shares_the_enclosing_runs():
    from mint_envkit.sandbox.reward import shared_runs

    class Counting:
        name = "counting"
        calls = 0

        async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
            Counting.calls += 1
            return await SANDBOX.run(source, stdin, limits)

    executor = Counting()
    code = "def add(a, b):\n    return a + b"
    with shared_runs():
        first = await run_tests(code, TESTS, executor=executor)
        with shared_runs():  # e.g. an audit inside a caller's shared block
            inner = await run_tests(code, TESTS, executor=executor)
            await run_tests(code + "\n", TESTS, executor=executor)
        after = await run_tests(code + "\n", TESTS, executor=executor)
    assert inner is first and executor.calls == 2  # the inner block's new run outlives it
    await run_tests(code, TESTS, executor=executor)
    assert executor.calls == 3  # outside every block: nothing is shared
    assert after is not first
