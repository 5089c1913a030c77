"""Issue 48 items 1-2: the trivial game policies and the ordering rule of a game, played."""

from __future__ import annotations

import pytest

from mint_envkit import DatasetBuilder, Feedback
from mint_envkit.rollouts.game_moves import (
    Play,
    names_one_option,
    offered_options,
    options_in,
    play_episodes,
)
from mint_envkit.rollouts.game_policies import (
    best_game_baseline,
    game_baselines,
    game_ordering,
)
from shared_envs import ColourGameEnv, colour_problems


class PenalisedColourEnv(ColourGameEnv):
    """Each wrong move costs 0.1: an honest losing game earns -0.8, and a reply cut off on
    the first turn (-0.5, the builder's default from max_turns_reward) earns more."""

    wrong_move_reward = -0.1


class SuddenDeathColourEnv(ColourGameEnv):
    """One wrong colour loses at once (-0.5): a game that is over long before its 4 turns."""

    async def respond(self, message):
        feedback = await super().respond(message)
        if feedback.reward == self.wrong_move_reward and not feedback.done:
            return Feedback(reward=-0.5, done=True, metrics={"solved": 0.0})
        return feedback


async def _groups(env=ColourGameEnv, n=6):
    builder = DatasetBuilder(
        env=env,
        problems=colour_problems(n),
        batch_size=n,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )
    train, _ = await builder()
    return train.get_batch(0)


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("Options: red, green, blue.", ["red", "green", "blue"]),
        ("Is it red, green or blue?", ["red", "green", "blue"]),
        ("Pick one: A) red B) blue", ["A", "B"]),
        ("Valid moves: [e2e4], [d2d4]", ["[e2e4]", "[d2d4]"]),
        (  # a TextArena turn: the game's [tags] and a move of the rules are not moves
            "[GAME] For example, '[4]' marks the centre.\n[Player 1] [0]\n"
            "Available Moves: '[1]', '[4]'\n[GAME] Now: '[2]', '[3]'",
            ["[2]", "[3]"],
        ),
        ("[GAME] Board ...\n[Player 1] [0]\nAvailable Moves: '[8]'", ["[8]"]),
        ("I am thinking of a number between 1 and 5.", ["1", "2", "3", "4", "5"]),
        ("Higher.", []),
    ],
)
def test_the_options_a_message_offers(text, options):
    assert options_in(text) == options


def test_a_move_is_one_option_named_and_the_latest_offer_counts():
    messages = [
        {"role": "user", "content": "Options: red, green, blue."},
        {"role": "assistant", "content": "red"},
        {"role": "user", "content": "No. Options: green, blue."},
    ]
    assert offered_options(messages) == ["green", "blue"]
    assert names_one_option("Not red.", ["red", "green"])
    assert not names_one_option("red or green", ["red", "green"])
    assert not names_one_option("I am not sure.", ["red", "green"])


async def test_the_best_trivial_game_policy_names_distinct_options():
    """The trap: no trivial policy for games existed; naming 4 of 6 colours wins 4/6."""
    found = {b.name: b for b in await game_baselines(await _groups())}
    assert set(found) == {"random option", "first option", "repeat first guess", "options in order"}
    assert found["options in order"].success == pytest.approx(4 / 6)
    assert found["first option"].success == pytest.approx(1 / 6)
    assert found["first option"].example == ("red",)
    assert best_game_baseline(list(found.values())).name == "options in order"


async def test_the_endings_are_held_to_an_honest_losing_episode():
    groups = await _groups(n=1)
    held = await game_ordering(groups[0])
    assert held.held is True and held.losing.reward == pytest.approx(-0.5)
    assert held.losing.replies == ("orange", "yellow", "green", "blue")  # never the answer
    assert all(r <= -0.5 + 1e-9 for r in held.endings.values())
    broken = await game_ordering((await _groups(PenalisedColourEnv, n=1))[0])
    assert broken.held is False and broken.losing.reward == pytest.approx(-0.8)
    assert set(broken.above) == {"cut off at the reply limit on turn 1"}
    assert "ordering rule: BROKEN: 'cut off at the reply limit on turn 1'" in broken.lines()[-1]


async def test_an_ending_the_game_finished_before_is_not_played():
    """The trap: a TicTacToe game is over long before its turn limit, so "cut off on the
    last turn" never happened, yet its winning moves were counted as that ending's."""
    group = (await _groups(n=1))[0]  # the answer, red, is the first option: turn 1 wins

    def first(view):
        return view.options[0]

    never = (await play_episodes(group, Play("last", first, "cut_off", -1)))[0]
    assert never.won is True and never.ended is False
    cut = (await play_episodes(group, Play("first turn", first, "cut_off", 0)))[0]
    assert cut.won is False and cut.ended is True
    assert (await play_episodes(group, Play("plain", first)))[0].ended is None


async def test_an_ending_the_honest_game_never_reaches_is_shown_and_not_compared():
    """The trap: the check printed "cut off on the last turn" as "ok" with a reward, for a
    game lost on its first turn: that ending never happened."""
    ordering = await game_ordering((await _groups(SuddenDeathColourEnv, n=1))[0])
    assert ordering.losing.replies == ("orange",)  # lost on turn 1
    assert ordering.unreached == {"cut off at the reply limit on the last turn"}
    assert "cut off at the reply limit on the last turn" not in ordering.above
    (line,) = [x for x in ordering.lines() if "on the last turn" in x]
    assert line.rstrip().endswith("not reached: the game was over first")
    assert ordering.held is True
