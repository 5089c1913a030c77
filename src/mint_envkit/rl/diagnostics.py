"""Honest RL diagnostics: sampler vs learner logprobs, behaviour logprobs, steps that train nothing.

Per step the loop logs tinker-cookbook's ``optim/kl_sample_train_v1``
(mean of ``behaviour_lp - learner_lp`` over the action tokens),
``optim/kl_sample_train_v2`` (half the mean squared difference) and
``optim/entropy`` (``-mean(sampled_lp)``: the sampling distribution's entropy
H(q), estimated on its own draws), from the logprobs that ``forward_backward``
returns, so a sampler/learner mismatch shows at once. When the behaviour
logprobs were recomputed it also logs ``optim/cross_entropy_policy``
(``-mean(recomputed_lp)``: E_q[-log pi], the policy's cross-entropy on the
sampler's draws, which is >= H(q)). A step that trains nothing (every group
constant) measures every reply with a ``forward`` instead (no gradient, no
optimizer step), so these are logged on every step, collapse included
(:func:`learner_metrics`). With ``Config.compute_post_kl`` the same
difference is measured once more after the update, against the updated
weights: tinker-cookbook's ``kl_pre_post_v1|v2`` (:func:`post_kl_metrics`).

Sampled logprobs are those of the distribution the sampler draws from: the
temperature-scaled one, truncated to ``top_k`` / ``top_p`` and renormalised.
Unless ``temperature == 1``, ``top_k == -1`` and ``top_p == 1`` they are not
the policy's: the importance ratio is off on-policy and the KL against the
base model is not ~0 before any update. :func:`recomputes_behavior_logprobs`
says when the loop asks the step's sampler for the policy's own logprobs
(temperature 1, no truncation) instead (:func:`reply_logprobs`).

Example::

    behaviour = [[-0.5, -1.0]]
    learner = [[-0.5, -0.8]]
    sample_train_metrics(behaviour, learner)
    # {'optim/kl_sample_train_v1': -0.1, 'optim/kl_sample_train_v2': 0.01,
    #  'optim/entropy': 0.75}
    sample_train_metrics(behaviour, learner, sampled=[[-0.3, -0.9]])["optim/cross_entropy_policy"]
    # 0.75 (and 'optim/entropy': 0.6)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.rl.advantages import DROP_REASONS
from mint_envkit.rl.config import Config
from mint_envkit.rl.datums import Sample, plan_datums


def samples_from_policy(config: Config) -> bool:
    """Whether ``config``'s sampler draws from the policy's own distribution.

    True exactly when no sampling setting changes the distribution:
    ``temperature == 1``, ``top_k`` off (``-1``; ``0`` and None are read as
    off too) and ``top_p == 1``. Otherwise the sampled logprobs are those of
    the scaled, truncated and renormalised distribution, not the policy's.

    Example::

        # not run: needs a Config built elsewhere
        samples_from_policy(attrs.evolve(config, top_k=5))  # False
    """
    top_k = config.top_k
    top_k_off = top_k is None or top_k in (-1, 0)
    return config.temperature == 1.0 and top_k_off and config.top_p >= 1.0


def recomputes_behavior_logprobs(config: Config) -> bool:
    """Whether the loop recomputes the behaviour logprobs as the policy's own.

    ``Config.recompute_behavior_logprobs`` when set; when None (the default),
    on exactly when the sampling distribution is not the policy's
    (``not`` :func:`samples_from_policy`: ``temperature != 1``, ``top_k`` set
    or ``top_p < 1``). Recomputed logprobs come from ``compute_logprobs``
    (temperature 1, no truncation).

    Example::

        # not run: needs a Config built elsewhere
        recomputes_behavior_logprobs(attrs.evolve(config, temperature=0.7))  # True
        recomputes_behavior_logprobs(attrs.evolve(config, top_p=0.8))  # True
    """
    if config.recompute_behavior_logprobs is not None:
        return config.recompute_behavior_logprobs
    return not samples_from_policy(config)


async def reply_logprobs(client: Any, samples: Sequence[Sample]) -> list[list[float]]:
    """The logprobs ``client`` gives each sample's reply tokens, all requested at once.

    ``client`` is a ``mint`` sampling client (a step's sampler, or the KL
    reference model); its ``compute_logprobs`` is the model's own distribution
    (temperature 1, no ``top_k`` / ``top_p`` truncation).

    Example::

        # not run: needs a training client
        reference_lp = await reply_logprobs(reference_client, samples)
    """
    import tinker

    answers = await asyncio.gather(
        *(
            client.compute_logprobs_async(tinker.ModelInput.from_ints(s.prompt + s.reply))
            for s in samples
        )
    )
    return [
        [float(v) for v in values[-len(s.reply) :]]
        for values, s in zip(answers, samples, strict=True)
    ]


def mean_kl(policy: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> float:
    """Mean of ``policy - reference`` over every token (0.0 with no tokens).

    Example::

        mean_kl([[-1.0, -2.0]], [[-1.5, -1.5]])  # 0.0
    """
    diffs = [
        p - r
        for prow, rrow in zip(policy, reference, strict=True)
        for p, r in zip(prow, rrow, strict=True)
    ]
    return sum(diffs) / len(diffs) if diffs else 0.0


def learner_logprobs(
    outputs: Sequence[Mapping[str, Any]],
    samples: Sequence[Sample],
    plan: Sequence[Sequence[int]],
) -> list[list[float]]:
    """The learner's logprobs of each sample's reply tokens, from ``forward_backward``'s outputs.

    ``outputs`` is ``ForwardBackwardOutput.loss_fn_outputs``: per datum (one per
    ``plan`` entry, see :func:`~mint_envkit.rl.datums.plan_datums`), a
    ``"logprobs"`` tensor over every target position. A sample's prompt is a
    prefix of its datum's tokens, so its reply's logprobs start at target
    position ``len(prompt) - 1``.

    Example::

        # not run: needs a training client
        learner_logprobs(fb.loss_fn_outputs, samples, plan_datums(samples))  # [[-0.52, -1.01], ...]
    """
    out: list[list[float]] = [[] for _ in samples]
    for output, group in zip(outputs, plan, strict=True):
        values = output["logprobs"]
        values = list(getattr(values, "data", values))
        for index in group:
            start = len(samples[index].prompt) - 1
            out[index] = [float(v) for v in values[start : start + len(samples[index].reply)]]
    return out


def learner_metrics(
    output: Any,
    samples: Sequence[Sample],
    sampled: Sequence[Sequence[float]] | None = None,
) -> dict[str, float]:
    """:func:`sample_train_metrics` of ``samples`` against a ``forward(_backward)`` output.

    ``output`` is the ``ForwardBackwardOutput`` of the datums of ``samples``
    (:func:`~mint_envkit.rl.datums.to_datums`); empty when it carries no
    ``loss_fn_outputs``. A ``forward`` (no gradient) gives the same learner
    logprobs as a ``forward_backward`` on the same weights. ``sampled``: the
    sampler's own logprobs of the samples' replies when their behaviour
    logprobs (``Sample.logprobs``) were recomputed; None when they are the
    sampled ones.

    Example::

        # not run: needs a training client
        learner_metrics(await fb_future, samples)["optim/entropy"]  # 1.83
    """
    outputs = getattr(output, "loss_fn_outputs", None)
    if not outputs:
        return {}
    learner = learner_logprobs(outputs, samples, plan_datums(samples))
    return sample_train_metrics([s.logprobs for s in samples], learner, sampled)


def sample_train_metrics(
    behaviour: Sequence[Sequence[float]],
    learner: Sequence[Sequence[float]],
    sampled: Sequence[Sequence[float]] | None = None,
) -> dict[str, float]:
    """tinker-cookbook's sampler-vs-learner metrics over every action token.

    ``optim/kl_sample_train_v1`` = mean(behaviour - learner),
    ``optim/kl_sample_train_v2`` = 0.5 * mean((behaviour - learner)^2),
    ``optim/entropy`` = -mean(sampled): the sampling distribution's entropy
    H(q). ``sampled`` is the sampler's own logprobs, given when the behaviour
    logprobs were recomputed (then also ``optim/cross_entropy_policy`` =
    -mean(behaviour): E_q[-log pi]); None means the behaviour logprobs are
    the sampled ones. Empty with no tokens.

    Example::

        sample_train_metrics([[-0.5, -1.0]], [[-0.5, -0.8]])["optim/kl_sample_train_v2"]  # 0.01
    """
    pairs = [
        (b, t)
        for brow, trow in zip(behaviour, learner, strict=True)
        for b, t in zip(brow, trow, strict=True)
    ]
    if not pairs:
        return {}
    n = len(pairs)
    own = [b for b, _ in pairs] if sampled is None else [v for row in sampled for v in row]
    if len(own) != n:
        raise ValueError(f"sampled logprobs cover {len(own)} tokens, behaviour {n}")
    metrics = {
        "optim/kl_sample_train_v1": sum(b - t for b, t in pairs) / n,
        "optim/kl_sample_train_v2": 0.5 * sum((b - t) ** 2 for b, t in pairs) / n,
        "optim/entropy": -sum(own) / n,
    }
    if sampled is not None:
        metrics["optim/cross_entropy_policy"] = -sum(b for b, _ in pairs) / n
    return metrics


def post_kl_metrics(
    behaviour: Sequence[Sequence[float]], updated: Sequence[Sequence[float]]
) -> dict[str, float]:
    """tinker-cookbook's post-update KL over every action token (``Config.compute_post_kl``).

    ``kl_pre_post_v1`` = mean(behaviour - updated) (the k1 estimate of
    KL(sampler || updated) on the sampler's draws), ``kl_pre_post_v2`` =
    0.5 * mean((behaviour - updated)^2). ``behaviour`` is the logprobs the
    loss used, ``updated`` the updated weights' logprobs of the same tokens.
    Empty with no tokens.

    Example::

        post_kl_metrics([[-0.5, -1.0]], [[-0.7, -0.6]])
        # {'kl_pre_post_v1': -0.1, 'kl_pre_post_v2': 0.05}
    """
    diffs = [
        b - u
        for brow, urow in zip(behaviour, updated, strict=True)
        for b, u in zip(brow, urow, strict=True)
    ]
    if not diffs:
        return {}
    n = len(diffs)
    return {
        "kl_pre_post_v1": sum(diffs) / n,
        "kl_pre_post_v2": 0.5 * sum(d * d for d in diffs) / n,
    }


def no_update_note(metrics: Mapping[str, Any], groups: int) -> str | None:
    """Why a step trained nothing, for its progress line; None when it trained.

    ``metrics`` are the step's (``train/datums`` and the ``env/all/by_group``
    and ``env/all/rollout_errors`` counts); ``groups`` is the batch's size.

    Example::

        no_update_note({"train/datums": 0, "env/all/by_group/dropped": 4,
                        "env/all/by_group/dropped_all_wrong": 3,
                        "env/all/by_group/dropped_all_correct": 1}, groups=4)
        # 'no update: 4/4 groups constant (all wrong 3, all correct 1)'
    """
    if metrics.get("train/datums", 0):
        return None
    dropped = int(metrics.get("env/all/by_group/dropped", 0))
    errors = int(metrics.get("env/all/rollout_errors", 0))
    if not dropped:
        reason = "no reply tokens to train on"
        return f"no update: {reason}" + (f", {errors}/{groups} groups failed" if errors else "")
    counts = [
        (reason.replace("_", " "), int(metrics.get(f"env/all/by_group/dropped_{reason}", 0)))
        for reason in DROP_REASONS
    ]
    counts.sort(key=lambda item: -item[1])
    detail = ", ".join(f"{name} {count}" for name, count in counts if count)
    note = f"no update: {dropped}/{groups} groups constant ({detail})"
    return note + (f", {errors} failed" if errors else "")
