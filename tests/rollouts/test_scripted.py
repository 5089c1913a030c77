"""ScriptedPolicy: drive envs end to end with fixed or computed replies."""

from __future__ import annotations

import math

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    EnvError,
    Feedback,
    MultiTurnEnv,
    ScriptedPolicy,
    ScriptedReport,
    SingleTurnEnv,
    first_number,
)
from mint_envkit.rendering import TINY_MODEL_NAME


class ArithmeticEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.25


class EchoTurnsEnv(MultiTurnEnv):
    """Two turns; the episode reward is 1 when both replies were "b"."""

    max_turns = 2

    async def respond(self, message):
        if self.turns == 2:
            replies = [m["content"] for m in self.conversation if m["role"] == "assistant"]
            return Feedback(
                reward=float(replies == ["b", "b"]), done=True, logs={"replies": replies}
            )
        return Feedback(reply="Again.")


PROBLEMS = [
    {"question": "What is 2 + 3?", "answer": "5"},
    {"question": "What is 4 + 4?", "answer": "8"},
]


def builder(**kwargs) -> DatasetBuilder:
    fields = {
        "env": ArithmeticEnv,
        "problems": PROBLEMS,
        "batch_size": 1,
        "group_size": 3,
        "model_name": TINY_MODEL_NAME,
        "shuffle": False,
    }
    fields.update(kwargs)
    return DatasetBuilder(**fields)


def solver(messages):
    question = messages[-1]["content"]
    a, b = (int(x) for x in question.removeprefix("What is ").removesuffix("?").split(" + "))
    return f"The answer is {a + b}."


async def test_list_replies_go_to_envs_by_position():
    report = await ScriptedPolicy(["5", "7", "five"]).run(builder())
    assert isinstance(report, ScriptedReport)
    first, second = report.groups
    assert first.replies == ["5", "7", "five"]
    assert first.rewards == [1.0, -0.25, -0.25]
    assert [m["correct"] for m in first.metrics] == [1.0, 0.0, 0.0]
    assert [m["parsed"] for m in first.metrics] == [1.0, 1.0, 0.0]
    assert [log["parse_status"] for log in first.logs] == ["ok", "ok", "no_match"]
    assert first.prompt[-1] == {"role": "user", "content": "What is 2 + 3?"}
    assert second.rewards == [-0.25, -0.25, -0.25]
    assert report.errors == []


async def test_list_replies_cycle_over_a_larger_group():
    report = await ScriptedPolicy(["5", "6"]).run(builder(group_size=5, problems=PROBLEMS[:1]))
    assert report.groups[0].replies == ["5", "6", "5", "6", "5"]


async def test_function_of_the_conversation():
    report = await ScriptedPolicy(solver).run(builder())
    assert [g.rewards for g in report.groups] == [[1.0] * 3, [1.0] * 3]
    assert report.mean_reward == 1.0
    assert report.mean_metrics["correct"] == 1.0


async def test_async_function():
    async def reply(messages):
        return solver(messages)

    report = await ScriptedPolicy(reply).run(builder(problems=PROBLEMS[:1]))
    assert report.groups[0].rewards == [1.0, 1.0, 1.0]


async def test_function_gets_a_copy_of_the_conversation():
    def meddle(messages):
        messages[-1]["content"] = "MUTATED"
        messages.clear()
        return "5"

    report = await ScriptedPolicy(meddle).run(builder(problems=PROBLEMS[:1]))
    assert report.groups[0].prompt[-1]["content"] == "What is 2 + 3?"
    assert report.groups[0].rewards == [1.0, 1.0, 1.0]


async def test_a_failed_group_raises_with_its_error_unless_kept():
    with pytest.raises(EnvError, match=r"1 of 1 group.s. failed; group 0: ConfigError: the "):
        await ScriptedPolicy(lambda messages: 5).run(builder(problems=PROBLEMS[:1]))


def test_run_sync_raises_the_first_error_too():
    with pytest.raises(EnvError, match="must return a str"):
        ScriptedPolicy(lambda messages: 5).run_sync(builder(problems=PROBLEMS[:1]))


async def test_a_reward_that_raises_is_loud_not_an_empty_report():
    from mint_envkit import SingleTurnEnv

    def broken(completion: str, answer: str) -> float:
        raise KeyError("oops")

    class Broken(SingleTurnEnv):
        reward_fn = broken

    with pytest.raises(EnvError, match="KeyError: 'oops'"):
        await ScriptedPolicy(["5"]).run(builder(env=Broken, problems=PROBLEMS[:1]))


async def test_function_returning_a_non_string_fails_its_group():
    policy = ScriptedPolicy(lambda messages: 5)
    report = await policy.run(builder(problems=PROBLEMS[:1]), keep_errors=True)
    assert report.groups[0].error is not None
    assert "must return a str" in report.groups[0].error
    assert report.errors == [f"group 0: {report.groups[0].error}"]
    assert math.isnan(report.mean_reward)


async def test_end_with_stop_false_looks_truncated():
    report = await ScriptedPolicy(["5"], end_with_stop=False).run(builder(problems=PROBLEMS[:1]))
    group = report.groups[0]
    # context_overflow_reward unset: its default -0.1 would pay more than a wrong answer
    # (reward_incorrect -0.25), so it follows the wrong answer
    assert group.rewards == [-0.25, -0.25, -0.25]
    assert all(m["truncated"] == 1.0 and m["correct"] == 0.0 for m in group.metrics)


async def test_end_with_stop_false_with_score_truncated():
    source = builder(problems=PROBLEMS[:1], score_truncated=True)
    report = await ScriptedPolicy(["5"], end_with_stop=False).run(source)
    assert report.groups[0].rewards == [1.0, 1.0, 1.0]
    assert report.groups[0].metrics[0]["truncated"] == 1.0


async def test_run_on_a_dataset_a_list_of_groups_and_the_test_split():
    source = builder(test_problems=[{"question": "What is 1 + 1?", "answer": "2"}])
    train, _ = await source()
    assert len((await ScriptedPolicy(solver).run(train, max_batches=1)).groups) == 1
    assert len((await ScriptedPolicy(solver).run(train.get_batch(1))).groups) == 1
    assert len((await ScriptedPolicy(solver).run(source, max_batches=5)).groups) == 2
    test = await ScriptedPolicy(solver).run(source, split="test")
    assert len(test.groups) == 1 and test.groups[0].rewards == [1.0]
    assert (await ScriptedPolicy(solver).run_group(train.get_batch(0)[0])).rewards == [1.0] * 3


async def test_run_errors():
    with pytest.raises(ConfigError, match="no test split"):
        await ScriptedPolicy(["5"]).run(builder(), split="test")
    with pytest.raises(ConfigError, match="split must be"):
        await ScriptedPolicy(["5"]).run(builder(), split="valid")


@pytest.mark.parametrize("replies", [[], "5", ["5", 7]])
def test_bad_replies(replies):
    with pytest.raises(ConfigError, match="ScriptedPolicy"):
        ScriptedPolicy(replies)  # type: ignore[arg-type]


def test_run_sync():
    report = ScriptedPolicy(["5", "7", "five"]).run_sync(builder(problems=PROBLEMS[:1]))
    assert report.groups[0].rewards == [1.0, -0.25, -0.25]


async def test_mean_metrics_average_over_envs():
    report = await ScriptedPolicy(["5", "7", "five"]).run(builder())
    means = report.mean_metrics
    assert means["correct"] == pytest.approx(1 / 6)
    assert means["parsed"] == pytest.approx(4 / 6)
    assert report.mean_reward == pytest.approx((1.0 - 0.25 - 0.25 - 0.25 - 0.25 - 0.25) / 6)


async def test_multi_turn_function_policy_sees_the_conversation():
    seen = []

    def policy(messages):
        seen.append([m["content"] for m in messages])
        return "b"

    source = builder(env=EchoTurnsEnv, problems=[{"question": "Start."}], group_size=2)
    report = await ScriptedPolicy(policy).run(source)
    assert report.groups[0].rewards == [1.0, 1.0]
    assert report.groups[0].metrics[0]["turns"] == 2.0
    assert ["Start.", "b", "Again."] in seen


async def test_list_replies_keep_their_env_on_later_turns():
    source = builder(env=EchoTurnsEnv, problems=[{"question": "Start."}], group_size=2)
    report = await ScriptedPolicy(["a", "b"]).run(source)
    assert [log["replies"] for log in report.groups[0].logs] == [["a", "a"], ["b", "b"]]


async def test_per_turn_scripts():
    source = builder(env=EchoTurnsEnv, problems=[{"question": "Start."}], group_size=3)
    report = await ScriptedPolicy([["a", "b"], ["b", "b"], "b"]).run(source)
    logs = [log["replies"] for log in report.groups[0].logs]
    assert logs == [["a", "b"], ["b", "b"], ["b", "b"]]
    assert report.groups[0].rewards == [0.0, 1.0, 1.0]


async def test_a_script_shorter_than_its_episode_fails_its_group_with_the_numbers():
    source = builder(env=EchoTurnsEnv, problems=[{"question": "Start."}], group_size=1)
    report = await ScriptedPolicy([["b"]]).run(source, keep_errors=True)
    assert "have 1 turn(s), but its episode asked for turn 2" in report.groups[0].error


@pytest.mark.parametrize("replies", [[[]], [["a", 1]]])
def test_bad_per_turn_scripts(replies):
    with pytest.raises(ConfigError, match="one per turn"):
        ScriptedPolicy(replies)
