"""A game's moves: the options a conversation offers, policies that pick among them, and
episodes played by them through the env's real path.

The offered options (:func:`offered_options`): ``A) ... B) ...`` labels, ``[e2e4]`` moves
(the newest line that ends in a list of them after a colon, when there is one), a list
after a colon, "red, green or blue", quoted strings, bullets, a range "between 1 and
100". A policy (:class:`Turn` -> reply) picks a move; a :class:`Play` is a policy
with, optionally, an ending (cut off at the reply limit, no stop token) at a turn;
:func:`play_episodes` plays it on a problem and judges each episode won by the env's
success metric (:attr:`~mint_envkit.MessageEnv.success_metric`, else ``correct``)
through :func:`~mint_envkit.rollouts.judging.is_right`. The trivial game policies and
the ordering rule for games that use them are in
:mod:`mint_envkit.rollouts.game_policies`.

Example::

    # not run: `group` is a GroupBuilder of a guessing game, built elsewhere
    from mint_envkit.rollouts.game_moves import TRIVIAL_GAME_POLICIES, Play, play_episodes

    episodes = await play_episodes(group, Play("first", TRIVIAL_GAME_POLICIES["first option"]))
    episodes[0].won, episodes[0].replies, episodes[0].legal   # (False, ('red', ...), True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import attrs

from mint_envkit.envs.base import Message, reference_answer, success_name
from mint_envkit.parsers import as_number
from mint_envkit.parsers.candidates import prompt_candidates
from mint_envkit.rollouts.judging import ReplyScore, answer_text, is_right
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import SampleRequest
from mint_envkit.rollouts.types import SampledTokens

_COLON_LIST = re.compile(r":[ \t]*((?:[^,:;.?!\n]{1,40},[ \t]*)+[^,:;.?!\n]{1,40})")
_BRACKETED = re.compile(r"\[([^\[\]\n]{1,30})\]")
_MOVE = r"['\"]?\[[^\[\]\n]{1,30}\]['\"]?"
_MOVE_LIST = re.compile(rf":[ \t]*({_MOVE}(?:[ \t]*,[ \t]*{_MOVE})*)[ \t]*$", re.M)
_RANGE = re.compile(r"(?:between|from)\s+(-?\d+)\s+(?:and|to)\s+(-?\d+)|\b(\d+)(?:-|\.\.)(\d+)\b")
_MAX_OPTIONS = 1000
_MAX_WORDS = 3
_FILLER = "Let me think about this step by step, carefully and slowly. " * 8


def options_in(text: str) -> list[str]:
    """The moves one message offers, in order (empty when it offers none).

    Example::

        options_in("Guess a colour: red, green, blue.")          # ['red', 'green', 'blue']
        options_in("I am thinking of a number between 1 and 4.")  # ['1', '2', '3', '4']
        options_in("Higher.")                                     # []
        options_in("[GAME] Your turn. Available Moves: '[1]', '[5]'")  # ['[1]', '[5]']
    """
    found = prompt_candidates(text)
    if len(found["option"]) >= 2:
        return _distinct(c.text for c in found["option"])
    listed = _MOVE_LIST.findall(text)
    if listed:  # "Available Moves: '[1]', '[5]'" ending a line: the newest, not every [tag]
        return _distinct(f"[{m}]" for m in _BRACKETED.findall(listed[-1]))
    bracketed = [f"[{m}]" for m in _BRACKETED.findall(text)]
    if len(bracketed) >= 2:
        return _distinct(bracketed)
    for match in _COLON_LIST.finditer(text):
        items = [re.sub(r"^(?:or|and)\s+", "", i.strip()) for i in match.group(1).split(",")]
        if len(items) >= 2 and all(i and len(i.split()) <= _MAX_WORDS for i in items):
            return _distinct(items)
    for kind in ("alternative", "quoted", "listed"):
        if len(found[kind]) >= 2:
            return _distinct(c.text for c in found[kind])
    match = _RANGE.search(text)
    if match:
        low, high = (int(v) for v in (g for g in match.groups() if g is not None))
        if low < high and high - low < _MAX_OPTIONS:
            return [str(v) for v in range(low, high + 1)]
    return []


def _distinct(items: Any) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def offered_options(messages: Sequence[Message]) -> list[str]:
    """The moves the conversation offers now: those of the latest message (not the
    model's) that offers any, else none.

    Example::

        offered_options([{"role": "user", "content": "Pick: red, green, blue."},
                         {"role": "assistant", "content": "red"},
                         {"role": "user", "content": "No."}])   # ['red', 'green', 'blue']
    """
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") != "assistant" and isinstance(content, str):
            found = options_in(content)
            if found:
                return found
    return []


_THINKING = re.compile(r"<think>.*?(?:</think>|$)", re.S)


def names_one_option(reply: str, options: Sequence[str]) -> bool:
    """Whether ``reply`` names exactly one of ``options`` outside its thinking (a legal
    move, not a list).

    Example::

        names_one_option("I say red.", ["red", "green"])           # True
        names_one_option("red or green", ["red", "green"])         # False
        names_one_option("<think>red</think>", ["red", "green"])   # False
    """
    reply = _THINKING.sub("", reply)
    named = 0
    for option in options:
        if re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", reply, re.I):
            named += 1
            if named > 1:
                return False
    return named == 1


@attrs.frozen
class Turn:
    """What a game policy sees at one turn.

    Attributes:
        messages: the conversation so far.
        options: the moves offered now (:func:`offered_options`).
        said: this episode's earlier replies.
        turn: the turn (0 for the first).
        answer: the problem's answer as a reply writes it, None when it has none.
        rng: this episode's and turn's seeded random source.

    Example::

        Turn([], ("red", "green"), (), 0, None, random.Random(0)).options[0]   # 'red'
    """

    messages: list[Message]
    options: tuple[str, ...]
    said: tuple[str, ...]
    turn: int
    answer: str | None
    rng: random.Random


Policy = Callable[[Turn], str]


def _random(view: Turn) -> str:
    return view.rng.choice(view.options) if view.options else ""


def _first(view: Turn) -> str:
    return view.options[0] if view.options else ""


def _repeat(view: Turn) -> str:
    return view.said[0] if view.said else _random(view)


def _in_order(view: Turn) -> str:
    fresh = [o for o in view.options if o not in view.said]
    return fresh[0] if fresh else _first(view)


def _wrong_number(view: Turn) -> str:
    """A wrong move where the game offers none: the answer (a number) plus the turn and
    one, never the answer; "" when the answer is no number."""
    number = as_number(view.answer or "")
    try:
        value = Fraction(number) + view.turn + 1 if number is not None else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None:
        return ""
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def _wrong_moves(options: Sequence[str], view: Turn) -> str:
    if not options:
        return _wrong_number(view)
    answer = (view.answer or "").strip().lower()
    wrong = [o for o in options if o.strip().lower() != answer]
    fresh = [o for o in wrong if o not in view.said]
    return (fresh or wrong or [""])[0]


def wrong_moves(view: Turn) -> str:
    return _wrong_moves(view.options, view)


def wrong_moves_reversed(view: Turn) -> str:
    return _wrong_moves(view.options[::-1], view)


def replaying(moves: Sequence[str]) -> Policy:
    """A policy that says ``moves`` in turn (an honest losing episode's, so that an
    ending played after them cannot win by chance), then valid wrong moves.

    Example::

        replaying(["red", "blue"])(Turn([], ("red", "blue"), (), 1, None, random.Random(0)))
        # 'blue'
    """

    def policy(view: Turn) -> str:
        return moves[view.turn] if view.turn < len(moves) else wrong_moves(view)

    return policy


TRIVIAL_GAME_POLICIES: dict[str, Policy] = {
    "random option": _random,
    "first option": _first,
    "repeat first guess": _repeat,
    "options in order": _in_order,
}
"""The trivial game policies, by name: what a model that does not read the game's
feedback can win.

Example::

    sorted(TRIVIAL_GAME_POLICIES)[0]   # 'first option'
"""

LOSING = "valid wrong moves"
"""The honest losing episode's policy, in words: the offered options in order, never the
answer (from the other end of the options when that order happens to win); where the
game offers no options and its answer is a number, wrong numbers (the answer plus 1, 2,
...).

Example::

    LOSING   # 'valid wrong moves'
"""


@attrs.frozen
class Play:
    """How one episode is played: a policy, and where it ends otherwise.

    Attributes:
        name: the play in words.
        policy: the move at each turn.
        ending: None, ``"cut_off"`` (the reply runs to the reply limit) or ``"no_stop"``
            (the reply ends without the stop token).
        at: the turn of that ending (0: the first; -1: the last the env allows).

    Example::

        Play("cut off on turn 1", TRIVIAL_GAME_POLICIES["first option"], "cut_off", 0)
    """

    name: str
    policy: Policy
    ending: str | None = None
    at: int = 0


@attrs.frozen
class Episode:
    """One played episode.

    Attributes:
        score: its reward and success as the env scored it (``correct``: won).
        won: :func:`~mint_envkit.rollouts.judging.is_right` of it (None: the env says
            nothing of success).
        replies: each turn's reply; options: the moves offered at each turn.
        legal: every reply named exactly one offered move.
        ended: whether the play's ending (cut off, no stop token) happened: False when
            the game finished before the turn of it; None for a play without one.

    Example::

        # not run: see play_episodes
        episode.score.reward, episode.won, episode.replies
    """

    score: ReplyScore
    won: bool | None
    replies: tuple[str, ...]
    options: tuple[tuple[str, ...], ...]
    ended: bool | None = None

    @property
    def reward(self) -> float | None:
        """The episode's total reward (None when the env raised)."""
        return self.score.reward

    @property
    def legal(self) -> bool:
        """Every reply named exactly one of the moves offered at its turn."""
        return bool(self.replies) and self.legal_share == 1.0

    @property
    def legal_share(self) -> float:
        """The share of its replies that named exactly one of the moves offered at their
        turn (0.0 without replies)."""
        pairs = list(zip(self.replies, self.options, strict=True))
        return sum(names_one_option(r, o) for r, o in pairs) / len(pairs) if pairs else 0.0


class _Player:
    """The sampler of :func:`play_episodes`: env ``i`` plays ``play`` with its own seed."""

    def __init__(
        self,
        play: Play | Callable[[list[Message]], str],
        seed: int,
        answer: str | None,
        last: int,
    ) -> None:
        self.play = play if isinstance(play, Play) else Play("reply", lambda v: play(v.messages))
        self.seed, self.answer, self.last = seed, answer, last
        self.sent: dict[int, list[tuple[str, tuple[str, ...]]]] = {}
        self.ended: set[int] = set()  # the envs whose ending happened

    def _ends(self, turn: int) -> str | None:
        at = self.play.at if self.play.at >= 0 else self.last
        return self.play.ending if turn == at else None

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        out = []
        tokenizer = request.renderer.tokenizer
        stop = request.renderer.get_stop_sequences()[0]
        for position in range(request.num_samples):
            index = request.env_index + position
            sent = self.sent.setdefault(index, [])
            options = tuple(offered_options(request.messages))
            rng = random.Random(f"{self.seed}|{index}|{request.turn}|{request.messages[:2]}")
            view = Turn(
                list(request.messages), options, tuple(t for t, _ in sent), request.turn,
                self.answer, rng,
            )  # fmt: skip
            ending = self._ends(request.turn)
            if ending is not None:
                self.ended.add(index)
            text = _FILLER if ending == "cut_off" else self.play.policy(view)
            sent.append((text, options))
            tokens = list(tokenizer.encode(text, add_special_tokens=False))
            if ending == "cut_off":
                out.append(SampledTokens(tokens=tokens, logprobs=None, stop_reason="length"))
            elif ending == "no_stop":
                out.append(SampledTokens(tokens=tokens, logprobs=None, stop_reason="stop"))
            else:
                out.append(SampledTokens(tokens=[*tokens, stop], logprobs=None, stop_reason="stop"))
        return out


def _answer_of(group: Any) -> str | None:
    answer = group.problem.get("answer")
    if answer is None:
        try:
            answer = reference_answer(group.make_message_env())
        except Exception:  # an env that cannot be made: its episodes say why
            answer = None
    return None if answer is None else answer_text(answer)


def _game_facts(group: Any) -> tuple[str, int]:
    """The env's success metric's name and its last turn (0-based)."""
    env = group.make_message_env()
    turns = getattr(env, "max_turns", 1)
    return success_name(env), (turns - 1 if isinstance(turns, int) and turns >= 1 else 0)


async def play_episodes(
    group: Any,
    play: Play | Callable[[list[Message]], str],
    *,
    episodes: int = 1,
    seed: int = 0,
    right_reward: float | None = None,
) -> list[Episode]:
    """``episodes`` episodes of ``group``'s problem played by ``play`` (a :class:`Play`,
    or a function of the conversation) through the env's real path, each judged won by
    the env's success metric (or, without one, by earning ``right_reward``).

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        [e.won for e in await play_episodes(group, Play("first", TRIVIAL_GAME_POLICIES["first option"]))]
    """
    success, last = _game_facts(group)
    player = _Player(play, seed, _answer_of(group), last)
    one = attrs.evolve(group, group_size=episodes)
    rollout = (await rollout_groups([one], player))[0]
    if rollout.error is not None or not rollout.trajectories:
        score = ReplyScore.failed("", rollout.error or "no episode ran")
        return [Episode(score, None, (), ())] * episodes
    out = []
    for index, trajectory in enumerate(rollout.trajectories):
        sent = player.sent.get(index, [])
        last_step = trajectory.transitions[-1]
        reply = sent[-1][0] if sent else ""
        score = ReplyScore.of_step(
            reply, trajectory.total_reward, trajectory.metrics, last_step.logs, success=success
        )
        out.append(
            Episode(
                score,
                is_right(score, right_reward),
                tuple(t for t, _ in sent),
                tuple(o for _, o in sent),
                None if player.play.ending is None else index in player.ended,
            )
        )
    return out


def is_game(env: Any) -> bool:
    """Whether ``env`` (an env or its class) is a game: a multi-turn env judged by its
    episodes, not one answer (a :class:`~mint_envkit.ToolEnv` answers once, behind its
    tools).

    Example::

        from mint_envkit import SingleTurnEnv

        is_game(SingleTurnEnv)   # False
    """
    from mint_envkit.envs.multi_turn import MultiTurnEnv
    from mint_envkit.envs.scoring import AnswerScoring

    cls = env if isinstance(env, type) else type(env)
    return issubclass(cls, MultiTurnEnv) and not issubclass(cls, AnswerScoring)
