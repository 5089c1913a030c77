"""The MCP tools example: the tool comes from a real MCP server (the example run with --serve),
shows in the rendered prompt, and a right call + answer is max reward."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import mcp_tools as example

from mint_envkit import McpServer, ScriptedPolicy, get_renderer
from mint_envkit.rendering import EnvFromMessageEnv, get_tokenizer
from mint_envkit.rollouts.run import rollout_groups


async def test_a_scripted_solver_calls_the_mcp_tool_and_scores_max():
    problems = example.unit_problems(3)
    train, _ = await example.make_builder(problems)()
    rollouts = await rollout_groups(train.get_batch(0), ScriptedPolicy(example.solver(problems)))
    assert len(rollouts) == 3
    for rollout in rollouts:
        assert rollout.error is None
        assert rollout.rewards == [1.0, 1.0]
        for trajectory in rollout.trajectories:
            assert trajectory.metrics["tool_calls"] == 1.0
            assert trajectory.metrics["tool_errors"] == 0.0


async def test_the_listed_tool_is_in_the_rendered_prompt():
    server = McpServer.stdio([sys.executable, example.__file__, "--serve"])

    class FreshUnitsEnv(example.UnitsEnv):
        mcp_servers = [server]  # noqa: RUF012 - a server never listed before

    renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
    env = EnvFromMessageEnv(renderer, FreshUnitsEnv(**example.unit_problems(1)[0]))
    assert env.tools == []  # not listed before the episode starts
    try:
        observation, _ = await env.initial_observation()
        assert [t["function"]["name"] for t in env.tools] == ["convert"]
        prompt = renderer.tokenizer.decode(observation.to_ints())
        assert '"name": "convert"' in prompt and "the unit wanted" in prompt
        await env.message_env.abort()
    finally:
        await server.aclose()


def test_the_example_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, example.__file__], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "solver: mean reward +1.00" in done.stdout


def test_check_shows_the_mcp_tool_in_the_prompt_and_scores_a_tool_turn(capsys):
    from mint_envkit.cli import main

    problem = example.unit_problems(1)[0]
    call = example.solver([problem])([{"role": "user", "content": problem["question"]}])
    replies = json.dumps([call, problem["answer"]])
    argv = ["check", f"{example.__file__}:UnitsEnv", "--problem", json.dumps(problem)]
    assert main([*argv, "--renderer", "qwen3", "--reply", replies]) == 0
    out = capsys.readouterr().out
    assert '{"type": "function", "function": {"name": "convert"' in out
    assert "reward +1.000" in out and "'tool_calls': 1.0" in out
