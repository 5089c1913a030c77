"""Recorded replies scored again: what ``check --replay`` and ``rescore`` share.

A recorded group (its problem, model, renderer, and each episode's replies with what
they scored) is rebuilt from an env class or a DatasetBuilder as it is now, its replies
are fed back through :class:`~mint_envkit.ScriptedPolicy` (the token-level path of
training: rendered, parsed, stepped, group rewards) and each episode's new
:data:`COMPARED` fields are compared with the recorded ones. Golden files
(:mod:`.golden`) and a run's ``rollouts.jsonl`` (:mod:`.runs`, :mod:`.rescore`) only
differ in where the groups come from.

Example::

    # not run: `ArithmeticEnv` is your env class, built elsewhere
    group = RecordedGroup(
        problem={"question": "What is 2 + 3?", "answer": "5"}, index=0,
        model_name="mint-envkit/tiny-qwen3", renderer_name=None,
        episodes=[RecordedEpisode(replies=["5"], scored={"reward": 1.0, "correct": 1.0,
                                                         "parse_status": "ok", "turns": 1})])
    changes = await replay_group(ArithmeticEnv, group)   # [] while the env scores "5" 1.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import SampleRequest
from mint_envkit.rollouts.scripted import ScriptedPolicy
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory

TOLERANCE = 1e-9
"""Rewards within this absolute distance of the recorded ones count as unchanged."""

COMPARED = ("reward", "correct", "parse_status", "turns")
"""The fields a replay compares, in the order its tables list them."""

Change = tuple[int, str, Any, Any]
"""(episode's position in its group, field, recorded value, replayed value); the field
``error`` when the group could not be replayed (recorded None, replayed the message)."""


@attrs.frozen
class RecordedEpisode:
    """One recorded episode: the replies the model wrote and what they scored.

    Attributes:
        replies: the reply texts, one per turn, as the model wrote them.
        scored: the recorded value of each :data:`COMPARED` field.
        cut: per turn, True where the reply hit the length limit (replayed as cut off:
            no stop token, stop reason ``length``); empty: every reply ended.

    Example::

        RecordedEpisode(replies=["5"], scored={"reward": 1.0, "correct": 1.0,
                                               "parse_status": "ok", "turns": 1})
    """

    replies: list[str]
    scored: dict[str, Any]
    cut: list[bool] = attrs.field(factory=list)


@attrs.frozen
class RecordedGroup:
    """One recorded group: what rebuilds it, and its episodes in their group order.

    Attributes:
        problem: the problem's fields.
        index: the problem's index (the group's ``index``).
        model_name: the model whose tokenizer and renderer read the replies.
        renderer_name: the renderer; None: the builder's (for an env class, the model's).
        episodes: one per env of the group, in order.
        settings: DatasetBuilder settings for an env class (a DatasetBuilder keeps its own).

    Example::

        # not run: `episode` is a RecordedEpisode, built elsewhere
        RecordedGroup(problem={"question": "2 + 3?", "answer": "5"}, index=0,
                      model_name="mint-envkit/tiny-qwen3", renderer_name="qwen3",
                      episodes=[episode])
    """

    problem: dict[str, Any]
    index: int
    model_name: str
    renderer_name: str | None
    episodes: list[RecordedEpisode]
    settings: dict[str, Any] = attrs.field(factory=dict)


def outcome(trajectory: Trajectory) -> dict[str, Any]:
    """What a replay compares, from one episode: the :data:`COMPARED` fields.

    Example::

        # not run: `rollout` is a GroupRollout, built elsewhere
        outcome(rollout.trajectories[0])
        # {'reward': 1.0, 'correct': 1.0, 'parse_status': 'ok', 'turns': 1}
    """
    correct = trajectory.metrics.get("correct")
    return {
        "reward": float(trajectory.total_reward),
        "correct": None if correct is None else float(correct),
        "parse_status": trajectory.transitions[-1].logs.get("parse_status"),
        "turns": len(trajectory.transitions),
    }


def same(name: str, old: Any, new: Any) -> bool:
    """Whether a recorded and a replayed value agree (rewards within :data:`TOLERANCE`).

    Example::

        same("reward", 1.0, 1.0 + 1e-12), same("parse_status", "ok", "no_match")  # True, False
    """
    if name in ("reward", "correct") and old is not None and new is not None:
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        return abs(float(old) - float(new)) <= TOLERANCE
    return old == new


def show(name: str, value: Any) -> str:
    """A recorded or replayed value as a table cell.

    Example::

        show("reward", -0.5), show("correct", 1.0), show("parse_status", None)
        # ('-0.5', '1', 'none')
    """
    if value is None:
        return "none"
    if name == "reward":
        return repr(float(value))
    if name == "correct":
        return f"{float(value):g}"
    return str(value)


def problem_label(problem: Mapping[str, Any]) -> str:
    """A problem in at most 40 characters: its ``question`` (or ``id``, ``prompt``, JSON).

    Example::

        problem_label({"question": "What is 2 + 3?", "answer": "5"})   # 'What is 2 + 3?'
    """
    for key in ("question", "id", "prompt"):
        if problem.get(key) is not None:
            text = str(problem[key])
            break
    else:
        text = json.dumps(problem, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:39] + "…"


async def rebuild_group(target: Any, group: RecordedGroup) -> GroupBuilder:
    """The recorded group, rebuilt from ``target`` (an env class or a DatasetBuilder).

    A DatasetBuilder keeps its settings; only its problems, group size, model and
    renderer are the recorded ones. An env class gets a DatasetBuilder with
    ``group.settings``.

    Example::

        # not run: `ArithmeticEnv` and `group` come from the module example
        built = await rebuild_group(ArithmeticEnv, group)
        built.group_size, built.index   # (1, 0)
    """
    common: dict[str, Any] = {
        "problems": [group.problem],
        "batch_size": 1,
        "group_size": len(group.episodes),
        "model_name": group.model_name,
        "shuffle": False,
    }
    if group.renderer_name is not None:
        common["renderer_name"] = group.renderer_name
    if isinstance(target, DatasetBuilder):
        builder = attrs.evolve(
            target, **common, fields=None, test_problems=None, test_fraction=0.0, n_epochs=1
        )
    else:
        builder = DatasetBuilder(env=target, **common, **group.settings)
    train, _ = await builder()
    return attrs.evolve(train.get_batch(0)[0], index=group.index)


class RecordedReplies:
    """A rollout sampler that plays recorded replies back: a :class:`ScriptedPolicy`,
    except that a reply recorded as cut off at the length limit ends the same way.

    Example::

        # not run: `built` is a rebuilt GroupBuilder, `group` a RecordedGroup
        rollouts = await rollout_groups([built], RecordedReplies(group.episodes))
    """

    def __init__(self, episodes: Sequence[RecordedEpisode]) -> None:
        scripts = [list(e.replies) for e in episodes]
        self._ended = ScriptedPolicy(scripts)
        self._cut_off = ScriptedPolicy(scripts, end_with_stop=False)
        self._cut = [list(e.cut) for e in episodes]

    def _was_cut(self, env: int, turn: int) -> bool:
        cut = self._cut[env % len(self._cut)]
        return turn < len(cut) and cut[turn]

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        """Answer one sampling request with the recorded replies of its envs and turn."""
        if not any(any(cut) for cut in self._cut):
            return await self._ended(request)
        out: list[SampledTokens] = []
        for position in range(request.num_samples):
            env = request.env_index + position
            one = attrs.evolve(request, num_samples=1, env_index=env)
            policy = self._cut_off if self._was_cut(env, request.turn) else self._ended
            out.extend(await policy(one))
        return out


async def replay_group(target: Any, group: RecordedGroup) -> list[Change]:
    """Every change in one recorded group, replayed with its recorded replies.

    An env (or problem) that now raises, or asks for more turns than were recorded, is
    an ``error`` change of each episode: a change to report, not a crash.

    Example::

        # not run: `ArithmeticEnv` and `group` come from the module example
        await replay_group(ArithmeticEnv, group)   # [(0, 'reward', 1.0, 0.0)] after a change
    """
    try:
        built = await rebuild_group(target, group)
        rollout: GroupRollout = (await rollout_groups([built], RecordedReplies(group.episodes)))[0]
        error = rollout.error
    except Exception as err:  # the user's env or problem: a change to report, not a crash
        error = f"{type(err).__name__}: {err}"
    if error:
        message = " ".join(error.split())
        return [(position, "error", None, message) for position in range(len(group.episodes))]
    changes: list[Change] = []
    for position, (episode, trajectory) in enumerate(
        zip(group.episodes, rollout.trajectories, strict=True)
    ):
        now = outcome(trajectory)
        for name in COMPARED:
            old = episode.scored.get(name)
            if not same(name, old, now[name]):
                changes.append((position, name, old, now[name]))
    return changes
