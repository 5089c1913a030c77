"""from_textarena: a game as a multi-turn env, with its rules, rewards and its own randomness."""

from __future__ import annotations

import asyncio
import random
import re

import pytest

from mint_envkit.adapters import from_textarena
from mint_envkit.adapters.textarena import TEST_SEED_START, listed_moves
from mint_envkit.errors import ConfigError
from mint_envkit.rollouts import ScriptedPolicy

pytest.importorskip("textarena")  # the textarena extra; scripts/test.sh installs it


def first_listed(messages):
    return listed_moves(messages[-1]["content"])[0]


def test_a_two_player_game_against_the_random_opponent_pays_the_games_rewards() -> None:
    builder = from_textarena("TicTacToe-v0", seeds=6, batch_size=6, group_size=2)
    assert builder.env.players == 2 and builder.env.opponent == "random"
    assert builder.env.wrong_answer_reward() == -1.0 == builder.context_overflow_reward
    report = ScriptedPolicy(first_listed).run_sync(builder)
    outcomes = set()
    for group in report.groups:
        assert group.rewards[0] == group.rewards[1]  # one seed, one game: the same deal
        for reward, metrics, logs in zip(group.rewards, group.metrics, group.logs, strict=True):
            outcome = {1.0: "won", 0.0: "draw", -1.0: "lost"}[reward]
            assert metrics[outcome] == 1.0 and metrics["invalid_moves"] == 0.0
            assert logs["reason"] and logs["game_rewards"][0] == reward
            outcomes.add(outcome)
    assert "won" in outcomes and "lost" in outcomes  # the opponent's seed decides


def test_the_invalid_move_rule_is_the_games_one_warning_then_a_loss() -> None:
    builder = from_textarena("TicTacToe-v0", seeds=1, batch_size=1, group_size=1)
    group = ScriptedPolicy([["[4]", "[4]", "[4]"]]).run_sync(builder).groups[0]
    assert group.rewards == [-1.0]
    assert group.metrics[0]["invalid_moves"] == 2.0 and group.metrics[0]["turns"] == 3.0
    assert "already occupied" in group.logs[0]["reason"]
    env = builder.env(seed=0)
    opening = asyncio.run(env.initial_observation())
    assert opening[-1]["content"].startswith("[GAME] You are Player 0 in Tic Tac Toe.")
    assert opening[-1]["content"].count("Current Board") == 1


def test_each_episode_keeps_its_own_randomness() -> None:
    builder = from_textarena("TicTacToe-v0", seeds=[7], batch_size=1, group_size=6)
    random.seed(123)
    before = random.random()
    random.seed(123)
    group = ScriptedPolicy(first_listed).run_sync(builder).groups[0]
    assert random.random() == before  # the games left the global stream alone
    transcripts = {repr(group.replies)}
    again = ScriptedPolicy(first_listed).run_sync(builder).groups[0]
    assert len(set(group.rewards)) == 1 and again.rewards == group.rewards
    assert repr(again.replies) in transcripts


def test_a_one_player_game_and_a_scripted_opponent() -> None:
    single = from_textarena(
        "GuessTheNumber-v0", game_args={"max_number": 4, "max_turns": 4}, seeds=3, group_size=1
    )
    assert single.env.players == 1 and single.env.wrong_answer_reward() == 0.0

    def sweep(messages):
        said = sum(m["role"] == "assistant" for m in messages)
        return f"[{said + 1}]"

    report = ScriptedPolicy(sweep).run_sync(single)
    assert all(g.rewards == [1.0] and g.metrics[0]["solved"] == 1.0 for g in report.groups)

    seen = []

    async def center_first(observation: str) -> str:
        seen.append(observation)
        free = [m for m in listed_moves(observation) if m != "[4]"]
        return "[4]" if "'[4]'" in observation.splitlines()[-1] else free[0]

    versus = from_textarena(
        "TicTacToe-v0", opponent=center_first, player=1, seeds=1, batch_size=1, group_size=1
    )
    env = versus.env(seed=0)
    opening = asyncio.run(env.initial_observation())[-1]["content"]
    assert "[Player 0] [4]" in opening and "You are Player 1" in opening
    assert seen and "You are Player 0" in seen[0]


def test_splits_and_bad_arguments_say_what_to_do() -> None:
    builder = from_textarena("TicTacToe-v0", seeds=3, test_seeds=2)
    assert [p["seed"] for p in builder.problems] == [0, 1, 2]
    assert [p["seed"] for p in builder.test_problems] == [TEST_SEED_START, TEST_SEED_START + 1]
    with pytest.raises(ConfigError, match=re.escape("seeds [1] are in both")):
        from_textarena("TicTacToe-v0", seeds=[0, 1], test_seeds=[1])
    with pytest.raises(ConfigError, match="TextArena has no game 'TicTacToe-v9'; did you mean"):
        from_textarena("TicTacToe-v9")
    with pytest.raises(ConfigError, match="one-player game; it takes no opponent"):
        from_textarena("GuessTheNumber-v0", opponent="random")
    with pytest.raises(ConfigError, match="player=2 is not one"):
        from_textarena("TicTacToe-v0", player=2)
    nim = from_textarena("Nim-v0", seeds=1, batch_size=1, group_size=1)
    with pytest.raises(Exception, match="listed none"):
        ScriptedPolicy(["[0 1]"]).run_sync(nim)


def test_a_word_game_that_would_download_is_refused(monkeypatch) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])  # no nltk data on this machine
    with pytest.raises(ConfigError, match=r"needs the nltk data words.*downloads nothing"):
        from_textarena("Hangman-v0")


def _direct(game_id, seed, policy, opponent=None):
    """The game played by TextArena alone (``ta.make``, its own wrappers): player 0's reward."""
    import textarena as ta

    game = ta.make(game_id)
    game.reset(num_players=1 if opponent is None else 2, seed=seed)
    done, turn = False, 0
    while not done:
        player, observation = game.get_observation()
        if player == 0:
            action, turn = policy(observation, turn), turn + 1
        else:
            action = opponent(observation)
        done, _ = game.step(action)
    rewards, _ = game.close()
    return float(rewards[0])


def _ours(builder, policy):
    def reply(messages):
        return policy(messages[-1]["content"], sum(m["role"] == "assistant" for m in messages))

    groups = ScriptedPolicy(reply).run_sync(builder).groups
    return {group.index: group.rewards[0] for group in groups}


def _last_listed(observation, turn=0):
    return listed_moves(observation)[-1 - turn % 2]


def _guesses(observation, turn):
    return f"[{(7 * turn) % 20 + 1}]"


@pytest.mark.parametrize("tamper", [False, True])
def test_rewards_equal_the_games_own_played_alone(monkeypatch, tamper) -> None:
    import textarena as ta

    seeds = list(range(12))
    ours = _ours(
        from_textarena("TicTacToe-v0", opponent=_last_listed, seeds=seeds, group_size=1),
        _last_listed,
    )
    ours_single = _ours(from_textarena("GuessTheNumber-v0", seeds=seeds, group_size=1), _guesses)
    if tamper:  # a reward changed on TextArena's side only
        real = ta.TwoPlayerState.set_winner

        def doubled(self, player_id, reason):
            real(self, player_id, reason)
            self.rewards = {pid: 2 * r for pid, r in self.rewards.items()}

        monkeypatch.setattr(ta.TwoPlayerState, "set_winner", doubled)
    theirs = {s: _direct("TicTacToe-v0", s, _last_listed, _last_listed) for s in seeds}
    theirs_single = {s: _direct("GuessTheNumber-v0", s, _guesses) for s in seeds}
    same = all(ours[s] == theirs[s] for s in seeds) and ours_single == theirs_single
    assert same != tamper
    assert len(set(ours_single.values())) > 2  # secrets differ by seed: partial credit varies


def test_a_game_by_id_takes_the_sources_keyword_arguments() -> None:
    from mint_envkit.evaluation.spec import load_target

    builder = load_target("textarena:TicTacToe-v0", env_args={"seeds": 2, "player": 1})
    assert [p["seed"] for p in builder.problems] == [0, 1] and builder.env.player == 1
    assert builder.env.success_metric == "won"
    with pytest.raises(ConfigError, match=r"textarena:TicTacToe-v0 does not take the env args"):
        load_target("textarena:TicTacToe-v0", env_args={"no_such": 1})
