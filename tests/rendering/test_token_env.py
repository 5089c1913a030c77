"""EnvFromMessageEnv: a message env at the token level, with its limits and failures."""

from __future__ import annotations

import pytest
import tinker

from mint_envkit import (
    EnvError,
    Feedback,
    MessageEnv,
    MessageStepResult,
    MultiTurnEnv,
    first_number,
    get_renderer,
)
from mint_envkit.rendering import TINY_MODEL_NAME, EnvFromMessageEnv, StepResult
from shared_envs import ArithmeticEnv


class HigherLowerEnv(MultiTurnEnv):
    """Secret 3; the reply grows the conversation by one user message per turn."""

    max_turns = 4

    def __init__(self, **problem):
        super().__init__(**problem)
        self.torn_down = 0

    async def teardown(self):
        self.torn_down += 1

    async def respond(self, message):
        guess = first_number(message["content"])
        if guess and guess.value == "3":
            return Feedback(reward=1.0, done=True)
        return Feedback(reply="Higher. " * 5, reward=0.0)


@pytest.fixture(scope="module")
def renderer():
    return get_renderer("qwen3", TINY_MODEL_NAME)


def reply_tokens(renderer, text: str, *, stop: bool = True) -> list[int]:
    tokens = renderer.tokenizer.encode(text, add_special_tokens=False)
    return [*tokens, *renderer.get_stop_sequences()] if stop else tokens


STOP = {"stop_reason": "stop"}
LENGTH = {"stop_reason": "length"}


def arithmetic(renderer, **kwargs) -> EnvFromMessageEnv:
    return EnvFromMessageEnv(
        renderer, ArithmeticEnv(question="What is 2 + 3?", answer="5"), **kwargs
    )


async def test_initial_observation_renders_the_prompt(renderer):
    env = arithmetic(renderer)
    observation, stop = await env.initial_observation()
    assert isinstance(observation, tinker.ModelInput)
    messages = await env.message_env.initial_observation()
    assert observation.to_ints() == renderer.render_tokens(messages)
    assert stop == renderer.get_stop_sequences()
    assert env.messages == messages
    assert env.initial_tokens == observation.to_ints()


@pytest.mark.parametrize(("text", "reward", "correct"), [("5", 1.0, 1.0), ("7", -0.25, 0.0)])
async def test_a_scored_step(renderer, text, reward, correct):
    env = arithmetic(renderer)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, text), extra=STOP)
    assert isinstance(result, StepResult)
    assert result.episode_done and result.reward == reward
    assert result.metrics == {
        "correct": correct,
        "parsed": 1.0,
        "truncated": 0.0,
        "parse_error": 0.0,
        "context_overflow": 0.0,
    }
    assert result.logs["parse_status"] == "ok"
    assert result.message == {"role": "assistant", "content": text}
    assert result.next_observation.to_ints() == []
    assert result.next_stop_condition == renderer.get_stop_sequences()


async def test_truncated_reply_gets_context_overflow_reward_and_unscored_metrics(renderer):
    env = arithmetic(renderer, context_overflow_reward=-0.3)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "5", stop=False), extra=LENGTH)
    assert result.episode_done
    assert result.reward == -0.3
    assert result.metrics == {
        "correct": 0.0,
        "parsed": 0.0,
        "truncated": 1.0,
        "parse_error": 0.0,
        "context_overflow": 0.0,
    }
    assert result.logs == {"end": "truncated"}


async def test_truncated_reply_is_scored_with_score_truncated(renderer):
    env = arithmetic(renderer, context_overflow_reward=-0.3, score_truncated=True)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "5", stop=False), extra=LENGTH)
    assert result.reward == 1.0
    assert result.metrics["correct"] == 1.0 and result.metrics["truncated"] == 1.0
    assert result.message["truncated"] is True


async def test_truncated_reply_of_an_env_without_unscored_metrics(renderer):
    class Plain(MessageEnv):
        async def initial_observation(self):
            return [{"role": "user", "content": "hi"}]

        async def step(self, message):
            raise AssertionError("a truncated reply must not be scored")

    env = EnvFromMessageEnv(renderer, Plain())
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "hel", stop=False), extra=LENGTH)
    assert result.metrics == {"truncated": 1.0, "parse_error": 0.0, "context_overflow": 0.0}


@pytest.mark.parametrize("extra", [STOP, None, {}])
async def test_missing_stop_token_is_a_parse_error(renderer, extra):
    env = arithmetic(renderer, failed_parse_reward=-0.7)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "5", stop=False), extra=extra)
    assert result.episode_done
    assert result.reward == -0.7
    assert result.metrics == {
        "correct": 0.0,
        "parsed": 0.0,
        "truncated": 0.0,
        "parse_error": 1.0,
        "context_overflow": 0.0,
    }
    assert result.logs == {"end": "no stop token"}


async def test_unclosed_think_through_the_renderer(renderer):
    env = arithmetic(renderer)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "<think>it is 5"), extra=STOP)
    assert result.reward == ArithmeticEnv.reward_unparsed
    assert result.logs["parse_status"] == "unclosed_think"
    assert result.metrics["parsed"] == 0.0 and result.metrics["parse_error"] == 0.0


async def test_thinking_is_split_before_the_env_parses(renderer):
    env = arithmetic(renderer)
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "<think>maybe 4</think>5"), extra=STOP)
    assert result.reward == 1.0
    assert result.message == {"role": "assistant", "content": "5", "thinking": "maybe 4"}


async def test_prompt_over_the_limit_raises_on_the_initial_observation(renderer):
    messages = await ArithmeticEnv(question="What is 2 + 3?", answer="5").initial_observation()
    n = len(renderer.render_tokens(messages))
    fits = arithmetic(renderer, max_trajectory_tokens=n + 8, max_generation_tokens=8)
    await fits.initial_observation()
    too_long = arithmetic(renderer, max_trajectory_tokens=n + 8, max_generation_tokens=9)
    with pytest.raises(EnvError, match="max_trajectory_tokens") as info:
        await too_long.initial_observation()
    assert f"{n} tokens" in str(info.value)
    with pytest.raises(EnvError):
        await arithmetic(renderer, max_trajectory_tokens=n - 1).initial_observation()


async def test_multi_turn_next_observation_extends_the_sampled_tokens(renderer):
    env = EnvFromMessageEnv(renderer, HigherLowerEnv(question="Guess my number."))
    first, _ = await env.initial_observation()
    sampled = reply_tokens(renderer, "<think>low</think>1")
    result = await env.step(sampled, extra=STOP)
    assert not result.episode_done and result.reward == 0.0
    conversation = [
        {"role": "user", "content": "Guess my number."},
        {"role": "assistant", "content": "1", "thinking": "low"},
        {"role": "user", "content": "Higher. " * 5},
    ]
    assert env.messages == conversation
    continuation = renderer.render_continuation([conversation[-1]])
    assert result.next_observation.to_ints() == [*first.to_ints(), *sampled, *continuation]
    # A full re-render drops the earlier turn's thinking: the model never saw that prompt.
    assert result.next_observation.to_ints() != renderer.render_tokens(conversation)
    assert result.next_stop_condition == renderer.get_stop_sequences()
    assert result.metrics == {"truncated": 0.0, "parse_error": 0.0, "context_overflow": 0.0}
    last = await env.step(reply_tokens(renderer, "3"), extra=STOP)
    assert last.episode_done and last.reward == 1.0
    assert last.metrics["turns"] == 2.0


async def test_context_overflow_on_a_later_turn_ends_the_episode(renderer):
    message_env = HigherLowerEnv(question="Guess my number.")
    n = len(
        renderer.render_tokens(
            await HigherLowerEnv(question="Guess my number.").initial_observation()
        )
    )
    env = EnvFromMessageEnv(
        renderer,
        message_env,
        max_trajectory_tokens=n + 10,
        max_generation_tokens=4,
        context_overflow_reward=-0.2,
    )
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "1"), extra=STOP)
    assert result.episode_done
    assert result.reward == -0.2
    assert result.metrics["context_overflow"] == 1.0
    assert result.metrics["truncated"] == 0.0


async def test_env_stop_condition_is_passed_on(renderer):
    class CustomStop(MessageEnv):
        async def initial_observation(self):
            return [{"role": "user", "content": "Count."}]

        async def step(self, message):
            return MessageStepResult(
                reward=0.0,
                episode_done=False,
                next_messages=[
                    {"role": "user", "content": "Count."},
                    message,
                    {"role": "user", "content": "Go on."},
                ],
                next_stop_condition=["\n"],
            )

    env = EnvFromMessageEnv(renderer, CustomStop())
    await env.initial_observation()
    result = await env.step(reply_tokens(renderer, "1 2 3"), extra=STOP)
    assert result.next_stop_condition == ["\n"]


@pytest.mark.parametrize("how", ["truncated", "no_stop", "overflow"])
async def test_teardown_runs_when_the_token_env_ends_the_episode(renderer, how):
    message_env = HigherLowerEnv(question="Guess my number.")
    limit = None
    if how == "overflow":
        probe = HigherLowerEnv(question="Guess my number.")
        limit = len(renderer.render_tokens(await probe.initial_observation())) + 10
    env = EnvFromMessageEnv(renderer, message_env, max_trajectory_tokens=limit)
    await env.initial_observation()
    tokens = reply_tokens(renderer, "1", stop=how != "no_stop" and how != "truncated")
    result = await env.step(tokens, extra=LENGTH if how == "truncated" else STOP)
    assert result.episode_done
    assert message_env.torn_down == 1
