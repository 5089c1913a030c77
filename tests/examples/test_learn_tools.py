"""The tool-use learning example: its env, its split, its scripted episodes (no model)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import attrs
import pytest

from mint_envkit import ScriptedPolicy, get_renderer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import learn_tools as demo


def _call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _builder(problems, renderer="qwen3"):
    model = "mint-envkit/tiny-qwen3"
    return attrs.evolve(demo.builder, problems=problems, model_name=model, renderer_name=renderer)


def test_the_tool_and_its_examples_are_visible_on_a_template_without_a_tools_slot(
    chatml_tokenizer,
):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    assert renderer.tools_in_template is False
    env = demo.ToolMultiplyEnv(question="What is 23 * 41?", answer="943")
    messages = asyncio.run(env.initial_observation())
    specs = env.tool_specs()
    assert renderer.hidden_tools(messages, specs) == []
    text = chatml_tokenizer.decode(renderer.render_tokens(messages, specs))
    assert json.dumps(demo.multiply.schema, ensure_ascii=False) in text  # the schema, whole
    assert '{"name": "multiply", "arguments": {"a": 12, "b": 34}}' in text  # the worked example
    assert text.index("What is 57 * 23?") < text.index("What is 23 * 41?")


def test_a_scripted_tool_call_episode_is_scored_with_the_bonus():
    problems = demo.multiply_problems(2, seed=3)

    def solver(messages):  # call the tool with the question's numbers, then copy its result
        if messages[-1]["role"] == "tool":
            return messages[-1]["content"]
        a, b = messages[-1]["content"].removeprefix("What is ").rstrip("?").split(" * ")
        return _call("multiply", {"a": int(a), "b": int(b)})

    report = ScriptedPolicy(solver).run_sync(_builder(problems))
    assert report.mean_metrics["correct"] == 1.0
    assert report.mean_metrics["tool_calls"] == 1.0
    assert report.mean_reward == 1.0 + demo.ToolMultiplyEnv.reward_tool_ok
    # an unknown tool is an invalid call: no bonus; a wrong final number: 0
    wrong = [[_call("times", {"a": 1, "b": 2}), "7"]]
    report = ScriptedPolicy(wrong).run_sync(_builder(problems[:1]))
    assert report.mean_metrics["invalid_tool_calls"] == 1.0
    assert report.mean_reward == 0.0


def test_tool_figures_count_episodes_with_calls_and_with_every_call_run():
    problems = demo.multiply_problems(1, seed=4)
    a, b = problems[0]["pair"]
    scripts = [
        [_call("multiply", {"a": a, "b": b}), problems[0]["answer"]],
        [_call("multiply", {"a": "x"}), "1"],
        ["1"],
        ["2"],
    ]
    builder = attrs.evolve(_builder(problems), group_size=4)
    policy = ScriptedPolicy(scripts)
    from mint_envkit.rollouts.run import rollout_groups

    async def run():
        train, _ = await builder()
        return await rollout_groups(train.get_batch(0), policy)

    figures = demo.tool_figures(asyncio.run(run()))
    assert figures == {"tool_call_rate": 0.5, "tool_ok_rate": 0.25}


def test_held_out_problems_share_no_factor_pair_with_training():
    train, held = demo.splits(40, 24, seed=1)
    assert len(train) == 40 and len(held) == 24
    assert not {tuple(p["pair"]) for p in train} & {tuple(p["pair"]) for p in held}
    assert demo.splits(40, 24, seed=1) == (train, held) != demo.splits(40, 24, seed=2)
    assert all(p["answer"] == str(p["pair"][0] * p["pair"][1]) for p in train + held)


# Starts the embedded server, 1 step + 2 evals on the small tiny model (it writes no tool
# calls: this checks the plumbing and the figures, not learning): about 6 s on 2 busy cores.
@pytest.mark.integration
def test_the_demo_trains_evaluates_and_reports_the_tool_figures(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--model", "mint-envkit/tiny-qwen3-small", "--steps", "1", "--out", str(out)]
    argv += ["--batch", "2", "--group", "2", "--max-tokens", "4", "--eval-n", "2"]
    assert demo.main(argv) == 0
    curve = json.loads((out / "curve.json").read_text())
    assert curve["task"] == "ToolMultiplyEnv" and [s["step"] for s in curve["steps"]] == [0]
    for when in ("before", "after"):
        figures = curve["held_out"][when]
        assert {"correct", "tool_call_rate", "tool_ok_rate", "answers/baseline_correct"} <= set(
            figures
        )
    printed = capsys.readouterr().out
    assert "tool-call rate" in printed and "best trivial baseline" in printed
