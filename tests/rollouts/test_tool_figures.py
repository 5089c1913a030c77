"""Issue 48 item 4: tool figures everywhere: calls per episode, the share of episodes that
call a tool, valid and malformed calls, errors and timeouts, per tool; in evaluations
(summary, headline, the comparison table, `mint-envkit eval`) and the loop's rows."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from mint_envkit import DatasetBuilder, ToolEnv, first_number, tool
from mint_envkit.cli import main
from mint_envkit.evaluation.figures import headline
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import ScriptedPolicy
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.tool_figures import tool_figures
from mint_envkit.runs.record import EVAL, Figures

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

from calculator_tools import make_builder, tool_call, word_problems  # noqa: E402


@tool
def nap(seconds: float) -> str:
    """Sleep, then say so.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "slept"


class NapEnv(ToolEnv):
    system_prompt = "Call the tools, then reply with a number."
    tools = (nap,)
    parser = first_number
    tool_timeout_s = 0.2


async def _rollouts(builder, scripts):
    train, _ = await builder()
    return await rollout_groups(train.get_batch(0)[:1], ScriptedPolicy(scripts))


async def test_tool_figures_count_calls_episodes_validity_errors_and_timeouts():
    """The trap: zero-shot SmolLM2 called a lookup tool 0 of 24 times and no report said so."""
    problems = word_problems(2)
    good = tool_call("calculate", {"expression": problems[0]["expression"]})
    bad = '<tool_call>\n{"name": "calculate", "arguments": {x: 1}}\n</tool_call>'
    rollouts = await _rollouts(
        make_builder(problems[:1], group_size=3), [[good, "5"], [bad, "5"], "5"]
    )
    figures = tool_figures(rollouts)
    assert figures.calls_per_episode == pytest.approx(2 / 3)
    assert figures.calling == pytest.approx(2 / 3)
    assert figures.valid == 0.5 and figures.errors == 0.0 and figures.timeouts == 0.0
    assert (
        figures.per_tool == "calculate 0.33/episode, 0 errors; (malformed) 0.33/episode, 0 errors"
    )

    naps = DatasetBuilder(env=NapEnv, problems=[{"question": "Nap.", "answer": "1"}],
                          batch_size=1, group_size=2, model_name=TINY_MODEL_NAME)  # fmt: skip
    slow = tool_call("nap", {"seconds": 2})
    quick = tool_call("nap", {"seconds": 0})
    figures = tool_figures(await _rollouts(naps, [[slow, quick, "1"], "1"]))
    assert (figures.calls_per_episode, figures.calling) == (1.0, 0.5)
    assert figures.errors == 0.5 and figures.timeouts == 0.5
    assert figures.per_tool == "nap 1.00/episode, 1 error"
    shown = headline(Figures(tools=figures))
    assert "tool calls 1.00/episode, 50.0% of episodes call a tool, 100.0% of calls valid" in shown
    assert Figures.from_summary(Figures(tools=figures).summary()).tools == figures
    assert Figures(tools=figures).metrics(prefix="env")["env/all/tools/calling"] == 0.5
    assert Figures(tools=figures).metrics(EVAL)["eval/tools/timeouts"] == 0.5


@pytest.mark.integration
def test_eval_of_the_calculator_tools_example_reports_tool_call_figures(
    tmp_path, tiny_local_server, capsys
):
    argv = ["eval", f"{EXAMPLES / 'calculator_tools.py'}:builder", "--model", TINY_MODEL_NAME,
            "--samples", "2", "--limit", "2", "--max-tokens", "8", "--base-url",
            tiny_local_server.base_url, "--backend", "local", "--out", str(tmp_path / "ev")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    for row in ("tool calls/episode", "episodes calling", "valid calls", "tool errors"):
        assert row in out, out
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["tools/calls_per_episode"] is not None
    assert summary["tools/calling"] is not None
