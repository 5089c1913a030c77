"""The audit of a game: probes that play whole episodes, held to an honest losing one.

A multi-turn game (:func:`~mint_envkit.rollouts.game_moves.is_game`) is not judged by one
reply. Its yardsticks are episodes: ``wins`` (the problem's answer, in the form the env
pays, every turn) and ``loses_honestly`` (valid wrong moves until out of turns: the
offered options in order, never the answer). Each probe is named by what it does in an
episode, and played through the env's real path
(:func:`~mint_envkit.rollouts.game_moves.play_episodes`):

| probe | kind | what it does in an episode |
|---|---|---|
| ``wins`` | reference | says the answer every turn |
| ``loses_honestly`` | answer_shaped | valid wrong moves until out of turns |
| ``random_option``, ``first_option``, ``repeats_first_guess``, ``options_in_order`` | answer_shaped | the trivial game policies |
| ``says_nothing`` | non_answer | an empty reply every turn |
| ``cut_off_turn_1`` | non_answer | a reply cut off at the reply limit on turn 1 |
| ``cut_off_last_turn`` | non_answer | valid wrong moves, then cut off on the last turn |
| ``no_stop_turn_1`` | non_answer | a reply without the stop token on turn 1 |
| ``rambles`` | non_answer | filler within the reply limit every turn |
| ``appeals`` | non_answer | an appeal to the grader every turn |
| ``echoes_system`` | non_answer | the system prompt every turn |
| ``repeats_feedback`` | non_answer | the env's last message every turn |
| ``thinks_only`` | non_answer | the answer only inside ``<think>``, every turn |
| ``lists_every_option`` | non_answer | every offered option in one reply, every turn |
| ``hedges`` | non_answer | "either <answer> or <a wrong option>" every turn |

A ``non_answer`` probe (but the endings) whose replies are mostly legal moves (each
names exactly one offered option outside its thinking) plays the game: its kind is ``plays`` (judged like an answer-shaped
probe), never "no answer". The rules (:func:`~mint_envkit.auditing.rules.findings` with
:data:`~mint_envkit.auditing.rules.GAME`) then compare: a probe that makes no valid move
may earn no more than an honest losing episode; no probe but ``wins`` may earn as much
as a winning one. The baseline is the best trivial game policy
(:func:`~mint_envkit.rollouts.game_policies.game_baselines`).

Example::

    # not run: `problems` are the AuditedProblems of a game, built elsewhere
    from mint_envkit.auditing.game_probes import run_game_probes

    rows = await run_game_probes(problems, [], quiet=True)
    {r.name: r.mean_reward for r in rows}   # {'wins': 1.0, 'loses_honestly': -0.5, ...}
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mint_envkit.auditing.probes import AuditedProblem, Found, Judged, ProbeResult
from mint_envkit.auditing.replies import APPEAL, last_user, long_filler, system_text
from mint_envkit.auditing.rules import PLAYS
from mint_envkit.envs.base import AuditProbe
from mint_envkit.progress import track
from mint_envkit.rollouts.game_moves import (
    TRIVIAL_GAME_POLICIES,
    Episode,
    Play,
    Turn,
    play_episodes,
)
from mint_envkit.rollouts.game_policies import endings, honest_loss
from mint_envkit.rollouts.judging import BY_REWARD
from mint_envkit.rollouts.settings import SamplingSettings

PLAYS_SHARE = 0.5
"""A non-answer game probe whose replies are legal moves in more than this share plays.

Example::

    0.75 > PLAYS_SHARE   # True: three legal moves of four play the game
"""


@attrs.frozen
class GameProbe:
    """One game probe on one problem.

    Attributes:
        name: the probe's name in the table.
        kind: ``reference``, ``answer_shaped`` or ``non_answer``.
        does: what it does in an episode, in words.
        plays: its orderings (it earns the least of them).

    Example::

        GameProbe("says_nothing", "non_answer", "an empty reply every turn",
                  (Play("says nothing", lambda view: ""),))
    """

    name: str
    kind: str
    does: str
    plays: tuple[Play, ...]


def _constant(text: str) -> Play:
    return Play(text, lambda view: text)


def _wrong_option(view: Turn) -> str:
    answer = (view.answer or "").strip().lower()
    return next((o for o in view.options if o.strip().lower() != answer), "")


def game_probes(
    problem: AuditedProblem, extra: Sequence[AuditProbe] = (), losing: Sequence[str] = ()
) -> list[GameProbe]:
    """Every game probe that applies to ``problem`` (those needing an answer, a system
    prompt or offered options are left out where there is none); ``losing``: the moves
    of its honest losing episode, which the endings play before they end.

    Example::

        # not run: `problem` is an AuditedProblem of a game, built elsewhere
        [p.name for p in game_probes(problem)][:2]   # ['wins', 'random_option']
    """
    template, answer = problem.judge.template, problem.answer
    out: list[GameProbe] = []

    def add(name: str, kind: str, does: str, *plays: Play) -> None:
        out.append(GameProbe(name, kind, does, plays))

    reference = problem.judge.reference
    if reference is not None and problem.judge.basis is not None:
        add("wins", "reference", "says the answer every turn", _constant(reference.reply))
    for name, policy in TRIVIAL_GAME_POLICIES.items():
        add(name.replace(" ", "_").replace("repeat_", "repeats_"), "answer_shaped",
            f"the trivial game policy '{name}'", Play(name, policy))  # fmt: skip
    add("says_nothing", "non_answer", "an empty reply every turn", _constant(""))
    first, last, no_stop, _silent = endings(losing)
    add("cut_off_turn_1", "non_answer", "a reply cut off at the reply limit on turn 1", first)
    add("cut_off_last_turn", "non_answer",
        "valid wrong moves, then a reply cut off at the reply limit on the last turn", last)  # fmt: skip
    add("no_stop_turn_1", "non_answer", "a reply without the stop token on turn 1", no_stop)
    limit = SamplingSettings().reply_limit(problem.group.max_generation_tokens)
    tokenizer = problem.group.renderer().tokenizer
    filler = long_filler(limit, lambda t: len(tokenizer.encode(t, add_special_tokens=False)))
    add("rambles", "non_answer", "filler within the reply limit every turn", _constant(filler))
    add("appeals", "non_answer", "an appeal to the grader every turn", _constant(APPEAL))
    system = system_text(problem.messages)
    if system:
        add("echoes_system", "non_answer", "the system prompt every turn", _constant(system))
    add("repeats_feedback", "non_answer", "the env's last message every turn",
        Play("repeats", lambda view: last_user(view.messages)))  # fmt: skip
    add("lists_every_option", "non_answer", "every offered option in one reply, every turn",
        Play("list", lambda v: template.format(", ".join(v.options))),
        Play("list", lambda v: template.format(", ".join(v.options[::-1]))))  # fmt: skip
    if answer:
        add("thinks_only", "non_answer", "the answer only inside <think>, every turn",
            _constant(f"<think>{answer}</think>"))  # fmt: skip
        add("hedges", "non_answer", "'either <answer> or <a wrong option>' every turn",
            Play("hedge", lambda v: template.format(f"either {answer} or {_wrong_option(v)}")),
            Play("hedge", lambda v: template.format(f"either {_wrong_option(v)} or {answer}")))  # fmt: skip
    fill = {"answer": answer, "wrong": "", "question": last_user(problem.messages)}
    for probe in [*problem.own, *extra]:
        try:
            text = probe.reply.format(**fill)
        except (KeyError, IndexError, ValueError):
            text = probe.reply
        add(probe.name, probe.kind, "its reply every turn", _constant(text))
    return out


async def run_game_probes(
    problems: Sequence[AuditedProblem], extra: Sequence[AuditProbe] = (), *, quiet: bool = False
) -> list[ProbeResult]:
    """Every game probe over ``problems``, with ``loses_honestly`` (the honest losing
    episode of each problem, where one can be played).

    Example::

        # not run: see the module example
        rows = await run_game_probes(problems, quiet=True)
    """
    found = Found()
    does: dict[str, str] = {"loses_honestly": "valid wrong moves until out of turns"}
    legal: dict[str, list[float]] = {}
    order: list[str] = []
    with track("audit game probes", len(problems), "problems", enabled=not quiet) as task:
        for problem in problems:
            judge = problem.judge
            right = judge.right_reward if judge.basis == BY_REWARD else None
            wins = judge.right_reward if judge.basis is not None else None
            losing = await honest_loss(problem.group, right_reward=right)
            probes = game_probes(problem, extra, () if losing is None else losing.replies)
            for probe in probes[:1] if probes and probes[0].kind == "reference" else []:
                await _add(found, probe, problem, (right, wins), legal)
            if losing is not None:
                found.add("loses_honestly", "answer_shaped", [_judged(losing)], wins)
            for probe in probes:
                does.setdefault(probe.name, probe.does)
                order += [probe.name] if probe.name not in order else []
                if probe.kind != "reference":
                    await _add(found, probe, problem, (right, wins), legal)
            task.advance()
    for name, shares in legal.items():
        if shares and sum(shares) / len(shares) > PLAYS_SHARE:
            found.kinds[name] = PLAYS
    rows = found.results()
    return [
        attrs.evolve(
            row,
            kind=found.kinds[row.name],
            does=("plays a legal move most turns: " if found.kinds[row.name] == PLAYS else "")
            + does.get(row.name, ""),
        )
        for row in rows
    ]


def _judged(episode: Episode) -> Judged:
    return Judged(episode.score, episode.won)


async def _add(
    found: Found,
    probe: GameProbe,
    problem: AuditedProblem,
    rewards: tuple[float | None, float | None],
    legal: dict[str, list[float]],
) -> None:
    """Play ``probe`` on ``problem``; ``rewards``: what a win earns when success is judged
    by reward (else None), and what a winning episode earns (for the shares). An ending
    the game finished before (a TicTacToe game is over long before its turn limit) is not
    that ending: its episode does not count, and the probe is not measured on the problem
    when none does."""
    right, wins = rewards
    played = [
        (await play_episodes(problem.group, play, right_reward=right))[0] for play in probe.plays
    ]
    episodes = [e for e in played if e.ended is not False]
    if not episodes:
        return
    found.add(probe.name, probe.kind, [_judged(e) for e in episodes], wins)
    if probe.kind == "non_answer" and all(play.ending is None for play in probe.plays):
        legal.setdefault(probe.name, []).extend(e.legal_share for e in episodes)
