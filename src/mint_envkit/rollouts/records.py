"""What a step writes about its rollouts: ``rollouts.jsonl`` records and reward metrics.

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rollouts import ScriptedPolicy
    from mint_envkit.runs.files import RunFiles, read_jsonl
    from mint_envkit.rollouts.run import rollout_groups

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    train, _ = await builder()
    sampler = ScriptedPolicy(["5", "7"])  # stands in for a model: env 0 says 5, env 1 says 7
    rollouts = await rollout_groups(train.get_batch(0), sampler)
    advantages = {0: [0.5, -0.5]}  # per group, per env (see mint_envkit.rl.advantages)

    files = RunFiles("runs/demo")
    files.ensure()
    files.append_rollouts(rollout_records(0, rollouts, advantages, "train"))
    metrics = {"step": 0}
    metrics.update(rollout_metrics(rollouts, "env"))
    assert len(read_jsonl("runs/demo/rollouts.jsonl")) == 2 and metrics["env/all/correct"] == 0.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.rollouts.types import GroupRollout


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metric_means(
    episodes: Sequence[Mapping[str, float]],
) -> tuple[dict[str, float], dict[str, float]]:
    """Each metric's mean over the episodes that logged it, and its coverage: the share
    of the episodes that did (1.0 when every one did).

    Example::

        metric_means([{"won": 1.0, "turns": 3.0}, {"turns": 5.0}])
        # ({'turns': 4.0, 'won': 1.0}, {'turns': 1.0, 'won': 0.5})
    """
    sums: dict[str, list[float]] = {}
    for metrics in episodes:
        for key, value in metrics.items():
            sums.setdefault(key, []).append(float(value))
    means = {key: sum(v) / len(v) for key, v in sorted(sums.items())}
    coverage = {key: len(v) / len(episodes) for key, v in sorted(sums.items())}
    return means, coverage


def rollout_metrics(rollouts: Sequence[GroupRollout], prefix: str) -> dict[str, Any]:
    """Reward and env metrics averaged over every episode of the groups that ran.

    Keys: ``<prefix>/all/reward/total``, ``<prefix>/all/<env metric>``,
    ``<prefix>/<tag>/reward/total``, ``<prefix>/all/episodes`` and
    ``<prefix>/all/rollout_errors``. A metric that some episodes did not log (and the
    env gives no default for: ``MessageEnv.metric_defaults``) is the mean over those that
    did, with ``<prefix>/all/<metric>/coverage``, the share of episodes that logged it,
    beside it: never a silent subset.

    Example::

        assert rollout_metrics(rollouts, "env")["env/all/reward/total"] == 0.5  # the module example's
    """
    out: dict[str, Any] = {}
    ok = [r for r in rollouts if r.error is None]
    episodes = [t for r in ok for t in r.trajectories]
    out[f"{prefix}/all/reward/total"] = _mean([t.total_reward for t in episodes])
    rows = [dict(t.metrics) for t in episodes]
    for row, trajectory in zip(rows, episodes, strict=True):
        if "turns" not in row:  # an episode cut off before step() scored it: its replies
            row["turns"] = float(len(trajectory.transitions))
    if not any("turns" in t.metrics for t in episodes):
        rows = [dict(t.metrics) for t in episodes]
    means, coverage = metric_means(rows)
    for key, value in means.items():
        out[f"{prefix}/all/{key}"] = value
        if coverage[key] < 1.0:
            out[f"{prefix}/all/{key}/coverage"] = coverage[key]
    tags: dict[str, list[float]] = {}
    for rollout in ok:
        for tag in rollout.tags:
            tags.setdefault(tag, []).extend(t.total_reward for t in rollout.trajectories)
    for tag, values in sorted(tags.items()):
        out[f"{prefix}/{tag}/reward/total"] = _mean(values)
    out[f"{prefix}/all/episodes"] = len(episodes)
    out[f"{prefix}/all/rollout_errors"] = len(rollouts) - len(ok)
    return out


def rollout_records(
    step: int,
    rollouts: Sequence[GroupRollout],
    advantages: Mapping[int, Sequence[float]],
    split: str,
    *,
    max_tokens: int | None = None,
) -> list[dict[str, Any]]:
    """The ``rollouts.jsonl`` lines of one step: one per episode, one per failed group.

    An episode's line holds its whole conversation in ``messages`` (every
    env message, assistant reply with tool calls and thinking, tool result
    and tool error, in order), so it can be rebuilt exactly, and the problem's
    fields in ``problem`` (the viewer shows them: a guessing game's secret is in no
    message); the older fields (``prompt``, ``replies``, ``thinking``, ...) stay. The
    format is in docs/rollouts.md.

    ``advantages`` maps a group's position in ``rollouts`` to one advantage
    per episode (groups that do not train are absent: their episodes get
    ``"advantage": None``). ``max_tokens``, an evaluation's reply limit, goes in each
    line: a step's evaluations of one split at several limits (the loop's uncut evals)
    stay apart.

    Example::

        assert rollout_records(0, rollouts, {}, "test")[0]["reward"] == 1.0  # the module example's
    """
    records: list[dict[str, Any]] = []
    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    for position, rollout in enumerate(rollouts):
        if rollout.error is not None:
            records.append(
                {
                    "step": step,
                    "split": split,
                    **limit,
                    "group": rollout.index,
                    "problem": rollout.problem,
                    "prompt": rollout.messages,
                    "error": rollout.error,
                    "traceback": rollout.traceback,
                }
            )
            continue
        for member, trajectory in enumerate(rollout.trajectories):
            last = trajectory.transitions[-1]
            records.append(
                {
                    "step": step,
                    "split": split,
                    **limit,
                    "group": rollout.index,
                    "member": member,
                    "problem": rollout.problem,
                    "prompt": rollout.messages,
                    "messages": trajectory.messages,
                    "replies": [(t.message or {}).get("content") for t in trajectory.transitions],
                    "thinking": [(t.message or {}).get("thinking") for t in trajectory.transitions],
                    "stop_reasons": [t.ac.stop_reason for t in trajectory.transitions],
                    "reward": trajectory.total_reward,
                    "advantage": (advantages.get(position) or [None] * (member + 1))[member],
                    "metrics": trajectory.metrics,
                    "parse_status": last.logs.get("parse_status"),
                    "logs": last.logs,
                }
            )
    return records


def progress_line(step: int, metrics: Mapping[str, Any]) -> str:
    """A finished step in one line: its number (as the files number it: the first is 0),
    reward, correct, dropped groups, errors, time.

    Example::

        progress_line(0, {"env/all/reward/total": 0.5, "time/step": 1.25})
        # 'step 0  reward +0.500  1.2s'
    """
    reward = metrics.get("env/all/reward/total")
    correct = metrics.get("env/all/correct")
    parts = [f"step {step}"]
    parts.append("reward " + ("n/a" if reward is None else f"{reward:+.3f}"))
    if correct is not None:
        parts.append(f"correct {correct:.2f}")
    dropped = metrics.get("env/all/by_group/dropped", 0)
    if dropped:
        parts.append(f"dropped groups {dropped}")
    errors = metrics.get("env/all/rollout_errors", 0)
    if errors:
        parts.append(f"rollout errors {errors}")
    parts.append(f"{metrics.get('time/step', 0.0):.1f}s")
    return "  ".join(parts)
