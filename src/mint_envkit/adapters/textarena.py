"""TextArena games in our loop: :func:`from_textarena` makes a DatasetBuilder of one game.

`TextArena <https://github.com/LeonGuertler/TextArena>`_ holds about a hundred text games
(``ta.make("TicTacToe-v0")``): each game deals observations, takes a player's action as
text, applies its own rules (an invalid move gets a warning and one more try, then loses:
the game's ``error_allowance``) and gives each player a reward at the end. The game is a
:class:`~mint_envkit.MultiTurnEnv` here:

- a problem is a seed (``{"seed": 3}``): the game is reset with it, so every env of a
  group plays the same deal; held-out problems are other seeds;
- the model plays one player (``player``); the first user message is that player's
  observations (the rules, the board), each later one what happened since its last
  move, the board shown once, as the newest;
- a two-player game is played against a fixed ``opponent``: ``"random"`` (the default:
  a random move among those the game lists, ``Available Moves: '[0]', '[4]'``), or a
  function ``(observation) -> action``, sync or async (a scripted policy, or a model you
  sample: the base model or a checkpoint), given the opponent's observations so far;
- the reward is the game's own for the model's player, paid on the last turn; the
  metrics are ``invalid_moves`` (the model's rejected moves), ``won``, ``draw``,
  ``lost`` (two players) or ``solved`` (one player: the game's reward is 1), and the
  env's :attr:`~mint_envkit.MessageEnv.success_metric` is ``won`` or ``solved``, so
  evaluations, the audit and the loop's held-out evals judge episodes by it, beside
  the trivial game policies (a random offered move, the first...);
- a reply cut off, without a stop token or over ``max_turns`` earns the game's loss
  (``loss_reward``: -1 with two players, 0 alone), never more (the ordering rule).

The game's randomness is its own per episode: TextArena draws from Python's global
``random`` (seeded by ``reset``), which each env swaps in and out around every call into
the game, so concurrent episodes do not draw from each other's stream. Nothing is
downloaded: a word game whose module asks ``nltk`` for data that is not on this machine
is a ConfigError naming the data.

Example::

    from mint_envkit.adapters import from_textarena
    from mint_envkit.rollouts import ScriptedPolicy

    builder = from_textarena("TicTacToe-v0", opponent="random", seeds=2, group_size=2)
    report = ScriptedPolicy(["[0]", "[4]"]).run_sync(builder)
    rewards = [r for group in report.groups for r in group.rewards]
    assert set(rewards) <= {-1.0, 0.0, 1.0}
    assert all("invalid_moves" in m for group in report.groups for m in group.metrics)
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import random
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from mint_envkit.adapters.extras import require
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.checks import is_integer
from mint_envkit.envs.base import Message
from mint_envkit.envs.multi_turn import Feedback, MultiTurnEnv
from mint_envkit.errors import ConfigError, EnvError
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME

Opponent = Callable[[str], "str | Awaitable[str]"]
"""A fixed opponent: its observations so far (text) -> its action, sync or async.

Example::

    def always_center(observation: str) -> str:
        return "[4]"
"""

TEST_SEED_START = 1_000_000
"""Where ``test_seeds=N`` starts counting: held-out seeds never meet ``seeds=N``'s.

Example::

    TEST_SEED_START   # 1000000
"""

_BRACKETS = re.compile(r"\[[^\[\]\n]+\]")
_OPPONENT_MOVES = 1000  # a bound on opponent moves between two of the model's


def import_textarena() -> Any:
    """``textarena``, or MissingExtraError naming the extra.

    Example::

        import_textarena().envs.registration.ENV_REGISTRY["TicTacToe-v0"].id   # 'TicTacToe-v0'
    """
    return require("textarena", extra="textarena", purpose="TextArena games (from_textarena)")


@contextlib.contextmanager
def _offline(game_id: str) -> Iterator[None]:
    """While a game loads: ``nltk.download`` finds data on this machine or says which is missing."""
    try:
        import nltk
    except ImportError:
        yield
        return

    def have(name: str) -> bool:
        for kind in ("corpora", "taggers", "tokenizers", ""):
            try:
                nltk.data.find(f"{kind}/{name}" if kind else name)
                return True
            except LookupError:
                continue
        return False

    def download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
        names = [info_or_id] if isinstance(info_or_id, str) else list(info_or_id or [])
        missing = [name for name in names if not have(name)]
        if missing:
            raise ConfigError(
                f"TextArena game {game_id!r} needs the nltk data {', '.join(missing)}, which "
                "is not on this machine, and mint_envkit downloads nothing at run time; "
                f"install it first (python -m nltk.downloader {' '.join(missing)}), or play a "
                "game without word lists"
            )
        return True

    real = nltk.download
    nltk.download = download
    try:
        yield
    finally:
        nltk.download = real


def _make(game_id: str, game_args: Mapping[str, Any]) -> Any:
    """The game without TextArena's observation wrappers (we show observations ourselves),
    with its action wrappers (``ActionFormattingWrapper``: a move without brackets gets them)."""
    ta = import_textarena()
    from textarena.envs.registration import ENV_REGISTRY

    spec = ENV_REGISTRY.get(game_id)
    if spec is None:
        close = [name for name in ENV_REGISTRY if game_id.lower().split("-")[0] in name.lower()]
        hint = f"; did you mean {', '.join(close[:5])}?" if close else ""
        raise ConfigError(
            f"TextArena has no game {game_id!r}{hint} (textarena.envs.registration."
            f"ENV_REGISTRY lists its {len(ENV_REGISTRY)} ids)"
        )
    entry = spec.entry_point
    with _offline(game_id):
        if isinstance(entry, str):
            module, name = entry.split(":")
            entry = getattr(importlib.import_module(module), name)
        game = entry(**{**spec.kwargs, **dict(game_args)})
    for wrapper in spec.default_wrappers or []:
        if issubclass(wrapper, ta.ActionWrapper):
            game = wrapper(game)
    return game


def _players(game_id: str, game_args: Mapping[str, Any]) -> int:
    """How many players the game takes: 1 or 2 (it is reset with each, the first that fits)."""
    for players in (1, 2):
        game = _make(game_id, game_args)
        with _own_random(random.Random(0).getstate()):
            try:
                game.reset(num_players=players, seed=0)
            except (AssertionError, ValueError):
                continue
        return players
    raise ConfigError(
        f"TextArena game {game_id!r} takes neither one nor two players; from_textarena plays "
        "one-player games and two-player games against a fixed opponent"
    )


@contextlib.contextmanager
def _own_random(state: Any) -> Iterator[list[Any]]:
    """Python's global ``random`` set to ``state`` inside; its new state in the yielded box."""
    saved = random.getstate()
    random.setstate(state)
    box = [state]
    try:
        yield box
    finally:
        box[0] = random.getstate()
        random.setstate(saved)


def _text(messages: Sequence[Any], skip_from: int | None = None, boards: str = "last") -> str:
    """TextArena observations as one message: ``[GAME] ...`` / ``[Player 1] ...`` lines.

    ``skip_from``'s own actions are left out (the conversation holds them); with
    ``boards="last"`` only the newest board is shown.
    """
    import textarena as ta

    kinds = [kind for _, _, kind in messages]
    last_board = max(
        (i for i, kind in enumerate(kinds) if kind == ta.ObservationType.GAME_BOARD), default=-1
    )
    lines = []
    for i, (sender, text, kind) in enumerate(messages):
        if sender == skip_from and kind == ta.ObservationType.PLAYER_ACTION:
            continue
        if boards == "last" and kind == ta.ObservationType.GAME_BOARD and i != last_board:
            continue
        who = "GAME" if sender == ta.GAME_ID else f"Player {sender}"
        lines.append(f"[{who}] {text}")
    return "\n".join(lines)


def listed_moves(observation: str) -> list[str]:
    """The moves a game lists in its latest "available ..." line (``'[0]', '[4]'`` -> both).

    Example::

        listed_moves("Current Board: ...\\nAvailable Moves: '[0]', '[4]'")   # ['[0]', '[4]']
    """
    for line in reversed(observation.splitlines()):
        if "available" in line.lower():
            moves = _BRACKETS.findall(line)
            if moves:
                return moves
    return []


class TextArenaEnv(MultiTurnEnv):
    """One TextArena game as a :class:`~mint_envkit.MultiTurnEnv`; the problem is a seed.

    :func:`from_textarena` makes a subclass per game (``game_id``, ``game_args``,
    ``players``, ``player``, ``opponent``, ``loss_reward``...); write with that.

    Example::

        env = builder.env(seed=0)
        opening = await env.initial_observation()
        opening[-1]["content"].startswith("[GAME] You are Player 0 in Tic Tac Toe.")   # True
    """

    game_id: ClassVar[str] = ""
    game_args: ClassVar[Mapping[str, Any]] = {}
    players: ClassVar[int] = 1
    player: ClassVar[int] = 0
    opponent: ClassVar[Any] = None
    loss_reward: ClassVar[float] = 0.0
    required_fields: ClassVar[tuple[str, ...]] = ("seed",)

    @classmethod
    def wrong_answer_reward(cls) -> float | None:
        """The game's loss: no reply cut off, unfinished or over the turn limit earns more."""
        return cls.loss_reward

    async def setup(self) -> None:
        seed = self.problem["seed"]
        self._game = _make(self.game_id, self.game_args)
        self._random = random.Random(seed).getstate()
        self._opponent_random = random.Random(f"opponent {seed}")
        self._opponent_seen: list[Any] = []
        self._invalid = 0
        with self._in_game():
            self._game.reset(num_players=self.players, seed=seed)
        self._game_over = await self._opponent_turns()
        self._opening = self._observe() if not self._game_over else ""

    @contextlib.contextmanager
    def _in_game(self) -> Iterator[None]:
        with _own_random(self._random) as box:
            yield
        self._random = box[0]

    def messages(self) -> list[Message]:
        out: list[Message] = []
        if self.system_prompt:
            out.append({"role": "system", "content": self.system_prompt})
        out.extend(dict(m) for m in self.few_shot)
        out.append({"role": "user", "content": getattr(self, "_opening", "")})
        return out

    def _observe(self) -> str:
        with self._in_game():
            who, observation = self._game.get_observation()
        if who != self.player:
            raise EnvError(f"{self.game_id}: the game asked player {who} to move, not the model's")
        return _text(observation, skip_from=self.player)

    def _state(self) -> Any:
        return self._game.state

    async def _opponent_turns(self) -> bool:
        """Let the opponent move until it is the model's turn; True when the game ended."""
        for _ in range(_OPPONENT_MOVES):
            state = self._state()
            if state.done:
                return True
            if state.current_player_id == self.player:
                return False
            with self._in_game():
                _, observation = self._game.get_observation()
            self._opponent_seen.extend(observation)
            action = await self._opponent_action(_text(self._opponent_seen, boards="all"))
            with self._in_game():
                done, _ = self._game.step(str(action))
            if done:
                return True
        raise EnvError(f"{self.game_id}: the opponent moved {_OPPONENT_MOVES} times in a row")

    async def _opponent_action(self, observation: str) -> str:
        if self.opponent == "random":
            moves = listed_moves(observation)
            if not moves:
                raise ConfigError(
                    f"opponent='random' picks among the moves the game lists ('Available "
                    f"Moves: ...'); {self.game_id} listed none in: {observation[-200:]!r}; give "
                    "a function (observation) -> action as the opponent"
                )
            return self._opponent_random.choice(moves)
        action = self.opponent(observation)
        if inspect.isawaitable(action):
            action = await action
        if not isinstance(action, str):
            raise ConfigError(f"the opponent returned {action!r}; it must return the action text")
        return action

    async def respond(self, message: Message) -> Feedback:
        if self._game_over:
            raise EnvError(f"{self.game_id}: the game ended before the model's first move")
        content = message.get("content")
        state = self._state()
        errors = getattr(state, "error_count", 0)
        with self._in_game():
            done, _ = self._game.step(content if isinstance(content, str) else "")
        state = self._state()
        invalid = getattr(state, "error_count", 0) > errors or (
            done and state.game_info.get(self.player, {}).get("invalid_move", False)
        )
        self._invalid += int(bool(invalid))
        if not done:
            done = await self._opponent_turns()
        if not done:
            return Feedback(reply=self._observe() or None)
        return self._final()

    def _final(self) -> Feedback:
        with self._in_game():
            rewards, game_info = self._game.close()
        reward = float(rewards[self.player])
        metrics: dict[str, float] = {"invalid_moves": float(self._invalid)}
        if self.players == 2:
            other = float(rewards[1 - self.player])
            metrics.update(won=float(reward > other), draw=float(reward == other))
            metrics["lost"] = float(reward < other)
        else:
            metrics["solved"] = float(reward >= 1.0)
        info = game_info.get(self.player, {})
        logs = {"reason": info.get("reason"), "game_rewards": dict(rewards)}
        return Feedback(reward=reward, done=True, metrics=metrics, logs=logs)


def _seeds(value: int | Sequence[int], start: int, name: str) -> list[int]:
    if not (is_integer(value) or isinstance(value, Sequence)):
        raise ConfigError(f"{name} must be a count or a list of seeds, got {value!r}")
    seeds = list(range(start, start + value)) if is_integer(value) else list(value)
    if not all(is_integer(s) for s in seeds):
        raise ConfigError(f"{name} must hold integer seeds, got {value!r}")
    return seeds


def from_textarena(
    game_id: str,
    *,
    opponent: Opponent | str | None = None,
    player: int = 0,
    game_args: Mapping[str, Any] | None = None,
    seeds: int | Sequence[int] = 64,
    test_seeds: int | Sequence[int] = 0,
    system_prompt: str | None = None,
    few_shot: Sequence[Message] = (),
    max_turns: int = 30,
    loss_reward: float | None = None,
    model_name: str = TINY_MODEL_NAME,
    batch_size: int = 4,
    group_size: int = 4,
    **builder_options: Any,
) -> DatasetBuilder:
    """A DatasetBuilder of a TextArena game: one problem per seed, the model one player.

    Args:
        game_id: the game's id (``"TicTacToe-v0"``, ``"GuessTheNumber-v0"``...).
        opponent: a two-player game's other player: ``"random"`` (a random listed move,
            the default) or a function ``(observation) -> action`` (sync or async); none
            for a one-player game.
        player: the model's player id (0 or 1; 0 in a one-player game).
        game_args: the game's own arguments over its registered ones
            (``{"max_number": 10}``).
        seeds: training problems: a count (seeds 0..N-1) or a list of seeds.
        test_seeds: held-out problems: a count (seeds from :data:`TEST_SEED_START`) or a
            list; none by default. A seed in both lists is a ConfigError.
        system_prompt: a system message before the game's first observation.
        few_shot: example messages between the system prompt and the game's first
            observation (a worked move: the format hint a small model needs).
        max_turns: the most model turns in one episode.
        loss_reward: what a reply cut off, without a stop token or over ``max_turns``
            earns; default the game's loss, -1 with two players and 0 alone.
        model_name, batch_size, group_size, builder_options: the DatasetBuilder's.

    Raises:
        MissingExtraError: textarena is not installed.
        ConfigError: an unknown game, a game of three or more players, an opponent for
            a one-player game, a bad ``player``, seeds shared by both splits, a game that
            would download data.

    Example::

        builder.env.players, builder.env.opponent   # (2, 'random')
    """
    args = dict(game_args or {})
    players = _players(game_id, args)
    if player not in range(players):
        raise ConfigError(f"{game_id} has {players} player(s); player={player!r} is not one")
    if players == 2 and opponent is None:
        opponent = "random"
    if players == 1 and opponent is not None:
        raise ConfigError(f"{game_id} is a one-player game; it takes no opponent")
    if opponent is not None and opponent != "random" and not callable(opponent):
        raise ConfigError(
            f"opponent must be 'random' or a function (observation) -> action, got {opponent!r}"
        )
    train = _seeds(seeds, 0, "seeds")
    test = _seeds(test_seeds, TEST_SEED_START, "test_seeds")
    shared = sorted(set(train) & set(test))
    if shared:
        raise ConfigError(f"seeds {shared[:5]} are in both seeds and test_seeds; keep them apart")
    loss = (-1.0 if players == 2 else 0.0) if loss_reward is None else float(loss_reward)
    words = re.findall(r"[A-Za-z0-9]+", game_id)
    env_class = type(
        "".join(w[:1].upper() + w[1:] for w in words) + "Env",
        (TextArenaEnv,),
        {
            "game_id": game_id,
            "game_args": args,
            "players": players,
            "player": player,
            "opponent": staticmethod(opponent) if callable(opponent) else opponent,
            "loss_reward": loss,
            "success_metric": "won" if players == 2 else "solved",
            "system_prompt": system_prompt,
            "few_shot": [dict(m) for m in few_shot],
            "max_turns": max_turns,
            "max_turns_reward": loss,
            "__module__": __name__,
            "__doc__": f"The TextArena game {game_id!r}, adapted by from_textarena.",
        },
    )
    return DatasetBuilder(
        env=env_class,
        problems=[{"seed": s} for s in train],
        test_problems=[{"seed": s} for s in test] or None,
        model_name=model_name,
        batch_size=batch_size,
        group_size=group_size,
        **builder_options,
    )
