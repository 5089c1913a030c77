"""from_verifiers: reward parity with verifiers' own rollouts, multi-turn episodes, errors.

The parity test runs the same scripted replies twice: through verifiers' own
``Environment.run_rollout`` (a scripted verifiers client in place of a model; its rubric
scores the state) and through our builder (``ScriptedPolicy``: rendered, tokenized,
parsed, stepped, scored by the adapted rubric). The rewards must agree to 1e-9 on every
episode, and the comparison must see a reward changed on either side.
"""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit.adapters import from_verifiers
from mint_envkit.errors import ConfigError
from mint_envkit.rollouts import ScriptedPolicy
from verifiers_parity import (
    guess_reply,
    math_reply,
    mismatches,
    our_rewards,
    parity,
    parity_builder,
    verifiers_rewards,
)

vf = pytest.importorskip("verifiers")  # the verifiers extra; scripts/test.sh installs it


@pytest.mark.usefixtures("vf_envs_on_path")
def test_rewards_equal_the_rubrics_over_210_scripted_episodes() -> None:
    ours, theirs = parity("vf-tiny-math", math_reply, num_train=160, num_eval=0)
    more_ours, more_theirs = parity("vf-tiny-guess", guess_reply, n=50)
    assert len(ours + more_ours) == 210
    assert mismatches(ours + more_ours, theirs + more_theirs) == []
    # the replies reach every outcome: right, wrong, unparsed, long; solved, out of turns
    assert len({round(r, 6) for r in ours}) >= 5 and len({round(r, 6) for r in more_ours}) >= 4


@pytest.mark.usefixtures("vf_envs_on_path")
def test_the_parity_check_sees_a_reward_changed_on_either_side() -> None:
    builder = parity_builder("vf-tiny-math", num_train=40, num_eval=0)
    vf_env = vf.load_environment("vf-tiny-math", num_train=40, num_eval=0)
    ours = our_rewards(builder, math_reply)
    assert mismatches(ours, verifiers_rewards(vf_env, math_reply)) == []
    own = vf_env.rubric.rubrics[0]  # a SingleTurnEnv's rubric is a group: its own, the monitor's
    own.weights[1] = 0.3  # their format weight: 0.25 -> 0.3
    assert mismatches(ours, verifiers_rewards(vf_env, math_reply))
    changed = vf.load_environment("vf-tiny-math", num_train=40, num_eval=0)
    changed.rubric.rubrics[0].funcs[2] = lambda completion: 0.0  # our side: no length penalty
    changed.rubric.rubrics[0].funcs[2].__name__ = "short_reply"
    ours_changed = our_rewards(
        from_verifiers(changed, batch_size=40, group_size=1, shuffle=False), math_reply
    )
    own.weights[1] = 0.25
    assert mismatches(ours_changed, verifiers_rewards(vf_env, math_reply))


@pytest.mark.usefixtures("vf_envs_on_path")
def test_a_multi_turn_env_answers_each_reply_and_scores_at_the_end() -> None:
    builder = from_verifiers("vf-tiny-guess", env_args={"n": 2}, batch_size=2, group_size=2)
    assert builder.env.max_turns == 4  # the verifiers env's own
    scripts = [["<guess>5</guess>", "<guess>2</guess>", "<guess>1</guess>"], "nine"]
    report = ScriptedPolicy(scripts).run_sync(builder, max_batches=1)
    by_index = {group.index: group for group in report.groups}
    one, two = by_index[0], by_index[1]  # secrets 1 and 2
    assert one.metrics[0]["turns"] == 3.0 and one.metrics[0]["correct"] == 1.0
    assert one.rewards[0] == pytest.approx(1.0 + 0.1 * (5 - 3))  # solved, 3 guesses
    assert one.logs[0]["stop_condition"] == "has_final_env_response"
    assert two.metrics[0]["turns"] == 2.0 and two.rewards[0] == pytest.approx(1.3)
    assert one.metrics[1]["max_turns_reached"] == 0.0 and one.metrics[1]["turns"] == 4.0
    assert one.logs[1]["stop_condition"] == "max_turns_reached"
    assert one.rewards[1] == pytest.approx(0.1)  # unsolved, one turn of five left


@pytest.mark.usefixtures("vf_envs_on_path")
def test_a_tool_env_lists_its_tools_and_runs_the_calls() -> None:
    builder = from_verifiers("vf-tiny-tools", env_args={"n": 1}, batch_size=1, group_size=2)
    env = builder.env(**builder.problems[0])
    opening = asyncio.run(env.initial_observation())
    assert opening[-1] == {"role": "user", "content": "What is 0 + 3?"}
    assert [spec["function"]["name"] for spec in env.tool_specs()] == ["add"]
    call = '<tool_call>{"name": "add", "arguments": {"a": 0, "b": 3}}</tool_call>'
    group = (
        ScriptedPolicy([[call, "<answer>3</answer>"], ["<answer>4</answer>"]])
        .run_sync(builder)
        .groups[0]
    )
    assert group.rewards == [1.0, 0.0]
    assert [m["reward/add_calls"] for m in group.metrics] == [1.0, 0.0]


@pytest.mark.usefixtures("vf_envs_on_path")
def test_answer_check_bounds_and_a_raising_function() -> None:
    env = vf.load_environment("vf-tiny-math", num_train=2, num_eval=0)
    builder = from_verifiers(
        env,
        bounds={"correct_answer": (0, 1), "format_reward_func": (0, 1), "short_reply": (-10, 0)},
    )
    assert builder.env.scoring.ordering == "held" and builder.env.scoring.checks_answer
    assert from_verifiers(env, answer_check=None).env.scoring.checks_answer is False
    with pytest.raises(ConfigError, match="answer_check='nope' names no rubric function"):
        from_verifiers(env, answer_check="nope")
    with pytest.raises(ConfigError, match="bounds name 'nope'"):
        from_verifiers(env, bounds={"nope": (0, 1)})
    tight = from_verifiers(env, bounds={"short_reply": (0, 0)}, batch_size=1, group_size=1)
    with pytest.raises(Exception, match="outside the bounds"):
        ScriptedPolicy(["x" * 80]).run_sync(tight, max_batches=1)

    def broken(completion) -> float:
        raise RuntimeError("no luck")

    env.rubric.rubrics[0].add_reward_func(broken, weight=1.0)
    group = (
        ScriptedPolicy(["<answer>3</answer>"])
        .run_sync(from_verifiers(env, batch_size=1, group_size=1), max_batches=1)
        .groups[0]
    )
    assert group.metrics[0]["reward/broken"] == 0.0  # as verifiers scores it
    assert group.metrics[0]["verifiers/broken/error"] == 1.0
    assert group.logs[0]["verifiers/broken/error"] == "RuntimeError: no luck"


@pytest.mark.usefixtures("vf_envs_on_path")
def test_what_cannot_be_adapted_says_why() -> None:
    with pytest.raises(ConfigError, match="could not load the env 'vf-no-such-env'"):
        from_verifiers("vf-no-such-env")
    with pytest.raises(ConfigError, match="needs a verifiers env"):
        from_verifiers(object())
    env = vf.load_environment("vf-tiny-math", num_train=2, num_eval=0)

    def group_reward(completions) -> list[float]:
        return [0.0] * len(completions)

    env.rubric.rubrics[0].add_reward_func(group_reward)
    with pytest.raises(ConfigError, match="'group_reward' scores a whole group"):
        from_verifiers(env)
    with pytest.raises(ConfigError, match="env_args go with an env id"):
        from_verifiers(env, env_args={"n": 1})
