"""GroupBuilder: group_size independent envs of one problem, checked and picklable."""

from __future__ import annotations

import itertools
import pickle

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    EnvError,
    Feedback,
    GroupBuilder,
    MultiTurnEnv,
    get_renderer,
)
from mint_envkit.rendering import TINY_MODEL_NAME, EnvFromMessageEnv
from shared_envs import ArithmeticEnv


class HintsEnv(MultiTurnEnv):
    """Gives one hint per turn, popping them from its problem's list of hints."""

    required_fields = ("question", "hints")
    max_turns = 3

    async def respond(self, message):
        hints = self.problem["hints"]
        return Feedback(reply=hints.pop(0) if hints else "No more hints.")


_counter = itertools.count()


def drifting_env(**problem):
    """A factory that (wrongly) draws a new problem per call."""
    n = next(_counter)
    return ArithmeticEnv(question=f"What is {n} + 1?", answer=str(n + 1))


PROBLEM = {"question": "What is 2 + 3?", "answer": "5"}


def group(**kwargs) -> GroupBuilder:
    fields = {
        "problem": PROBLEM,
        "env": ArithmeticEnv,
        "group_size": 3,
        "model_name": TINY_MODEL_NAME,
    }
    fields.update(kwargs)
    return GroupBuilder(**fields)


async def test_make_envs_gives_group_size_independent_envs():
    envs = await group(group_size=4).make_envs()
    assert len(envs) == 4
    assert all(isinstance(env, EnvFromMessageEnv) for env in envs)
    assert len({id(env.message_env) for env in envs}) == 4
    assert len({id(env.message_env.problem) for env in envs}) == 4
    first = await envs[0].initial_observation()
    for env in envs[1:]:
        assert (await env.initial_observation())[0].to_ints() == first[0].to_ints()


async def test_envs_share_no_conversation_state():
    envs = await group(
        env=HintsEnv, problem={"question": "Guess.", "hints": ["a", "b"]}
    ).make_envs()
    envs[0].messages.append({"role": "assistant", "content": "mutated"})
    envs[0].initial_messages[0]["content"] = "MUTATED"
    envs[0].message_env.conversation.append({"role": "assistant", "content": "x"})
    assert envs[1].messages == [{"role": "user", "content": "Guess."}]
    assert envs[1].initial_messages == [{"role": "user", "content": "Guess."}]
    assert envs[1].message_env.conversation == [{"role": "user", "content": "Guess."}]


async def test_envs_share_no_mutable_problem_values():
    builder = group(env=HintsEnv, problem={"question": "Guess.", "hints": ["a", "b"]})
    envs = await builder.make_envs()
    await envs[0].step(
        envs[0].renderer.tokenizer.encode("1") + envs[0].renderer.get_stop_sequences()
    )
    assert envs[0].message_env.problem["hints"] == ["b"]
    assert envs[1].message_env.problem["hints"] == ["a", "b"]
    assert builder.problem["hints"] == ["a", "b"]


async def test_a_factory_drawing_a_new_problem_per_call_is_refused():
    with pytest.raises(EnvError, match="group of problem 7 holds different problems") as info:
        await group(env=drifting_env, index=7).make_envs()
    assert "env 1" in str(info.value)


async def test_a_picklable_factory_function_works():
    envs = await group(env=make_arithmetic, group_size=2).make_envs()
    assert [type(e.message_env) for e in envs] == [ArithmeticEnv, ArithmeticEnv]


def make_arithmetic(**problem):
    return ArithmeticEnv(**problem)


async def test_group_and_dataset_builders_pickle():
    builder = group(env=make_arithmetic, index=2, max_trajectory_tokens=512)
    loaded = pickle.loads(pickle.dumps(builder))
    assert loaded == builder
    assert len(await loaded.make_envs()) == 3
    dataset_builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[PROBLEM, {"question": "What is 1 + 1?", "answer": "2"}],
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        seed=4,
    )
    loaded_dataset_builder = pickle.loads(pickle.dumps(dataset_builder))
    assert loaded_dataset_builder == dataset_builder
    train, _ = await loaded_dataset_builder()
    (original, _) = await dataset_builder()
    assert train == original
    pickle.loads(pickle.dumps(train))


def test_group_builder_is_frozen():
    builder = group()
    with pytest.raises(AttributeError):
        builder.group_size = 5  # type: ignore[misc]
    problem = {"question": "q", "answer": "a"}
    builder = group(problem=problem)
    problem["question"] = "changed"
    assert builder.problem["question"] == "q"


async def test_compute_group_rewards_defaults_to_zeros():
    builder = group()
    envs = await builder.make_envs()
    assert await builder.compute_group_rewards(["t1", "t2", "t3"], envs) == [
        (0.0, {}),
        (0.0, {}),
        (0.0, {}),
    ]


def test_logging_tags_name_the_env():
    assert group().logging_tags() == ["ArithmeticEnv"]
    assert group(env=make_arithmetic).logging_tags() == ["make_arithmetic"]


@pytest.mark.parametrize("size", [0, -1, 1.5, "2", True, None])
def test_bad_group_size_is_a_config_error(size):
    with pytest.raises(ConfigError, match="group_size must be an integer >= 1"):
        group(group_size=size)


@pytest.mark.parametrize("field", ["max_trajectory_tokens", "max_generation_tokens"])
def test_bad_token_limits_are_config_errors(field):
    with pytest.raises(ConfigError, match=field):
        group(**{field: 0})


def test_unknown_renderer_name_is_a_config_error_listing_known_ones():
    with pytest.raises(ConfigError, match="renderer_name 'chatml' is unknown") as info:
        group(renderer_name="chatml")
    assert "qwen3" in str(info.value) and "qwen3_disable_thinking" in str(info.value)


def test_env_must_be_callable():
    with pytest.raises(ConfigError, match="env must be"):
        group(env="ArithmeticEnv")


def test_renderer_is_shared_per_model_and_name():
    assert group().renderer() is get_renderer("qwen3", TINY_MODEL_NAME)
    assert group(renderer_name="qwen3_disable_thinking").renderer() is not group().renderer()
    assert group(renderer_name="qwen3_disable_thinking").renderer().enable_thinking is False


async def test_limits_are_passed_to_each_env():
    envs = await group(
        max_trajectory_tokens=300,
        max_generation_tokens=20,
        failed_parse_reward=-2.0,
        context_overflow_reward=-3.0,
        score_truncated=True,
    ).make_envs()
    assert len(envs) == 3  # group_size
    for env in envs:
        assert (env.max_trajectory_tokens, env.max_generation_tokens) == (300, 20)
        assert (env.failed_parse_reward, env.context_overflow_reward) == (-2.0, -3.0)
        assert env.score_truncated is True
