"""Issue 48 item 1: ``mint-envkit check`` on a game: the winning reply found by the env's
success metric, and the scoring and ordering rule printed (and held) for a multi-turn env."""

from __future__ import annotations

import json
from pathlib import Path

from mint_envkit.cli import main

TESTS = Path(__file__).resolve().parents[1]
PROBLEM = json.dumps(
    {
        "question": "Which colour? Options: red, orange, yellow, green, blue, purple.",
        "answer": "orange",
    }
)


def _module(tmp_path, body: str = "") -> str:
    path = tmp_path / "games_under_check.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n" + body)
    return str(path)


def test_check_finds_the_winning_reply_and_prints_the_game_s_scoring(tmp_path, capsys):
    """The trap: check said "no reference reply: none of ['orange', ...] scores as correct"
    where 'orange' wins in one turn, and printed no scoring or ordering line."""
    path = _module(tmp_path, "from shared_envs import ColourGameEnv\n")
    assert main(["check", f"{path}:ColourGameEnv", "--problem", PROBLEM]) == 0
    out = capsys.readouterr().out
    assert "reference reply (the env scores it correct): 'orange'" in out
    assert "ColourGameEnv plays a game turn by turn (respond); success metric 'solved'" in out
    assert (
        "out of turns -0.5 (max_turns_reward, after 4 turns), cut off at the reply limit -0.5"
        in out
    )
    assert "an honest losing episode (valid wrong moves: 'red', 'yellow', 'green', 'blue')" in out
    assert "ordering rule: held" in out


def test_check_fails_a_game_whose_cut_off_earns_more_than_losing(tmp_path, capsys):
    path = _module(
        tmp_path,
        "from shared_envs import ColourGameEnv\n"
        "class Penalised(ColourGameEnv):\n"
        "    wrong_move_reward = -0.1\n",
    )
    assert main(["check", f"{path}:Penalised", "--problem", PROBLEM]) == 1
    out = capsys.readouterr().out
    assert "earns -0.800; the endings held to it:" in out
    assert "ordering rule: BROKEN: 'cut off at the reply limit on turn 1' earns -0.500" in out
    assert "context_overflow_reward=" in out


def test_a_game_without_a_success_metric_is_told_to_declare_one(tmp_path, capsys):
    path = _module(
        tmp_path,
        "from shared_envs import ColourGameEnv\n"
        "class Undeclared(ColourGameEnv):\n"
        "    success_metric = None\n",
    )
    main(["check", f"{path}:Undeclared", "--problem", PROBLEM])
    out = capsys.readouterr().out
    assert "no success_metric declared (set success_metric = 'solved'" in out
    assert "declare Undeclared.success_metric" in out
