"""What the teacher reads: prompts from the env's hook, and the reverse-KL datums (hand-checked)."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit import DatasetBuilder, SingleTurnEnv, first_number
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rl.teacher import (
    RecordingGroup,
    TeacherSample,
    reverse_kl_datum,
    teacher_prompt,
    teacher_samples,
)
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition


class _Plain(SingleTurnEnv):
    parser = first_number


class _Privileged(SingleTurnEnv):
    parser = first_number

    def teacher_messages(self, messages):
        return [{"role": "system", "content": f"The answer is {self.answer}."}, *messages]


class _Broken(SingleTurnEnv):
    parser = first_number

    def teacher_messages(self, messages):
        return "not a list"


def _groups(env: type) -> list[RecordingGroup]:
    builder = DatasetBuilder(
        env=env,
        problems=[{"question": "What is 2 + 3?", "answer": "5"}],
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    train, _ = asyncio.run(builder())
    return [RecordingGroup(g) for g in train.get_batch(0)]


def _envs(group: RecordingGroup) -> list:
    asyncio.run(group.make_envs())
    return group.envs


def test_the_datum_aligns_targets_and_weights_with_the_students_positions():
    datum = reverse_kl_datum(TeacherSample([1, 2], [9, 8, 1, 2], [3, 4]))
    assert datum.student_input.to_ints() == [1, 2, 3]
    assert datum.reference_input.to_ints() == [9, 8, 1, 2, 3]
    assert datum.target_tokens.data == [2, 3, 4]
    assert datum.weights.data == [0.0, 1.0, 1.0]  # the prompt's position does not train
    assert datum.target_tokens.shape == datum.weights.shape == [3]


def test_the_datum_of_a_longer_prompt_weights_only_the_reply():
    datum = reverse_kl_datum(TeacherSample([5, 6, 7, 8], [5, 6, 7, 8], [1]))
    assert datum.student_input.to_ints() == datum.reference_input.to_ints() == [5, 6, 7, 8]
    assert datum.target_tokens.data == [6, 7, 8, 1]
    assert datum.weights.data == [0.0, 0.0, 0.0, 1.0]


def test_an_empty_reply_is_refused():
    with pytest.raises(MintEnvkitError, match="reply"):
        reverse_kl_datum(TeacherSample([1, 2], [1, 2], []))


def test_the_default_teacher_reads_the_students_exact_tokens():
    env = _envs(_groups(_Plain)[0])[0]
    student = [101, 102, 103]  # not what the messages render: the student's tokens are reused
    history = [dict(m) for m in env.initial_messages]
    assert teacher_prompt(env, history, student) == student


def test_a_privileged_teacher_reads_its_own_rendered_view():
    env = _envs(_groups(_Privileged)[0])[0]
    history = [dict(m) for m in env.initial_messages]
    student = env.renderer.render_tokens(history)
    prompt = teacher_prompt(env, history, student)
    expected = env.renderer.render_tokens(
        [{"role": "system", "content": "The answer is 5."}, *history]
    )
    assert prompt == expected
    assert prompt != student
    assert "The answer is 5." in env.renderer.tokenizer.decode(prompt)


def test_a_hook_that_returns_no_list_is_named():
    env = _envs(_groups(_Broken)[0])[0]
    with pytest.raises(ConfigError, match=r"_Broken\.teacher_messages"):
        teacher_prompt(env, [dict(m) for m in env.initial_messages], [1])


def test_teacher_samples_pair_each_reply_with_its_episodes_env():
    group = _groups(_Privileged)[0]
    envs = _envs(group)
    opening = [dict(m) for m in envs[0].initial_messages]
    ob = envs[0].renderer.render_tokens(opening)
    trajectories = [
        Trajectory(
            transitions=[
                Transition(
                    ob=ob, ac=SampledTokens(tokens, None, "stop"), reward=0.0, episode_done=True
                )
            ],
            messages=[*opening, {"role": "assistant", "content": "x"}],
        )
        for tokens in ([7, 8], [])  # the second reply is empty: nothing to score
    ]
    rollouts = [
        GroupRollout(0, opening, trajectories),
        GroupRollout(1, opening, [], error="ValueError: boom"),  # failed groups are skipped
    ]
    samples = teacher_samples(rollouts, [envs, []])
    assert len(samples) == 1
    (sample,) = samples
    assert sample.student_prompt == ob
    assert sample.reply == [7, 8]
    assert sample.teacher_prompt == envs[0].renderer.render_tokens(
        [{"role": "system", "content": "The answer is 5."}, *opening]
    )


def test_teacher_samples_need_the_recorded_envs():
    opening = [{"role": "user", "content": "q"}]
    trajectory = Trajectory(
        transitions=[
            Transition(ob=[1], ac=SampledTokens([2], None, "stop"), reward=0.0, episode_done=True)
        ],
    )
    with pytest.raises(MintEnvkitError, match="RecordingGroup"):
        teacher_samples([GroupRollout(0, opening, [trajectory])], [[]])


def test_a_recording_group_delegates_to_its_group():
    group = _groups(_Plain)[0]
    assert group.group_size == 2
    assert group.envs == []
    assert len(_envs(group)) == 2


class _Seen:
    """A message env stand-in that records each view it is asked for and adds a hint."""

    def __init__(self) -> None:
        self.asked: list[list[dict]] = []

    def teacher_messages(self, messages):
        self.asked.append(messages)
        return [{"role": "system", "content": "hint"}, *messages]


class _CountingRenderer:
    def render_tokens(self, messages, tools=None):
        return [900 + len(messages)]  # one token that says how many messages were rendered


def test_each_turn_of_a_multi_turn_episode_is_viewed_with_the_conversation_before_it():
    from types import SimpleNamespace

    seen = _Seen()
    env = SimpleNamespace(message_env=seen, renderer=_CountingRenderer(), tools=None)
    messages = [
        {"role": "user", "content": "guess"},
        {"role": "assistant", "content": "5"},
        {"role": "user", "content": "higher"},
        {"role": "assistant", "content": "7"},
    ]
    turns = [
        Transition(ob=[1], ac=SampledTokens([2], None, "stop"), reward=0.0, episode_done=False),
        Transition(
            ob=[1, 2, 3], ac=SampledTokens([4], None, "stop"), reward=1.0, episode_done=True
        ),
    ]
    rollout = GroupRollout(0, messages[:1], [Trajectory(transitions=turns, messages=messages)])
    samples = teacher_samples([rollout], [[env]])
    assert seen.asked == [messages[:1], messages[:3]]
    assert [s.teacher_prompt for s in samples] == [[902], [904]]  # hint + 1, hint + 3 messages
    assert [s.student_prompt for s in samples] == [[1], [1, 2, 3]]
    assert [s.reply for s in samples] == [[2], [4]]
