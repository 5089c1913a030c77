"""The figures of an evaluation: pass@k (unbiased), per-problem results, their summary.

pass@k is the chance that at least one of ``k`` samples drawn without
replacement from the ``n`` samples of a problem is correct, when ``c`` of
them are: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, the estimator of
HumanEval). It is unbiased, unlike ``1 - (1 - c/n)^k``. An evaluation reports
the mean over problems for k = 1, every power of two below K, and K.

Example::

    from mint_envkit.evaluation.metrics import pass_at_k

    pass_at_k(n=4, c=1, k=2)   # 0.5
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import Figures


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct among ``n`` samples.

    Raises:
        ConfigError: not ``0 <= c <= n`` or not ``1 <= k <= n``.

    Example::

        pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4)   # (0.25, 0.5, 0.0)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ConfigError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_ks(samples: int) -> list[int]:
    """The k an evaluation of ``samples`` per problem reports: 1, the powers of two, ``samples``.

    Example::

        pass_ks(6)   # [1, 2, 4, 6]
    """
    ks = {1, samples}
    k = 2
    while k < samples:
        ks.add(k)
        k *= 2
    return sorted(ks)


def _parsed(metrics: Mapping[str, float], logs: Mapping[str, Any]) -> bool | None:
    if "parsed" in metrics:
        return metrics["parsed"] > 0.5
    status = logs.get("parse_status")
    return None if status is None else status == "ok"


@attrs.frozen
class ProblemResult:
    """One problem's samples: replies, rewards, parse statuses and whether each is correct.

    ``correct`` is the env's ``correct`` metric (None for a sample whose env
    reports none); ``error`` is set (and the lists empty) when the group failed.

    Example::

        # not run: `result` is an EvalResult, built elsewhere
        result.c, result.n, result.pass_at(2)   # (1, 4, 0.5)
    """

    split: str
    index: int
    problem: dict[str, Any]
    replies: list[str | None]
    rewards: list[float]
    parse_status: list[str | None]
    parsed: list[bool | None]
    correct: list[bool | None]
    truncated: list[float | None] = attrs.field(factory=list)
    error: str | None = None

    @property
    def n(self) -> int:
        """How many samples ran."""
        return len(self.rewards)

    @property
    def c(self) -> int | None:
        """How many samples are correct (None when the env reports no ``correct``)."""
        if not self.correct or any(flag is None for flag in self.correct):
            return None
        return sum(bool(flag) for flag in self.correct)

    def pass_at(self, k: int) -> float | None:
        """pass@k of this problem (None when it failed or has no ``correct`` metric)."""
        c = self.c
        return None if c is None or k > self.n else pass_at_k(self.n, c, k)

    def mean_reward(self) -> float | None:
        """The mean reward of its samples (None when it failed)."""
        return sum(self.rewards) / self.n if self.n else None

    def record(self, ks: Sequence[int]) -> dict[str, Any]:
        """Its ``results.jsonl`` line.

        Example::

            # not run: `result` is an EvalResult, built elsewhere
            result.record([1, 4])["pass@"]   # {'1': 0.25, '4': 1.0}
        """
        return {
            "split": self.split,
            "index": self.index,
            "problem": self.problem,
            "replies": self.replies,
            "rewards": self.rewards,
            "parse_status": self.parse_status,
            "correct": self.correct,
            "truncated": self.truncated,
            "n": self.n,
            "c": self.c,
            "mean_reward": self.mean_reward(),
            "pass@": {str(k): self.pass_at(k) for k in ks},
            "error": self.error,
        }


def problem_result(split: str, problem: Mapping[str, Any], rollout: GroupRollout) -> ProblemResult:
    """Summarise one problem's :class:`GroupRollout`.

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        problem_result("test", group.problem, rollout).rewards   # [1.0, -0.25, ...]
    """
    replies, statuses, parsed, correct, truncated = [], [], [], [], []
    for trajectory in rollout.trajectories:
        last = trajectory.transitions[-1]
        metrics = trajectory.metrics
        replies.append((last.message or {}).get("content"))
        statuses.append(last.logs.get("parse_status") or last.logs.get("end"))
        parsed.append(_parsed(metrics, last.logs))
        correct.append(metrics["correct"] > 0.5 if "correct" in metrics else None)
        truncated.append(metrics.get("truncated"))
    return ProblemResult(
        split=split,
        index=rollout.index,
        problem=dict(problem),
        replies=replies,
        rewards=list(rollout.rewards),
        parse_status=statuses,
        parsed=parsed,
        correct=correct,
        truncated=truncated,
        error=rollout.error,
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(results: Sequence[ProblemResult], samples: int) -> Figures:
    """The evaluation's figures: means over problems (pass@k) and over samples (reward).

    Fields set: ``problems``, ``episodes``, ``errors`` (failed problems, left out
    of every mean), ``mean_reward``, ``correct`` (mean over samples),
    ``pass_at`` (k -> mean pass@k; None when the env reports no ``correct``),
    ``parse_failure_rate`` (of the samples whose parse status is known; a
    reply cut off at ``max_tokens`` counts as unparsed), ``truncated_rate``
    (the share of samples cut off; None when the env reports no ``truncated``).

    Example::

        # not run: `results` is problem results, built elsewhere
        summarize(results, samples=4).pass_at["1"]   # 0.25
    """
    ran = [r for r in results if r.error is None]
    rewards = [reward for r in ran for reward in r.rewards]
    parsed = [flag for r in ran for flag in r.parsed if flag is not None]
    correct = [flag for r in ran for flag in r.correct]
    truncated = [t for r in ran for t in r.truncated if t is not None]
    known = [r for r in ran if r.c is not None]
    every = bool(ran) and len(known) == len(ran)
    return Figures(
        problems=len(results),
        episodes=len(rewards),
        errors=len(results) - len(ran),
        mean_reward=_mean(rewards),
        correct=_mean([float(bool(f)) for f in correct]) if every else None,
        pass_at={
            str(k): _mean([r.pass_at(k) or 0.0 for r in known]) if every else None
            for k in pass_ks(samples)
        },
        parse_failure_rate=_mean([0.0 if flag else 1.0 for flag in parsed]),
        truncated_rate=_mean([float(t > 0.5) for t in truncated]),
    )
