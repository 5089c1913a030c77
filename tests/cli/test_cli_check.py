"""``mint-envkit check``: what a reply's line shows."""

from __future__ import annotations

import json
from pathlib import Path

from mint_envkit.cli import main

ARITHMETIC = (
    f"{Path(__file__).resolve().parents[2] / 'examples' / 'arithmetic_env.py'}:ArithmeticEnv"
)
PROBLEM = json.dumps({"question": "What is 2 + 3?", "answer": "5"})


def test_a_wrong_reply_shows_correct_0(capsys):
    """A zero metric is a finding: the wrong reply's line says ``'correct': 0.0``."""
    assert main(["check", ARITHMETIC, "--problem", PROBLEM, "--reply", "5", "--reply", "7"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "  reply " in line]
    assert "{'correct': 1.0, 'parsed': 1.0}" in lines[0]
    assert lines[1].startswith("  reply '7'") and "{'correct': 0.0, 'parsed': 1.0}" in lines[1]


def _module(tmp_path, body: str) -> Path:
    path = tmp_path / "envs_under_check.py"
    path.write_text(
        "from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv, component\n" + body
    )
    return path


def test_an_env_whose_reward_checks_no_answer_is_checked(tmp_path, capsys):
    path = _module(
        tmp_path,
        "def short(completion, answer):\n"
        "    return float(len(completion) < 10)\n"
        "class ShortEnv(SingleTurnEnv):\n"
        "    reward_fn = component(short, bounds=(0.0, 1.0))\n",
    )
    assert main(["check", f"{path}:ShortEnv", "--problem", PROBLEM, "--reply", "hi"]) == 0
    out = capsys.readouterr().out
    assert "  reply 'hi'" in out and "parse -" in out  # parse status None: no crash
    assert "scores with reward_fn 'short' (checks no answer, (0.0, 1.0))" in out


def test_group_size_holds_for_a_builder_and_a_module_may_run_work_at_import(tmp_path, capsys):
    path = _module(
        tmp_path,
        "builder = DatasetBuilder(env=SingleTurnEnv, problems=[{'question': '2+3?', "
        "'answer': '5'}], batch_size=1, group_size=2, model_name='mint-envkit/tiny-qwen3')\n"
        "print('at import:', ScriptedPolicy(['5', '6']).run_sync(builder).groups[0].rewards)\n",
    )
    replies = ["--reply", "5", "--reply", "6", "--reply", "7", "--reply", "8"]
    assert main(["check", f"{path}:builder", "--group-size", "4", *replies]) == 0
    out = capsys.readouterr().out
    assert out.count("at import: [1.0, 0.0]") == 1
    assert len([line for line in out.splitlines() if line.startswith("  reply ")]) == 4


def test_tools_are_mentioned_only_for_an_env_with_tools(capsys):
    assert main(["check", ARITHMETIC, "--problem", PROBLEM, "--reply", "5"]) == 0
    out = capsys.readouterr().out
    assert "tools slot" not in out and "tools visible" not in out
    # the class's scoring, decided once, is printed: what scores and the ordering verdict
    assert "ArithmeticEnv scores with the parser" in out and "ordering rule: held" in out
