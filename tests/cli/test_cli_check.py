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
