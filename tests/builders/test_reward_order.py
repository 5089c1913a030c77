"""The ordering rule: no reply without an answer earns more than a wrong answer."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    GroupBuilder,
    ScriptedPolicy,
    SingleTurnEnv,
    ToolEnv,
    boxed,
    get_renderer,
    xml_tag,
)
from mint_envkit.rendering import TINY_MODEL_NAME, EnvFromMessageEnv
from mint_envkit.rewards import component, correct, gated, valid_format
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv


def dataset(env, **kwargs) -> DatasetBuilder:
    return DatasetBuilder(
        env=env,
        problems=[dict(ARITHMETIC_PROBLEM)],
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        **kwargs,
    )


def group(env, **kwargs) -> GroupBuilder:
    return GroupBuilder(
        problem=dict(ARITHMETIC_PROBLEM),
        env=env,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        **kwargs,
    )


@pytest.mark.parametrize("make", [dataset, group])
def test_a_cut_off_reply_above_a_wrong_answer_is_refused_when_the_builder_is_made(make):
    with pytest.raises(ConfigError) as info:
        make(ArithmeticEnv, context_overflow_reward=-0.1)
    message = str(info.value)
    assert "context_overflow_reward = -0.1" in message
    assert "ArithmeticEnv.reward_incorrect = -0.25" in message
    assert "context_overflow_reward=-0.25" in message  # the fix


@pytest.mark.parametrize("make", [dataset, group])
def test_a_failed_parse_above_a_wrong_answer_is_refused(make):
    with pytest.raises(ConfigError, match=r"failed_parse_reward = 0\.0 is above"):
        make(ArithmeticEnv, failed_parse_reward=0.0)


def test_equal_to_a_wrong_answer_is_allowed():
    builder = dataset(ArithmeticEnv, context_overflow_reward=-0.25, failed_parse_reward=-0.25)
    assert (builder.context_overflow_reward, builder.failed_parse_reward) == (-0.25, -0.25)


def test_unset_non_answer_rewards_follow_a_lower_wrong_answer():
    builder = dataset(ArithmeticEnv)
    assert builder.context_overflow_reward == -0.25  # the default -0.1 would pay to run out
    assert builder.failed_parse_reward == -1.0  # already lower
    assert builder.describe()["context_overflow_reward"] == -0.25
    (scripted,) = ScriptedPolicy(["5"], end_with_stop=False).run_sync(builder).groups
    assert scripted.rewards == [-0.25, -0.25]
    train, _ = asyncio.run(builder())
    assert [g.context_overflow_reward for g in train.groups()] == [-0.25]


def test_an_env_with_default_rewards_keeps_the_builder_defaults():
    class Plain(SingleTurnEnv):
        pass

    builder = dataset(Plain)
    assert (builder.context_overflow_reward, builder.failed_parse_reward) == (-0.1, -1.0)


def test_a_reward_fn_env_is_held_to_the_lowest_score_of_its_reward_fn():
    class Strict(SingleTurnEnv):
        reward_fn = gated(correct(boxed), gate=valid_format(xml_tag("answer")), otherwise=-1.0)

    assert Strict.wrong_answer_reward() == -1.0
    assert dataset(Strict).context_overflow_reward == -1.0
    with pytest.raises(ConfigError, match=r"the lowest score of Strict\.reward_fn = -1\.0"):
        dataset(Strict, context_overflow_reward=-0.1)


def test_a_reward_fn_of_unknown_range_is_not_checked():
    class Free(SingleTurnEnv):
        reward_fn = component(lambda completion, answer: -5.0, name="harsh")

    assert Free.wrong_answer_reward() is None
    builder = dataset(Free, context_overflow_reward=0.5)
    assert builder.context_overflow_reward == 0.5
    assert dataset(Free).context_overflow_reward == -0.1


def make_arithmetic_env(**problem):
    return ArithmeticEnv(**problem)


def test_an_env_factory_is_checked_when_its_envs_are_made():
    unset = group(make_arithmetic_env)
    assert unset.context_overflow_reward is None  # decided per env, when it is made
    envs = asyncio.run(unset.make_envs())
    assert {env.context_overflow_reward for env in envs} == {-0.25}
    greedy = group(make_arithmetic_env, context_overflow_reward=0.0)
    with pytest.raises(ConfigError, match=r"context_overflow_reward = 0\.0 is above"):
        asyncio.run(greedy.make_envs())


def test_a_non_answer_reward_must_be_a_number():
    with pytest.raises(ConfigError, match="context_overflow_reward must be a number"):
        dataset(ArithmeticEnv, context_overflow_reward="-1")


def test_the_token_level_env_checks_the_same_rule():
    renderer = get_renderer("qwen3", TINY_MODEL_NAME)
    with pytest.raises(ConfigError, match=r"context_overflow_reward = 0\.0 is above"):
        EnvFromMessageEnv(
            renderer, ArithmeticEnv(**ARITHMETIC_PROBLEM), context_overflow_reward=0.0
        )
    env = EnvFromMessageEnv(renderer, ArithmeticEnv(**ARITHMETIC_PROBLEM))
    assert (env.context_overflow_reward, env.failed_parse_reward) == (-0.25, -1.0)


def test_a_tool_env_that_runs_out_of_turns_earns_no_more_than_a_wrong_answer():
    class Tools(ToolEnv):
        reward_incorrect = -0.5

    assert Tools.scoring.max_turns_reward == -0.5  # unset: follows the lower wrong answer
    assert ToolEnv.scoring.max_turns_reward == 0.0
    with pytest.raises(ConfigError, match=r"Greedy\.max_turns_reward = 0\.0 is above"):

        class Greedy(ToolEnv):
            reward_incorrect = -0.5
            max_turns_reward = 0.0
