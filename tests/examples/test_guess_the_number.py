"""The guess-the-number example: binary search wins, a constant guess runs out of turns."""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import guess_the_number as example

from mint_envkit import ProblemError, ScriptedPolicy

ALL_SECRETS = [{"secret": s} for s in range(1, 101)]


async def test_binary_search_solves_every_problem_within_max_turns():
    report = await ScriptedPolicy(example.binary_search_policy).run(
        example.make_builder(ALL_SECRETS + example.PROBLEMS, group_size=1)
    )
    assert report.errors == []
    assert len(report.groups) == 106
    for group in report.groups:
        (metrics,) = group.metrics
        assert group.rewards == [example.SOLVED_REWARD], group
        assert metrics["solved"] == 1.0
        assert metrics["max_turns_reached"] == 0.0
        assert 1 <= metrics["turns"] <= example.MAX_TURNS
    assert max(g.metrics[0]["turns"] for g in report.groups) == example.MAX_TURNS == 7


async def test_constant_guess_hits_max_turns_with_the_documented_reward():
    report = await ScriptedPolicy(example.constant_policy).run(
        example.make_builder([{"secret": 3}, {"secret": 99}, {"secret": 50}])
    )
    missed, missed_too, lucky = report.groups
    for group in (missed, missed_too):
        assert group.rewards == [example.MAX_TURNS_REWARD] * 2
        for metrics in group.metrics:
            assert metrics["max_turns_reached"] == 1.0
            assert metrics["turns"] == example.MAX_TURNS
            assert metrics["solved"] == 0.0
        assert group.logs[0]["guesses"] == [50] * example.MAX_TURNS
    assert lucky.rewards == [1.0, 1.0]
    assert example.GuessTheNumberEnv.max_turns_reward == example.MAX_TURNS_REWARD == -0.5


def say(text):
    return {"role": "assistant", "content": text}


async def test_feedback_unparsable_penalty_and_history():
    env = example.GuessTheNumberEnv(secret=42)
    messages = await env.initial_observation()
    assert "42" not in str(messages)
    assert "between 1 and 100" in messages[-1]["content"]
    lower = await env.step(say("60"))
    assert lower.next_messages[-1] == {"role": "user", "content": "Lower."}
    assert lower.reward == 0.0 and not lower.episode_done
    higher = await env.step(say("I guess 30"))
    assert higher.next_messages[-1]["content"] == "Higher."
    for text in ("no idea", "41.5"):
        unparsable = await env.step(say(text))
        assert unparsable.reward == example.UNPARSABLE_REWARD
        assert unparsable.next_messages[-1]["content"] == "Please reply with one whole number."
    win = await env.step(say("42"))
    assert win.episode_done and win.reward == example.SOLVED_REWARD
    assert win.logs["guesses"] == [60, 30, 42]
    assert win.metrics["turns"] == 5.0


async def test_teardown_logs_a_summary_once(caplog):
    env = example.GuessTheNumberEnv(secret=2, low=1, high=3)
    await env.initial_observation()
    with caplog.at_level(logging.INFO, logger="guess_the_number"):
        await env.step(say("1"))
        assert env.summary is None
        await env.step(say("2"))
    assert env.summary == {"secret": 2, "turns": 2, "guesses": [1, 2]}
    assert [r.getMessage() for r in caplog.records].count(
        "episode over: {'secret': 2, 'turns': 2, 'guesses': [1, 2]}"
    ) == 1


async def test_setup_rejects_a_secret_outside_the_range():
    env = example.GuessTheNumberEnv(secret=11, low=1, high=10)
    with pytest.raises(ProblemError, match="outside"):
        await env.initial_observation()


def test_main_prints_turns_and_rewards(capsys):
    example.main()
    out = capsys.readouterr().out
    assert "binary search: mean reward +1.00" in out
    assert "always 50:" in out
    assert "turns [7, 7] rewards [-0.5, -0.5]" in out
    assert "error" not in out
    expected = (5 * example.MAX_TURNS_REWARD + 1.0) / 6
    assert f"always 50: mean reward {expected:+.2f}" in out
    assert math.isclose(expected, -0.25)


async def test_each_multi_turn_episode_trains_as_one_datum():
    """Through the real Qwen3 renderer the observations extend: T turns are one datum."""
    import attrs

    from mint_envkit.rl.datums import datum_metrics, plan_datums, to_datums, training_samples
    from mint_envkit.rollouts.run import rollout_groups

    train, _ = await example.make_builder([{"secret": 1}, {"secret": 100}])()
    rollouts = await rollout_groups(train.get_batch(0), ScriptedPolicy(example.constant_policy))
    episodes = [t for r in rollouts for t in r.trajectories]
    assert [len(t.transitions) for t in episodes] == [example.MAX_TURNS] * 4
    samples = training_samples(rollouts, {0: [1.0, -1.0], 1: [0.5, -0.5]})
    metrics = datum_metrics(samples, plan_datums(samples))
    assert metrics["train/datums"] == 4 and metrics["train/turn_fallbacks"] == 0
    data = to_datums(samples, [s.token_advantages() for s in samples])
    for datum, episode in zip(data, episodes, strict=True):
        last = episode.transitions[-1]
        assert datum.model_input.to_ints() == [*last.ob, *last.ac.tokens][:-1]
    assert metrics["train/datum_tokens"] == sum(d.model_input.length for d in data)
    alone = [attrs.evolve(s, episode=None) for s in samples]  # one datum per turn
    per_turn = to_datums(alone, [s.token_advantages() for s in alone])
    assert len(per_turn) == 4 * example.MAX_TURNS
    assert metrics["train/datum_tokens"] < sum(d.model_input.length for d in per_turn) / 2
