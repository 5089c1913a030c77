"""Issue 48 item 1: ``self.answer`` and the documented shortcuts on every env class, a
declared success metric, and the ordering rule of a game (an honest losing episode)."""

from __future__ import annotations

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    EnvError,
    Feedback,
    MessageEnv,
    MessageStepResult,
    MultiTurnEnv,
    ProblemError,
    ScriptedPolicy,
    SingleTurnEnv,
    ToolEnv,
)
from mint_envkit.envs.base import reference_answer, success_name
from shared_envs import ColourGameEnv, colour_problems

MODEL = "mint-envkit/tiny-qwen3"


def _builder(env=ColourGameEnv, problems=None, **kwargs):
    problems = colour_problems() if problems is None else problems
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=len(problems),
        group_size=1,
        model_name=MODEL,
        shuffle=False,
        **kwargs,
    )


def test_a_game_written_with_self_answer_can_be_won():
    """The trap: on a MultiTurnEnv, self.answer was None although the problem had an
    answer, so `guess == self.answer` never won."""
    env = ColourGameEnv(question="Which colour?", answer="orange")
    assert env.answer == "orange" and env.question == "Which colour?"
    report = ScriptedPolicy(lambda messages: "orange").run_sync(
        _builder(problems=[{"question": "Which colour?", "answer": "orange"}])
    )
    assert report.groups[0].rewards == [1.0]
    assert report.groups[0].metrics[0]["solved"] == 1.0


def test_the_shortcuts_work_on_every_env_class_or_name_the_fix():
    assert SingleTurnEnv(question="2 + 3?", answer="5").answer == "5"

    class Counter(MultiTurnEnv):
        required_fields = ("secret",)

        async def respond(self, message):
            return Feedback(reward=0.0, done=True)

    with pytest.raises(ProblemError, match=r"no 'answer' field \(its fields: \['secret'\]\)"):
        _ = Counter(secret=3).answer
    with pytest.raises(ProblemError, match="required_fields"):
        _ = Counter(secret=3).question
    assert reference_answer(Counter(secret=3)) is None  # how the kit reads it

    class Plain(MessageEnv):
        async def initial_observation(self):
            return [{"role": "user", "content": "hi"}]

        async def step(self, message):
            return MessageStepResult(reward=0.0, episode_done=True)

    with pytest.raises(EnvError, match=r"keeps no problem.*set self.answer = \.\.\."):
        _ = Plain().answer
    plain = Plain()
    plain.answer, plain.question = "5", "2 + 3?"  # a cookbook env keeps its own
    assert (plain.answer, plain.question) == ("5", "2 + 3?")
    assert reference_answer(Plain()) is None

    class Tools(ToolEnv):
        tools = ()

    assert Tools(question="q", answer="a").answer == "a"


def test_a_success_metric_is_declared_checked_and_defaults_to_correct():
    assert success_name(ColourGameEnv) == "solved" and success_name(SingleTurnEnv) == "correct"
    with pytest.raises(ConfigError, match="success_metric must be the name of a metric"):

        class Bad(MultiTurnEnv):
            success_metric = 1.0

            async def respond(self, message):
                return Feedback(done=True)


async def test_an_episode_cut_off_before_it_logged_its_success_metric_counts_as_lost():
    report = await ScriptedPolicy(["x" * 80], end_with_stop=False).run(
        _builder(problems=colour_problems(1), max_generation_tokens=4)
    )
    assert report.groups[0].metrics[0]["solved"] == 0.0
    assert report.metric_coverage["solved"] == 1.0


async def test_a_cut_off_game_may_not_earn_more_than_an_honest_losing_one():
    """The trap: a reply cut at the limit ended the game at -0.1, above losing (-0.5)."""
    assert ColourGameEnv.wrong_answer_reward() == -0.5
    train, _ = await _builder()()
    assert train.get_batch(0)[0].context_overflow_reward == -0.5  # follows it, unset
    with pytest.raises(ConfigError, match=r"context_overflow_reward = -0\.1 is above .*losing"):
        _builder(context_overflow_reward=-0.1)
