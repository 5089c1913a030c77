"""The optional hooks of an env are declared on MessageEnv with defaults and called directly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest

from mint_envkit import (
    ConfigError,
    GroupBuilder,
    MessageEnv,
    MessageStepResult,
    MultiTurnEnv,
    SingleTurnEnv,
    ToolEnv,
    get_renderer,
)
from mint_envkit.envs.base import reference_answer, success_name
from mint_envkit.errors import EnvError
from mint_envkit.rendering import TINY_MODEL_NAME, EnvFromMessageEnv

SRC = Path(__file__).resolve().parents[2] / "src" / "mint_envkit"

HOOKS = (
    "abort",
    "unscored_metrics",
    "tool_specs",
    "check",
    "answer",
    "wrong_answer_reward",
    "metric_defaults",
    "audit_lenient",
    "audit_equivalent",
    "audit_shortcut",
    "success_metric",
)


class PlainEnv(MessageEnv):
    """Only the two required methods."""

    async def initial_observation(self):
        return [{"role": "user", "content": "Say hi."}]

    async def step(self, message):
        return MessageStepResult(reward=1.0, episode_done=True)


@pytest.fixture(scope="module")
def renderer():
    return get_renderer("qwen3", TINY_MODEL_NAME)


def tokens(renderer, text: str) -> list[int]:
    return renderer.tokenizer.encode(text, add_special_tokens=False)


async def test_the_base_class_declares_every_hook_with_its_default():
    for name in HOOKS:
        assert name in vars(MessageEnv), name
    env = PlainEnv()
    assert await env.abort() is None
    assert env.unscored_metrics() == {}
    assert env.tool_specs() is None
    assert env.check("5", "5") is None
    assert reference_answer(env) is None  # the kit's read; env.answer names the fix
    with pytest.raises(EnvError, match="keeps no problem"):
        _ = env.answer
    assert PlainEnv.success_metric is None and success_name(env) == "correct"
    assert PlainEnv.wrong_answer_reward() is None
    assert PlainEnv.audit_lenient is None and env.audit_equivalent("0.33", "1/3") is False
    assert PlainEnv.audit_shortcut is None


async def test_the_kit_envs_fill_the_hooks_in():
    single = SingleTurnEnv(question="2 + 3?", answer="5")
    assert single.unscored_metrics() == {"correct": 0.0, "parsed": 0.0}
    assert single.check("5.0", "5") is True and single.answer == "5"
    assert SingleTurnEnv.wrong_answer_reward() == 0.0 and single.tool_specs() is None

    class Counting(MultiTurnEnv):
        async def respond(self, message):
            raise AssertionError("not stepped")

        async def teardown(self):
            self.closed = True

    turns = Counting(question="Count.")
    await turns.initial_observation()
    await turns.abort()
    assert turns.closed and turns.check("1", "1") is None
    assert ToolEnv.tool_specs(ToolEnv(question="q", answer="a")) == []


async def test_a_subclasss_overrides_are_called_by_the_token_level_env(renderer):
    calls: list[str] = []

    class HookedEnv(PlainEnv):
        async def abort(self):
            calls.append("abort")
            await super().abort()

        def unscored_metrics(self):
            return {**super().unscored_metrics(), "solved": 0.0}

        def tool_specs(self):
            spec = {"name": "noop", "description": "Do nothing.", "parameters": {}}
            return [{"type": "function", "function": spec}]

    env = EnvFromMessageEnv(renderer, HookedEnv())
    assert env.tools[0]["function"]["name"] == "noop"
    await env.initial_observation()
    result = await env.step(tokens(renderer, "hel"), extra={"stop_reason": "length"})
    assert calls == ["abort"]
    assert result.metrics == {
        "solved": 0.0,
        "truncated": 1.0,
        "parse_error": 0.0,
        "context_overflow": 0.0,
    }


def test_a_wrong_answer_reward_hook_feeds_the_ordering_rule():
    class Harsh(PlainEnv):
        @classmethod
        def wrong_answer_reward(cls):
            known = super().wrong_answer_reward()  # the base's default: None, unknown
            return -2.0 if known is None else known

    group = GroupBuilder(problem={}, env=Harsh, group_size=1, model_name=TINY_MODEL_NAME)
    assert group.context_overflow_reward == -2.0 and group.failed_parse_reward == -2.0
    with pytest.raises(ConfigError, match=r"above Harsh.wrong_answer_reward\(\) = -2.0"):
        GroupBuilder(
            problem={},
            env=Harsh,
            group_size=1,
            model_name=TINY_MODEL_NAME,
            context_overflow_reward=-1.0,
        )


class DuckEnv:
    """Has the shape of a MessageEnv but is not one."""

    async def initial_observation(self):
        return [{"role": "user", "content": "hi"}]

    async def step(self, message):
        return MessageStepResult(reward=0.0, episode_done=True)


async def test_an_env_that_is_not_a_message_env_is_refused_with_the_fix(renderer):
    with pytest.raises(
        ConfigError,
        match=r"message_env=...\): DuckEnv is not a mint_envkit MessageEnv; subclass MessageEnv",
    ):
        EnvFromMessageEnv(renderer, DuckEnv())

    def make(**problem):
        return DuckEnv()

    group = GroupBuilder(problem={}, env=make, group_size=2, model_name=TINY_MODEL_NAME)
    with pytest.raises(
        ConfigError, match=r"GroupBuilder\(env=.*make\): DuckEnv is not a mint_envkit MessageEnv"
    ):
        await group.make_envs()

    class Fixed(DuckEnv, MessageEnv):  # the fix the message names
        pass

    fixed = GroupBuilder(problem={}, env=Fixed, group_size=2, model_name=TINY_MODEL_NAME)
    assert len(await fixed.make_envs()) == 2


def test_no_hook_is_discovered_by_attribute_lookup():
    names = "|".join(HOOKS)
    lookup = re.compile(rf"""(getattr|hasattr)\([^)]*(\bmessage_env\b|["'](?:{names})["'])""")
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if lookup.search(line)
    ]
    assert found == []


class WinOnlyEnv(MessageEnv):
    """Logs ``won`` only when the reply is "win"."""

    async def initial_observation(self):
        return [{"role": "user", "content": "Win?"}]

    async def step(self, message):
        won = message["content"] == "win"
        return MessageStepResult(
            reward=float(won), episode_done=True, metrics={"won": 1.0} if won else {}
        )


class WinOnlyWithDefault(WinOnlyEnv):
    metric_defaults: ClassVar[dict[str, float]] = {"won": 0.0}


async def test_a_metric_logged_by_some_episodes_shows_its_coverage_or_its_default():
    from mint_envkit import GroupBuilder, ScriptedPolicy

    def group(env):
        return GroupBuilder(problem={}, env=env, group_size=4, model_name=TINY_MODEL_NAME)

    replies = ScriptedPolicy(["win", "lose", "lose", "lose"])
    silent = await replies.run([group(WinOnlyEnv)])
    # never a mean over the silent subset without saying so
    assert silent.mean_metrics["won"] == 1.0 and silent.metric_coverage["won"] == 0.25
    assert silent.mean_reward == 0.25
    declared = await replies.run([group(WinOnlyWithDefault)])
    assert declared.mean_metrics["won"] == 0.25 and declared.metric_coverage["won"] == 1.0
