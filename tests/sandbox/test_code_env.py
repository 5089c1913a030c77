"""CodeEnv: a problem's tests are its answer; replies are scored by running them."""

from __future__ import annotations

import pytest

from mint_envkit import CodeEnv, DatasetBuilder, ProblemError, ScriptedPolicy

PROBLEM = {
    "question": "Write a Python function `add(a, b)` that returns a + b.",
    "tests": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"],
}
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a * b\n```"


async def test_a_scripted_group_is_scored_pass_fail_error_and_unparsed():
    builder = DatasetBuilder(
        env=CodeEnv,
        problems=[PROBLEM],
        batch_size=1,
        group_size=4,
        model_name="mint-envkit/tiny-qwen3",
    )
    broken = "```python\ndef add(a, b)\n```"
    report = await ScriptedPolicy([RIGHT, WRONG, broken, "add = lambda a, b: a + b"]).run(builder)
    (group,) = report.groups
    assert report.errors == []
    assert group.rewards == [1.0, 0.0, 0.0, 0.0]
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0, 0.0, 0.0]
    assert [m["parsed"] for m in group.metrics] == [1.0, 1.0, 1.0, 0.0]
    assert [log.get("code/passes/outcome") for log in group.logs] == [
        "pass",
        "fail",
        "error",
        None,
    ]
    assert group.logs[3]["parse_status"] == "no_match"
    assert [t["status"] for t in group.logs[1]["code/passes/tests"]] == ["fail", "pass"]


async def test_the_prompt_asks_for_a_python_block():
    env = CodeEnv(**PROBLEM)
    messages = await env.initial_observation()
    assert "```python" in messages[0]["content"] and messages[-1]["content"] == PROBLEM["question"]
    assert env.answer == PROBLEM["tests"]


def test_a_problem_without_tests_is_refused():
    with pytest.raises(ProblemError, match="tests"):
        CodeEnv(question="Write add(a, b).")


def test_a_problem_whose_tests_do_not_split_is_refused_when_the_env_is_made():
    with pytest.raises(ProblemError, match="cannot be split"):
        CodeEnv(question="Write add(a, b).", tests=["x = add(1, 2)\nassert x == 3"])


async def test_a_problem_may_carry_a_reference_solution_that_never_reaches_the_prompt():
    solution = "def add(a, b):\n    return a + b"
    env = CodeEnv(**PROBLEM, solution=solution)
    messages = await env.initial_observation()
    assert not any("return a + b" in str(m["content"]) for m in messages)
    assert env.reference_reply() == f"```python\n{solution}\n```"
    assert (await env.step({"role": "assistant", "content": env.reference_reply()})).reward == 1.0
    assert CodeEnv(**PROBLEM).reference_reply() is None
    with pytest.raises(ProblemError, match="'solution' is the reference solution's Python source"):
        CodeEnv(**PROBLEM, solution=["def add(a, b): ..."])
