"""Trivial policies for games, the honest losing episode, and the endings held to it.

A multi-turn game (a :class:`~mint_envkit.MultiTurnEnv` that is not a single answer
behind tools) is not judged by one reply: its yardsticks are episodes. This module plays
them through the env's real path (render, tokens, step, reward; as
:class:`~mint_envkit.ScriptedPolicy` does), each move read from the options the env
offers (:func:`offered_options`: ``A) ... B) ...`` labels, a list after a colon, ``[e2e4]``
moves, "red, green or blue", quoted strings, bullets, a range "between 1 and 100"):

- the trivial game policies (:data:`TRIVIAL_GAME_POLICIES`), the baseline a trained
  model must beat: ``random option`` (a uniform pick each turn), ``first option``
  (always the first), ``repeat first guess`` (a random option, then the same every turn),
  ``options in order`` (the first option not said yet: naming 4 of 6 colours wins 4/6);
- the **honest losing episode**: valid wrong moves until out of turns (the options in
  order, never the answer when the problem has one), the yardstick of the ordering rule
  for games and of the audit's game probes;
- the endings held to it (:func:`game_ordering`): cut off at the reply limit on the first
  turn and on the last, no stop token on the first turn, no valid move until out of
  turns; none may earn more than the honest losing episode
  (:func:`~mint_envkit.envs.ordering.above_yardstick`, the one rule).

An episode is judged won by the env's success metric
(:attr:`~mint_envkit.MessageEnv.success_metric`, else its ``correct``) through
:func:`~mint_envkit.rollouts.judging.is_right`, the rule every verdict uses.

Example::

    # not run: `group` is a GroupBuilder of a guessing game, built elsewhere
    from mint_envkit.rollouts.game_policies import game_baselines, game_ordering

    best = max(await game_baselines([group]), key=lambda b: b.success or 0.0)
    best.name, best.success              # ('options in order', 0.667)
    print((await game_ordering(group)).lines())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.envs.ordering import above_yardstick
from mint_envkit.rollouts.game_moves import (
    LOSING,
    TRIVIAL_GAME_POLICIES,
    Episode,
    Play,
    play_episodes,
    replaying,
    wrong_moves,
    wrong_moves_reversed,
)
from mint_envkit.rollouts.judging import TIE


@attrs.frozen
class GameBaseline:
    """One trivial game policy over a set of problems.

    Attributes:
        name: the policy (a key of :data:`TRIVIAL_GAME_POLICIES`).
        success: the share of its episodes won (None: the env says nothing of success).
        mean_reward: its episodes' mean reward.
        per_problem: its share of episodes won on each problem.
        rewards: its mean reward on each problem.
        example: the replies of its first episode.

    Example::

        GameBaseline("first option", 0.25, -0.3, (0.0, 1.0), (-0.5, 1.0), ("red",)).success
    """

    name: str
    success: float | None
    mean_reward: float | None
    per_problem: tuple[float, ...]
    rewards: tuple[float, ...]
    example: tuple[str, ...] = ()


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def game_baselines(
    groups: Sequence[Any], *, episodes: int = 4, seed: int = 0
) -> list[GameBaseline]:
    """Every trivial game policy played ``episodes`` times on each problem (the
    deterministic ones once).

    Example::

        # not run: `groups` are GroupBuilders of a game, built elsewhere
        [(b.name, b.success) for b in await game_baselines(groups)]
    """
    out = []
    for name, policy in TRIVIAL_GAME_POLICIES.items():
        n = episodes if name in ("random option", "repeat first guess") else 1
        per_problem, rewards, example = [], [], ()
        known = True
        for group in groups:
            played = await play_episodes(group, Play(name, policy), episodes=n, seed=seed)
            won = [e.won for e in played]
            known &= all(w is not None for w in won)
            per_problem.append(sum(bool(w) for w in won) / len(won))
            rewards.append(sum(e.reward or 0.0 for e in played) / len(played))
            example = example or played[0].replies
        out.append(
            GameBaseline(
                name,
                _mean(per_problem) if known else None,
                _mean(rewards),
                tuple(per_problem),
                tuple(rewards),
                example,
            )
        )
    return out


def best_game_baseline(found: Sequence[GameBaseline]) -> GameBaseline | None:
    """The trivial game policy that wins most (ties: the first); None when none says.

    Example::

        best_game_baseline([GameBaseline("first option", 0.2, 0.0, (), ()),
                            GameBaseline("options in order", 0.6, 0.0, (), ())]).name
        # 'options in order'
    """
    known = [b for b in found if b.success is not None]
    return max(known, key=lambda b: b.success or 0.0) if known else None


async def honest_loss(
    group: Any, *, seed: int = 0, right_reward: float | None = None
) -> Episode | None:
    """An honest losing episode of ``group``'s problem: valid wrong moves until out of
    turns (the options in order, else from the other end; where the game offers no
    options, wrong numbers when its answer is one); None when both orders win or no
    wrong move can be made. ``right_reward``: what a winning episode earns, for an
    env with no success metric and no ``correct`` (a win is earning it).

    Example::

        # not run: `group` is a GroupBuilder of a game, built elsewhere
        (await honest_loss(group)).reward   # -0.5
    """
    for policy in (wrong_moves, wrong_moves_reversed):
        play = Play(LOSING, policy)
        episode = (await play_episodes(group, play, seed=seed, right_reward=right_reward))[0]
        moved = episode.legal or (all(episode.replies) and not any(episode.options))
        if episode.won is False and moved and episode.reward is not None:
            return episode
    return None


ENDINGS = (
    "cut off at the reply limit on turn 1",
    "cut off at the reply limit on the last turn",
    "no stop token on turn 1",
    "no valid move until out of turns",
)
"""The endings held to an honest losing episode; before the turn that ends it, an ending
plays the honest losing episode's moves (:func:`endings`).

Example::

    ENDINGS[0]   # 'cut off at the reply limit on turn 1'
"""


def endings(moves: Sequence[str] = ()) -> tuple[Play, ...]:
    """The :data:`ENDINGS` as plays, after ``moves`` (an honest losing episode's).

    Example::

        [p.ending for p in endings(["red"])]   # ['cut_off', 'cut_off', 'no_stop', None]
    """
    policy = replaying(moves) if moves else wrong_moves
    first, last, no_stop, silent = ENDINGS
    return (
        Play(first, policy, "cut_off", 0),
        Play(last, policy, "cut_off", -1),
        Play(no_stop, policy, "no_stop", 0),
        Play(silent, lambda view: ""),
    )


@attrs.frozen
class GameOrdering:
    """The ordering rule for a game, measured on one problem.

    Attributes:
        losing: the honest losing episode (None: none could be played).
        endings: each ending's name -> its reward (None where the env raised).
        above: the endings that earn more than the honest losing episode.
        unreached: the endings the game never got to (it was over before their turn):
            not compared, and shown as such.

    Example::

        # not run: see game_ordering
        ordering.held, ordering.lines()
    """

    losing: Episode | None
    endings: dict[str, float | None]
    above: dict[str, float]
    unreached: frozenset[str] = frozenset()

    @property
    def held(self) -> bool | None:
        """Whether no ending earns more (None: no honest losing episode to compare)."""
        return None if self.losing is None else not self.above

    def lines(self) -> list[str]:
        """The measurement and the verdict, in words.

        Example::

            # not run: see game_ordering
            print("\\n".join(ordering.lines()))
        """
        if self.losing is None:
            return [
                "ordering rule: NOT MEASURED: no honest losing episode could be played (the "
                "env offers no options a move can be read from, or every order of them wins)"
            ]
        moves = ", ".join(repr(r) for r in self.losing.replies[:6])
        more = ", ..." if len(self.losing.replies) > 6 else ""
        out = [
            f"an honest losing episode ({LOSING}: {moves}{more}) earns "
            f"{self.losing.reward:+.3f}; the endings held to it:"
        ]
        for name, reward in self.endings.items():
            if name in self.unreached:
                out.append(f"  {name:<46} {'-':>7}  not reached: the game was over first")
                continue
            shown = "error" if reward is None else f"{reward:+.3f}"
            mark = "ABOVE" if name in self.above else "ok"
            out.append(f"  {name:<46} {shown:>7}  {mark}")
        if self.above:
            worst = max(self.above, key=lambda n: self.above[n])
            out.append(
                f"ordering rule: BROKEN: '{worst}' earns {self.above[worst]:+.3f}, more than "
                f"an honest losing episode ({self.losing.reward:+.3f}): RL teaches the model "
                "to end its games that way instead of playing; lower that ending's reward "
                "(DatasetBuilder(context_overflow_reward=...) for a cut-off reply, "
                "failed_parse_reward=... without the stop token, the env's reward for a "
                "reply with no valid move) to at most the honest losing episode's"
            )
        else:
            out.append(
                "ordering rule: held (no episode cut off, without the stop token or without "
                "a valid move earns more than an honest losing one)"
            )
        return out


async def game_ordering(group: Any, *, seed: int = 0) -> GameOrdering:
    """The ordering rule for ``group``'s game, played: each of :data:`ENDINGS` against an
    honest losing episode (:func:`honest_loss`).

    Example::

        # not run: `group` is a GroupBuilder of a game, built elsewhere
        ordering = await game_ordering(group)
        ordering.held, ordering.above   # (False, {'cut off at the reply limit on turn 1': -0.1})
    """
    losing = await honest_loss(group, seed=seed)
    rewards: dict[str, float | None] = {}
    unreached = set()
    for play in endings(() if losing is None else losing.replies):
        episode = (await play_episodes(group, play, seed=seed))[0]
        rewards[play.name] = episode.reward
        if episode.ended is False:  # the game was over before this ending's turn
            unreached.add(play.name)
    known = {k: v for k, v in rewards.items() if v is not None and k not in unreached}
    above = {} if losing is None else above_yardstick(losing.reward or 0.0, known, tolerance=TIE)
    return GameOrdering(losing, rewards, above, frozenset(unreached))
