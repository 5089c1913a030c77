"""The issue's "done when": the arithmetic example through ScriptedPolicy."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import arithmetic_env as example
import rl_hyperparameters as main_job

from mint_envkit import DatasetBuilder, ScriptedPolicy, same_number


def builder(problems, group_size=3) -> DatasetBuilder:
    return DatasetBuilder(
        env=example.ArithmeticEnv,
        problems=problems,
        batch_size=1,
        group_size=group_size,
        model_name="mint-envkit/tiny-qwen3",
    )


async def test_five_seven_and_five_in_words():
    problems = [{"question": "What is 2 + 3?", "answer": "5"}]
    report = await ScriptedPolicy(["5", "7", "five"]).run(builder(problems))
    (group,) = report.groups
    assert report.errors == []
    assert group.replies == ["5", "7", "five"]
    assert group.rewards == [1.0, -0.25, -0.25]
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0, 0.0]
    assert [m["parsed"] for m in group.metrics] == [1.0, 1.0, 0.0]
    assert [log["parse_status"] for log in group.logs] == ["ok", "ok", "no_match"]
    assert [log["parsed"] for log in group.logs] == ["5", "7", None]


async def test_generated_problems_are_seeded_and_solvable():
    problems = example.arithmetic_problems(12, seed=3)
    assert problems == example.arithmetic_problems(12, seed=3)
    assert problems != example.arithmetic_problems(12, seed=4)

    def solve(messages):
        question = messages[-1]["content"]
        expression = question.removeprefix("What is ").removesuffix("?")
        a, op, b = expression.split()
        return str(int(a) + int(b) if op == "+" else int(a) * int(b))

    for problem in problems:
        assert same_number(solve([{"content": problem["question"]}]), problem["answer"])
    report = await ScriptedPolicy(solve).run(builder(problems, group_size=2))
    assert report.mean_reward == 1.0
    assert report.mean_metrics == {
        "correct": 1.0,
        "parsed": 1.0,
        "truncated": 0.0,
        "parse_error": 0.0,
        "context_overflow": 0.0,
    }


def test_the_main_jobs_cut_off_replies_earn_no_more_than_a_wrong_answer():
    builder = main_job.dataset_builder("mint-envkit/tiny-qwen3")
    # the seed's own env (1.0 / -0.25 on the first number), not this example's
    assert (builder.env.reward_correct, builder.env.reward_incorrect) == (1.0, -0.25)
    report = ScriptedPolicy(["5"], end_with_stop=False).run_sync(builder, max_batches=1)
    rewards = [reward for group in report.groups for reward in group.rewards]
    assert rewards and all(r <= builder.env.reward_incorrect for r in rewards)
    assert all(m["truncated"] == 1.0 for g in report.groups for m in g.metrics)
