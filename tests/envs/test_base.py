"""MessageStepResult, the MessageEnv interface, and problem-field binding."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit import MessageEnv, MessageStepResult, ProblemError
from mint_envkit.envs.problem import bind_problem


class EchoEnv(MessageEnv):
    async def initial_observation(self):
        return [{"role": "user", "content": "Say hi."}]

    async def step(self, message):
        return MessageStepResult(reward=float("hi" in message["content"]), episode_done=True)


def test_step_result_defaults_are_fresh_per_instance():
    a = MessageStepResult(reward=1, episode_done=1)
    b = MessageStepResult(reward=0.0, episode_done=False)
    a.metrics["x"] = 1.0
    a.logs["y"] = 2
    a.next_messages.append({"role": "user", "content": "hi"})
    assert b.metrics == {} and b.logs == {} and b.next_messages == []
    assert a.reward == 1.0 and isinstance(a.reward, float)
    assert a.episode_done is True
    assert a.next_stop_condition is None


def test_step_result_copies_next_messages():
    conversation = [{"role": "user", "content": "hi"}]
    result = MessageStepResult(reward=0.0, episode_done=False, next_messages=conversation)
    conversation[0]["content"] = "changed"
    conversation.append({"role": "assistant", "content": "x"})
    assert result.next_messages == [{"role": "user", "content": "hi"}]


def test_step_result_is_frozen():
    result = MessageStepResult(reward=1.0, episode_done=True)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.reward = 0.0  # type: ignore[misc]


def test_message_env_is_abstract():
    with pytest.raises(TypeError):
        MessageEnv()  # type: ignore[abstract]


async def test_a_cookbook_shaped_message_env_works():
    env = EchoEnv()
    assert await env.initial_observation() == [{"role": "user", "content": "Say hi."}]
    result = await env.step({"role": "assistant", "content": "hi there"})
    assert result.reward == 1.0 and result.episode_done


def test_bind_problem_fills_defaults_and_keeps_given_values():
    fields = bind_problem(
        "Env", ("question",), {"unit": "cm", "level": 1}, {"question": "q", "level": 3}
    )
    assert fields == {"question": "q", "unit": "cm", "level": 3}


def test_bind_problem_names_missing_field():
    with pytest.raises(ProblemError, match=r"Env needs field\(s\) 'answer'"):
        bind_problem("Env", ("question", "answer"), {}, {"question": "q"})


def test_bind_problem_names_unknown_field():
    with pytest.raises(ProblemError, match=r"unknown field\(s\) 'colour'"):
        bind_problem("Env", ("question",), {}, {"question": "q", "colour": "red"})


def test_bind_problem_does_not_share_the_defaults_dict():
    optional = {"unit": "cm"}
    fields = bind_problem("Env", (), optional, {})
    fields["unit"] = "m"
    assert optional == {"unit": "cm"}
