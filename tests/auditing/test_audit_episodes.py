"""Issue 48 item 2: the audit of a game plays episodes: its yardstick is an honest losing
episode (valid wrong moves), its probes are named by what they do in an episode, and a
probe that plays legally is not called "no answer"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mint_envkit import DatasetBuilder, Feedback
from mint_envkit.auditing import audit
from shared_envs import ColourGameEnv, colour_problems

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from guess_the_number import GuessTheNumberEnv


class PenalisedColourEnv(ColourGameEnv):
    """Each wrong move costs 0.1: an honest losing game earns -0.8, a reply cut off on the
    first turn -0.5 (the builder's default, from max_turns_reward): a planted exploit."""

    wrong_move_reward = -0.1


class SilentPaysEnv(ColourGameEnv):
    """A reply naming no colour earns +0.1 and the game goes on: saying nothing for four
    turns earns -0.2, more than losing honestly (-0.5): a planted exploit."""

    async def respond(self, message):
        if not any(
            c in message["content"].lower() for c in ("red", "orange", "yellow")
        ) and not any(c in message["content"].lower() for c in ("green", "blue", "purple")):
            return Feedback(reply="Name a colour.", reward=0.1, metrics={"solved": 0.0})
        return await super().respond(message)


def _builder(env):
    return DatasetBuilder(
        env=env,
        problems=colour_problems(6),
        batch_size=6,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )


async def test_a_game_is_held_to_an_honest_losing_episode_and_legal_play_is_not_no_answer():
    """The traps: the yardstick was the same invalid guess every turn (below an honest
    loss), and `restated` (copying the env's feedback, which names a colour) was flagged
    as giving no answer."""
    report = await audit(_builder(ColourGameEnv), search=0, quiet=True)
    rows = {p.name: p for p in report.probes}
    assert report.game and "wrong" not in rows and "restated" not in rows
    assert rows["wins"].mean_reward == 1.0 and rows["wins"].correct_rate == 1.0
    assert rows["loses_honestly"].mean_reward == pytest.approx(-0.5)
    assert rows["loses_honestly"].does == "valid wrong moves until out of turns"
    assert rows["repeats_feedback"].kind == "plays"
    assert rows["repeats_feedback"].does.startswith("plays a legal move most turns")
    assert rows["says_nothing"].kind == "non_answer"
    assert (report.baseline_name, report.baseline_correct) == ("options in order", 4 / 6)
    assert report.ok, report.table()
    table = report.table()
    assert "best trivial baseline: 66.7% of games won (options in order)" in table
    assert "cut_off_turn_1" in table and "(a reply cut off at the reply limit on turn 1)" in table


async def test_a_game_s_exploits_are_worded_by_what_they_do_in_an_episode():
    report = await audit(_builder(PenalisedColourEnv), search=0, quiet=True)
    exploits = {f.probe: f.message for f in report.exploits}
    assert "cut_off_turn_1" in exploits, report.table()
    assert (
        "'cut_off_turn_1' makes no valid move but earns -0.500, more than an honest losing "
        "episode (valid wrong moves) (-0.800)" in exploits["cut_off_turn_1"]
    )
    silent = await audit(_builder(SilentPaysEnv), search=0, quiet=True)
    assert "says_nothing" in {f.probe for f in silent.exploits}, silent.table()


async def test_a_game_without_answers_is_compared_with_losing_only():
    problems = [{"secret": s} for s in (3, 37, 64, 90)]
    builder = DatasetBuilder(
        env=GuessTheNumberEnv,
        problems=problems,
        batch_size=4,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )
    report = await audit(builder, search=0, quiet=True)
    rows = {p.name: p for p in report.probes}
    assert "wins" not in rows and rows["loses_honestly"].mean_reward == pytest.approx(-0.5)
    assert any("no winning episode was played" in f.message for f in report.findings)
    assert report.baseline_name is not None and report.ok, report.table()
