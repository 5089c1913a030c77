"""UnsafeLocalExecutor: no isolation, but limits, a scrubbed environment and a timeout."""

from __future__ import annotations

import pytest

from mint_envkit import ConfigError, run_tests
from mint_envkit.sandbox import Limits, UnsafeLocalExecutor

LIMITS = Limits(wall_s=3, cpu_s=2, memory_mb=512, output_bytes=1 << 14)


async def test_it_runs_code_against_tests():
    run = await run_tests(
        "def add(a, b):\n    return a + b",
        ["assert add(1, 2) == 3"],
        executor=UnsafeLocalExecutor(),
    )
    assert run.outcome == "pass"


async def test_it_still_times_out_caps_output_and_scrubs_the_environment(monkeypatch):
    monkeypatch.setenv("MINT_UNSAFE_TEST_SECRET", "swordfish")
    executor = UnsafeLocalExecutor(max_concurrency=1)
    sleep = await run_tests(
        "import time\ntime.sleep(60)", ["assert True"], executor=executor, limits=LIMITS
    )
    assert sleep.outcome == "timeout"
    loud = await run_tests("print('x' * 10**6)", ["assert True"], executor=executor, limits=LIMITS)
    assert loud.outcome == "error" and "output over" in loud.message
    env = await run_tests(
        "import os", ["assert os.environ.get('MINT_UNSAFE_TEST_SECRET') is None"], executor=executor
    )
    assert env.outcome == "pass"


def test_its_concurrency_must_be_positive():
    with pytest.raises(ConfigError, match="max_concurrency"):
        UnsafeLocalExecutor(max_concurrency=0)
