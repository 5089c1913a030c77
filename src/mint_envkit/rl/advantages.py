"""Advantages, the KL penalty, and the accounting of groups that teach nothing.

Pure functions on plain numbers, so the arithmetic is tested by hand.

Example::

    group_advantages([1.0, -0.25, -0.25, 1.0])   # [0.625, -0.625, -0.625, 0.625]
    constant_reason([0.0, 0.0], [{"correct": 0.0, "parsed": 0.0}] * 2)  # 'all_unparsed'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

DROP_REASONS = ("all_correct", "all_wrong", "all_unparsed", "constant")
"""Why a constant-reward group is dropped from training."""


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """Each reward minus the group's mean (GRPO without std scaling).

    Example::

        group_advantages([1.0, 0.0])  # [0.5, -0.5]
    """
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


def constant_reason(
    rewards: Sequence[float], metrics: Sequence[Mapping[str, float]], *, tolerance: float = 1e-9
) -> str | None:
    """None when the group's rewards differ; otherwise why they are all equal.

    ``all_correct`` when every env reports ``correct`` = 1, ``all_unparsed``
    when every env reports ``parsed`` = 0, ``all_wrong`` when every env reports
    ``correct`` = 0, else ``constant`` (an env without those metrics).

    Example::

        constant_reason([1.0, 1.0], [{"correct": 1.0}, {"correct": 1.0}])  # 'all_correct'
        constant_reason([1.0, 0.0], [{}, {}])                              # None
    """
    if not rewards or max(rewards) - min(rewards) > tolerance:
        return None
    if metrics and all(m.get("correct") == 1.0 for m in metrics):
        return "all_correct"
    if metrics and all(m.get("parsed") == 0.0 for m in metrics):
        return "all_unparsed"
    if metrics and all(m.get("correct") == 0.0 for m in metrics):
        return "all_wrong"
    return "constant"


def kl_penalties(
    sampler_logprobs: Sequence[Sequence[float]],
    reference_logprobs: Sequence[Sequence[float]],
    coef: float,
) -> tuple[list[list[float]], float]:
    """The KL penalty of each sampled token, and the batch's mean KL.

    With ``kl = sampler_logprob - reference_logprob`` per sampled token and
    ``mean_kl`` its mean over every sampled token of the batch, a token's penalty
    is ``coef * (mean_kl - kl)`` (tinker-cookbook 0.3.0's ``incorporate_kl_penalty``,
    before its discount). Returns the penalties and ``mean_kl`` (logged as
    ``kl_policy_base``).

    Example::

        kl_penalties([[-1.0, -2.0]], [[-1.5, -1.5]], coef=0.1)   # ([[-0.05, 0.05]], 0.0)
    """
    kls = [
        [s - r for s, r in zip(srow, rrow, strict=True)]
        for srow, rrow in zip(sampler_logprobs, reference_logprobs, strict=True)
    ]
    n = sum(len(row) for row in kls)
    mean_kl = sum(sum(row) for row in kls) / n if n else 0.0
    return [[coef * (mean_kl - k) for k in row] for row in kls], mean_kl


def discounted_future_sum(values: Sequence[float], gamma: float) -> list[float]:
    """Each position's discounted sum of its own and the later values: ``sum_k gamma^k x[i+k]``.

    tinker-cookbook 0.3.0's ``discounted_future_sum_vectorized``, on a plain list
    (``gamma = 0`` gives the values back).

    Example::

        discounted_future_sum([1.0, 0.0, 2.0], 0.5)   # [1.5, 1.0, 2.0]
    """
    out = [0.0] * len(values)
    running = 0.0
    for i in range(len(values) - 1, -1, -1):
        running = values[i] + gamma * running
        out[i] = running
    return out


def kl_adjusted_advantages(
    advantages: Sequence[Sequence[float]],
    sampler_logprobs: Sequence[Sequence[float]],
    reference_logprobs: Sequence[Sequence[float]],
    coef: float,
) -> tuple[list[list[float]], float]:
    """Apply the KL penalty to per-token advantages.

    With ``kl = sampler_logprob - reference_logprob`` per sampled token and
    ``mean_kl`` its mean over every sampled token of the batch, each token's
    advantage becomes ``advantage + coef * (mean_kl - kl)`` (:func:`kl_penalties`;
    undiscounted: the loop's ``Config.kl_discount_factor`` is applied per datum by
    :func:`mint_envkit.rl.kl.kl_shaped_advantages`). Returns the new advantages and
    ``mean_kl`` (logged as ``kl_policy_base``).

    Example::

        kl_adjusted_advantages([[1.0, 1.0]], [[-1.0, -2.0]], [[-1.5, -1.5]], coef=0.1)
        # kl = [0.5, -0.5], mean 0.0 -> ([[0.95, 1.05]], 0.0)
    """
    penalties, mean_kl = kl_penalties(sampler_logprobs, reference_logprobs, coef)
    adjusted = [
        [a + p for a, p in zip(arow, prow, strict=True)]
        for arow, prow in zip(advantages, penalties, strict=True)
    ]
    return adjusted, mean_kl


def batch_advantages(
    groups: Sequence[tuple[Sequence[float], Sequence[Mapping[str, float]]] | None],
    *,
    remove_constant: bool = False,
) -> tuple[dict[int, list[float]], dict[str, float]]:
    """Advantages for the groups that train, and the by-group accounting.

    ``groups`` holds, per group, ``(rewards, metrics per episode)``, or None for
    a group that failed. Returns the advantages of each group that trains by
    its position, and the metrics ``env/all/by_group/frac_mixed|frac_all_good|
    frac_all_bad``, ``dropped``, ``dropped_<reason>`` (see
    :func:`constant_reason`) and ``kept_constant`` over the groups that ran.

    A group whose rewards are all equal is kept with every advantage exactly 0 and
    counted in ``kept_constant`` (the default, ``remove_constant=False``, as
    tinker-cookbook 0.3.0's ``Config.remove_constant_reward_groups = False``: such a
    group adds no reward gradient, but a KL penalty still shapes it), or, with
    ``remove_constant=True``, dropped and counted in ``dropped`` and
    ``dropped_<reason>``. ``frac_all_good`` and ``frac_all_bad`` count constant
    groups either way.

    Example::

        advantages, metrics = batch_advantages([([1.0, 0.0], [{}, {}]), ([0.0, 0.0], [{}, {}])])
        advantages                                    # {0: [0.5, -0.5], 1: [0.0, 0.0]}
        metrics["env/all/by_group/kept_constant"]     # 1
        batch_advantages([([0.0, 0.0], [{}, {}])], remove_constant=True)[0]  # {}
    """
    advantages: dict[int, list[float]] = {}
    reasons: dict[str, int] = dict.fromkeys(DROP_REASONS, 0)
    ran = mixed = 0
    for position, group in enumerate(groups):
        if group is None:
            continue
        ran += 1
        rewards, metrics = group
        reason = constant_reason(rewards, metrics)
        if reason is None:
            mixed += 1
            advantages[position] = group_advantages(rewards)
        else:
            reasons[reason] += 1
            if not remove_constant:
                advantages[position] = [0.0] * len(rewards)
    constant = sum(reasons.values())
    good = reasons["all_correct"]
    dropped = constant if remove_constant else 0
    out: dict[str, float] = {
        "env/all/by_group/frac_mixed": mixed / ran if ran else 0.0,
        "env/all/by_group/frac_all_good": good / ran if ran else 0.0,
        "env/all/by_group/frac_all_bad": (constant - good) / ran if ran else 0.0,
        "env/all/by_group/dropped": dropped,
    }
    for reason, count in reasons.items():
        out[f"env/all/by_group/dropped_{reason}"] = count if remove_constant else 0
    out["env/all/by_group/kept_constant"] = constant - dropped
    return advantages, out
