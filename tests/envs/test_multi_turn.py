"""MultiTurnEnv: the documented lifecycle, max_turns, Feedback, the conversation."""

from __future__ import annotations

import pytest

from mint_envkit import ConfigError, EnvError, Feedback, MultiTurnEnv, ProblemError


class RecordingEnv(MultiTurnEnv):
    """Replies "win" end the episode, "boom" raises, anything else asks again."""

    system_prompt = "Play along."
    max_turns = 3
    max_turns_reward = -0.5

    def __init__(self, **problem):
        super().__init__(**problem)
        self.events: list[str] = []

    async def setup(self):
        self.events.append("setup")

    async def teardown(self):
        self.events.append("teardown")

    def messages(self):
        self.events.append("messages")
        return super().messages()

    async def respond(self, message):
        content = message["content"]
        self.events.append(f"respond:{content}")
        if content == "boom":
            raise RuntimeError("respond failed")
        if content == "win":
            return Feedback(reward=1.0, done=True, metrics={"solved": 1.0}, logs={"how": "won"})
        return Feedback(reply="Again.", reward=0.1, metrics={"solved": 0.0})


def say(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


async def started(**problem) -> RecordingEnv:
    env = RecordingEnv(question="Start.", **problem)
    await env.initial_observation()
    return env


async def test_setup_runs_before_the_first_observation():
    env = RecordingEnv(question="Start.")
    assert env.events == []
    messages = await env.initial_observation()
    assert env.events == ["setup", "messages"]
    assert messages == [
        {"role": "system", "content": "Play along."},
        {"role": "user", "content": "Start."},
    ]


async def test_teardown_runs_once_when_respond_says_done():
    env = await started()
    first = await env.step(say("no"))
    assert not first.episode_done and first.reward == pytest.approx(0.1)
    assert "teardown" not in env.events
    last = await env.step(say("win"))
    assert last.episode_done and last.reward == 1.0
    assert env.events == ["setup", "messages", "respond:no", "respond:win", "teardown"]
    assert last.metrics == {"solved": 1.0, "turns": 2.0, "max_turns_reached": 0.0}
    assert last.logs == {"how": "won"}
    assert last.next_messages == []


async def test_max_turns_ends_with_max_turns_reward_replacing_the_turn_reward():
    env = await started()
    rewards = []
    for _ in range(RecordingEnv.max_turns):
        result = await env.step(say("no"))
        rewards.append(result.reward)
    assert result.episode_done
    assert rewards == [pytest.approx(0.1), pytest.approx(0.1), -0.5]
    assert result.metrics["max_turns_reached"] == 1.0
    assert result.metrics["turns"] == 3.0
    assert env.events.count("teardown") == 1
    assert env.events[-1] == "teardown"


async def test_done_on_the_last_allowed_turn_is_not_max_turns():
    env = await started()
    await env.step(say("no"))
    await env.step(say("no"))
    result = await env.step(say("win"))
    assert result.reward == 1.0
    assert result.metrics["max_turns_reached"] == 0.0


async def test_teardown_runs_when_respond_raises_then_the_error_is_reraised():
    env = await started()
    await env.step(say("no"))
    with pytest.raises(RuntimeError, match="respond failed"):
        await env.step(say("boom"))
    assert env.events.count("teardown") == 1
    assert env.events[-1] == "teardown"
    with pytest.raises(EnvError, match="after the episode ended"):
        await env.step(say("win"))
    assert env.events.count("teardown") == 1


async def test_stepping_after_done_raises_and_teardown_stays_once():
    env = await started()
    await env.step(say("win"))
    with pytest.raises(EnvError, match="after the episode ended"):
        await env.step(say("win"))
    assert env.events.count("teardown") == 1
    assert env.events.count("respond:win") == 1


async def test_step_before_initial_observation_raises():
    env = RecordingEnv(question="Start.")
    with pytest.raises(EnvError, match="before initial_observation"):
        await env.step(say("no"))
    assert env.events == []


async def test_initial_observation_twice_raises():
    env = await started()
    with pytest.raises(EnvError, match="called twice"):
        await env.initial_observation()
    assert env.events.count("setup") == 1


async def test_next_messages_is_the_full_conversation():
    env = await started()
    first = await env.step(say("no"))
    assert first.next_messages == [
        {"role": "system", "content": "Play along."},
        {"role": "user", "content": "Start."},
        {"role": "assistant", "content": "no"},
        {"role": "user", "content": "Again."},
    ]
    second = await env.step({"role": "assistant", "content": "still no", "thinking": "hmm"})
    assert second.next_messages == [
        *first.next_messages,
        {"role": "assistant", "content": "still no", "thinking": "hmm"},
        {"role": "user", "content": "Again."},
    ]


async def test_the_returned_conversation_is_a_copy():
    env = await started()
    result = await env.step(say("no"))
    result.next_messages[0]["content"] = "MUTATED"
    result.next_messages.append({"role": "user", "content": "injected"})
    assert env.conversation[0]["content"] == "Play along."
    assert len(env.conversation) == 4


class ReplyKindsEnv(MultiTurnEnv):
    max_turns = 5

    async def respond(self, message):
        kind = message["content"]
        if kind == "str":
            return Feedback(reply="plain text")
        if kind == "dict":
            return Feedback(reply={"role": "tool", "content": '{"result": 4}'})
        return Feedback(done=True)


async def test_feedback_reply_as_str_or_dict():
    env = ReplyKindsEnv(question="q")
    await env.initial_observation()
    result = await env.step(say("str"))
    assert result.next_messages[-1] == {"role": "user", "content": "plain text"}
    result = await env.step(say("dict"))
    assert result.next_messages[-1] == {"role": "tool", "content": '{"result": 4}'}


def test_feedback_defaults_and_bad_reply():
    feedback = Feedback()
    assert (feedback.reply, feedback.reward, feedback.done) == (None, 0.0, False)
    assert Feedback(reply="Lower.").reply == {"role": "user", "content": "Lower."}
    with pytest.raises(ConfigError, match=r"Feedback\.reply"):
        Feedback(reply=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("max_turns", [0, -1, 1.5])
def test_max_turns_must_be_a_positive_integer(max_turns):
    class Bad(RecordingEnv):
        pass

    Bad.max_turns = max_turns
    with pytest.raises(ConfigError, match="max_turns"):
        Bad(question="q")


def test_problem_fields_are_checked_like_single_turn():
    class SecretEnv(RecordingEnv):
        required_fields = ("secret",)

    with pytest.raises(ProblemError, match="'secret'"):
        SecretEnv(question="q")
    with pytest.raises(ProblemError, match="'colour'"):
        RecordingEnv(question="q", colour="red")


async def test_envs_do_not_share_conversations():
    one, two = await started(), await started()
    await one.step(say("no"))
    assert len(one.conversation) == 4
    assert len(two.conversation) == 2
