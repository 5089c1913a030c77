"""A reward sees its context, and a judge's verdict is a reward part of any env."""

from __future__ import annotations

import json

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    ScriptedPolicy,
    SingleTurnEnv,
    ToolEnv,
    first_number,
    tool,
)
from mint_envkit.judge import Judge, judged
from mint_envkit.parsers import boxed
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rewards import RewardContext, component, correct, valid_format, weighted


class FakeComplete:
    """The judge model: one fixed reply; records every prompt it got."""

    def __init__(self, reply: str = "Asks nicely. <verdict>YES</verdict>") -> None:
        self.reply = reply
        self.prompts: list[list[dict]] = []

    async def __call__(self, messages: list[dict]) -> str:
        self.prompts.append(messages)
        return self.reply


def reply(content: str, thinking: str | None = None) -> dict:
    message = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    return message


def in_the_unit(context: RewardContext) -> float:
    """Reads the problem's extra field, the prompt and the conversation."""
    assert context.prompt[0] == {"role": "system", "content": "Answer with a unit."}
    assert context.conversation[-1]["content"] == context.completion
    assert context.conversation[: len(context.prompt)] == context.prompt
    return float(context.completion.endswith(context.problem["unit"]))


class UnitEnv(SingleTurnEnv):
    system_prompt = "Answer with a unit."
    optional_fields = {"unit": "cm"}  # noqa: RUF012
    reward_fn = weighted(correct=(correct(first_number), 1.0), unit=(component(in_the_unit), 0.5))


async def test_a_reward_reads_the_problem_and_the_prompt_through_its_context():
    env = UnitEnv(question="How long is it?", answer="5", unit="mm")
    await env.initial_observation()
    result = await env.step(reply("5 mm", thinking="it looks like 5 mm"))
    assert result.reward == 1.5
    assert result.metrics["reward/unit"] == 1.0 and result.metrics["correct"] == 1.0
    wrong_unit = UnitEnv(question="How long is it?", answer="5", unit="mm")
    assert (await wrong_unit.step(reply("5 cm"))).metrics["reward/unit"] == 0.0


async def test_the_context_holds_the_thinking_the_answer_and_the_question():
    seen: list[RewardContext] = []

    def record(ctx: RewardContext) -> float:  # found by its annotation, not its name
        seen.append(ctx)
        return 1.0

    class RecordEnv(SingleTurnEnv):
        few_shot = [{"role": "user", "content": "1+1?"}, {"role": "assistant", "content": "2"}]  # noqa: RUF012
        reward_fn = component(record)

    env = RecordEnv(question="2 + 3?", answer="5")
    prompt = await env.initial_observation()
    await env.step(reply("5", thinking="2 + 3 = 5"))
    (context,) = seen
    assert context.prompt == tuple(prompt) and len(context.conversation) == len(prompt) + 1
    assert (context.completion, context.thinking, context.answer) == ("5", "2 + 3 = 5", "5")
    assert context.question == "2 + 3?" and context.problem == {"question": "2 + 3?", "answer": "5"}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_tool_envs_reward_sees_the_whole_conversation():
    seen: list[RewardContext] = []

    def used_a_tool(context: RewardContext) -> float:
        seen.append(context)
        return float(any(m["role"] == "tool" for m in context.conversation))

    class AddEnv(ToolEnv):
        tools = [add]  # noqa: RUF012
        reward_fn = weighted(
            correct=(correct(first_number), 1.0), tool=(component(used_a_tool), 0.5)
        )

    env = AddEnv(question="2 + 3?", answer="5")
    await env.initial_observation()
    arguments = json.dumps({"a": 2, "b": 3})
    call = {"type": "function", "id": "c", "function": {"name": "add", "arguments": arguments}}
    await env.step({"role": "assistant", "content": "", "tool_calls": [call]})
    final = await env.step(reply("5"))
    assert final.reward == 1.5 and final.metrics["correct"] == 1.0
    roles = [m["role"] for m in seen[0].conversation]
    assert (
        roles == ["user", "assistant", "tool", "assistant"] and seen[0].prompt[0]["role"] == "user"
    )


def polite_math(complete: FakeComplete, **judge_options) -> type[SingleTurnEnv]:
    judge = Judge(complete, rubric="Is the reply polite?", **judge_options)

    class PoliteMathEnv(SingleTurnEnv):
        system_prompt = "Answer politely, the answer in \\boxed{}."
        reward_fn = weighted(correct=(correct(boxed), 1.0), polite=(judged(judge), 0.5))

    return PoliteMathEnv


async def test_a_judged_part_scores_a_single_turn_env_and_the_judge_sees_question_and_reply():
    complete = FakeComplete()
    env = polite_math(complete)(question="What is 2 + 3?", answer="5")
    await env.initial_observation()
    result = await env.step(reply(r"It is \boxed{5}, thank you.", thinking="secret plan"))
    assert result.reward == 1.5
    assert result.metrics["reward/polite"] == 1.0 and result.metrics["correct"] == 1.0
    assert result.metrics["judge/polite/failed"] == 0.0
    assert result.metrics["judge/polite/unparsed"] == 0.0
    assert result.logs["judge/polite/text"] == complete.reply
    assert result.logs["judge/polite/status"] == "ok"
    (prompt,) = complete.prompts
    text = prompt[-1]["content"]
    assert "Is the reply polite?" in text and "What is 2 + 3?" in text
    assert r"It is \boxed{5}, thank you." in text and "Reference answer:\n5" in text
    assert "secret plan" not in text  # the judge grades the reply, not the thinking


async def test_a_judged_part_is_not_an_answer_check():
    env = polite_math(FakeComplete("<verdict>NO</verdict>"))(question="2 + 3?", answer="5")
    result = await env.step(reply(r"\boxed{7}"))
    assert result.reward == 0.0 and result.metrics["correct"] == 0.0

    class OnlyJudged(SingleTurnEnv):
        reward_fn = judged(Judge(FakeComplete(), rubric="Is it polite?"))

    alone = await OnlyJudged(question="2 + 3?", answer="5").step(reply("7, please"))
    assert alone.reward == 1.0 and alone.metrics["reward/judge"] == 1.0
    assert "correct" not in alone.metrics and "parsed" not in alone.metrics


def test_a_judged_parts_bounds_feed_the_ordering_rule():
    assert polite_math(FakeComplete()).wrong_answer_reward() == 0.0
    assert polite_math(FakeComplete(), on_failure=-1.0).wrong_answer_reward() == -0.5
    assert polite_math(FakeComplete(), scale=None).wrong_answer_reward() is None
    assert judged(Judge(FakeComplete(), rubric="r", scale=(1, 10))).bounds == (0.0, 10.0)


async def test_a_verdict_outside_the_judges_scale_is_unparsed():
    judge = Judge(FakeComplete("<verdict>7</verdict>"), rubric="Polite?", on_failure=-1.0)
    result = await judge("q", "reply")
    assert (result.score, result.status) == (-1.0, "unparsed")
    ten = Judge(FakeComplete("<verdict>7</verdict>"), rubric="Polite?", scale=(1, 10))
    assert (await ten("q", "reply")).score == 7.0
    with pytest.raises(ConfigError, match=r"scale must be \(lowest, highest\)"):
        Judge(FakeComplete(), rubric="Polite?", scale=(1, 0))


def test_the_judged_env_runs_through_the_token_level_env():
    complete = FakeComplete()
    builder = DatasetBuilder(
        env=polite_math(complete),
        problems=[{"question": "What is 2 + 3?", "answer": "5"}],
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    (group,) = ScriptedPolicy([r"\boxed{5}", r"\boxed{4}"]).run_sync(builder).groups
    assert group.rewards == [1.5, 0.5]
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0]


async def test_a_sync_call_of_a_reward_with_an_async_part_says_what_to_do():
    reward = weighted(
        correct=(correct(boxed), 1.0), polite=(judged(Judge(FakeComplete(), rubric="r")), 0.5)
    )
    assert reward.is_async and not correct(boxed).is_async
    with pytest.raises(ConfigError, match=r"async part \('polite'\).*score_async"):
        reward(r"\boxed{5}", "5")
    breakdown = await reward.score_async(r"\boxed{5}", "5")
    assert breakdown.total == 1.5 and breakdown.components["polite"] == 1.0
    env = polite_math(FakeComplete())(question="2 + 3?", answer="5")
    with pytest.raises(ConfigError, match=r"PoliteMathEnv.reward_fn has an async part.*step\(\)"):
        env.score_answer(reply(r"\boxed{5}"))
    assert (await env.score_answer_async(reply(r"\boxed{5}"))).reward == 1.5


async def test_an_async_component_is_awaited_and_a_forgotten_await_is_named():
    async def long_enough(completion: str, answer: str) -> float:
        return float(len(completion) > 3)

    class LongEnv(SingleTurnEnv):
        reward_fn = component(long_enough)

    assert (await LongEnv(question="q", answer="a").step(reply("long reply"))).reward == 1.0

    def not_awaited(completion, answer):
        return long_enough(completion, answer)

    with pytest.raises(ConfigError, match="returned an awaitable; define the function with"):
        component(not_awaited)("x", "y")


async def test_completion_answer_components_still_work_beside_context_ones():
    def short(completion: str, answer: str) -> float:
        return float(len(completion) < 10)

    def mentions_the_question(context) -> float:  # found by its name
        return float(context.question in context.completion)

    reward = weighted(
        short=(component(short), 1.0),
        fmt=(valid_format(boxed), 1.0),
        echo=(component(mentions_the_question), 1.0),
    )
    assert reward(r"\boxed{5}", "5").components == {
        "weighted": 3.0,
        "short": 1.0,
        "fmt": 1.0,
        "echo": 1.0,  # no context given: the question is "", found in every reply
    }

    class ShortEnv(SingleTurnEnv):
        reward_fn = reward

    result = await ShortEnv(question="2 + 3?", answer="5").step(reply(r"\boxed{5}"))
    assert result.metrics["reward/short"] == 1.0 and result.metrics["reward/echo"] == 0.0
    with pytest.raises(ConfigError, match="pass a RewardContext"):
        reward("x", "5", {"question": "q"})
