"""The teacher-view hook of MessageEnv: the student's messages by default, overridable."""

from __future__ import annotations

from mint_envkit import MessageEnv, MessageStepResult, SingleTurnEnv


class _Plain(MessageEnv):
    async def initial_observation(self):
        return [{"role": "user", "content": "2 + 3?"}]

    async def step(self, message):
        return MessageStepResult(reward=0.0, episode_done=True)


class _Privileged(SingleTurnEnv):
    def teacher_messages(self, messages):
        return [{"role": "system", "content": f"The answer is {self.answer}."}, *messages]


def test_default_view_is_the_students_messages_as_a_copy():
    messages = [{"role": "user", "content": "2 + 3?"}]
    view = _Plain().teacher_messages(messages)
    assert view == messages
    view[0]["content"] = "changed"
    assert messages[0]["content"] == "2 + 3?"  # the caller's list is untouched


def test_an_env_can_show_the_teacher_the_answer():
    env = _Privileged(question="What is 2 + 3?", answer="5")
    messages = [{"role": "user", "content": "What is 2 + 3?"}]
    assert env.teacher_messages(messages) == [
        {"role": "system", "content": "The answer is 5."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
