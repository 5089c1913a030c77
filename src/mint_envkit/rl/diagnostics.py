"""Honest RL diagnostics: sampler vs learner logprobs, behaviour logprobs, steps that train nothing.

Per step the loop logs tinker-cookbook's ``optim/kl_sample_train_v1``
(mean of ``sampler_lp - learner_lp`` over the action tokens),
``optim/kl_sample_train_v2`` (half the mean squared difference) and
``optim/entropy`` (``-mean(sampler_lp)``), from the logprobs that
``forward_backward`` returns, so a sampler/learner mismatch shows at once. A
step that trains nothing (every group constant) measures every reply with a
``forward`` instead (no gradient, no optimizer step), so the three are logged
on every step, collapse included (:func:`learner_metrics`).

Sampled logprobs are those of the temperature-scaled distribution, so with
``temperature != 1`` they are not the policy's: the importance ratio is off
on-policy and the KL against the base model is not ~0 before any update.
:func:`recomputes_behavior_logprobs` says when the loop asks the step's
sampler for the logprobs at temperature 1 instead (:func:`reply_logprobs`).

Example::

    behaviour = [[-0.5, -1.0]]
    learner = [[-0.5, -0.8]]
    sample_train_metrics(behaviour, learner)
    # {'optim/kl_sample_train_v1': -0.1, 'optim/kl_sample_train_v2': 0.01,
    #  'optim/entropy': 0.75}
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.rl.advantages import DROP_REASONS
from mint_envkit.rl.config import Config
from mint_envkit.rl.datums import Sample, plan_datums

__all__ = [
    "learner_logprobs",
    "learner_metrics",
    "mean_kl",
    "no_update_note",
    "recomputes_behavior_logprobs",
    "reply_logprobs",
    "sample_train_metrics",
]


def recomputes_behavior_logprobs(config: Config) -> bool:
    """Whether the loop recomputes the behaviour logprobs at temperature 1.

    ``Config.recompute_behavior_logprobs`` when set; when None (the default),
    on exactly when ``Config.temperature != 1``.

    Example::

        recomputes_behavior_logprobs(attrs.evolve(config, temperature=0.7))  # True
    """
    if config.recompute_behavior_logprobs is not None:
        return config.recompute_behavior_logprobs
    return config.temperature != 1.0


async def reply_logprobs(client: Any, samples: Sequence[Sample]) -> list[list[float]]:
    """The logprobs ``client`` gives each sample's reply tokens, all requested at once.

    ``client`` is a ``mint`` sampling client (a step's sampler, or the KL
    reference model); its ``compute_logprobs`` is at temperature 1.

    Example::

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


def learner_metrics(output: Any, samples: Sequence[Sample]) -> dict[str, float]:
    """:func:`sample_train_metrics` of ``samples`` against a ``forward(_backward)`` output.

    ``output`` is the ``ForwardBackwardOutput`` of the datums of ``samples``
    (:func:`~mint_envkit.rl.datums.to_datums`); empty when it carries no
    ``loss_fn_outputs``. A ``forward`` (no gradient) gives the same learner
    logprobs as a ``forward_backward`` on the same weights.

    Example::

        learner_metrics(await fb_future, samples)["optim/entropy"]  # 1.83
    """
    outputs = getattr(output, "loss_fn_outputs", None)
    if not outputs:
        return {}
    learner = learner_logprobs(outputs, samples, plan_datums(samples))
    return sample_train_metrics([s.logprobs for s in samples], learner)


def sample_train_metrics(
    behaviour: Sequence[Sequence[float]], learner: Sequence[Sequence[float]]
) -> dict[str, float]:
    """tinker-cookbook's sampler-vs-learner metrics over every action token.

    ``optim/kl_sample_train_v1`` = mean(behaviour - learner),
    ``optim/kl_sample_train_v2`` = 0.5 * mean((behaviour - learner)^2),
    ``optim/entropy`` = -mean(behaviour). Empty with no tokens.

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
    return {
        "optim/kl_sample_train_v1": sum(b - t for b, t in pairs) / n,
        "optim/kl_sample_train_v2": 0.5 * sum((b - t) ** 2 for b, t in pairs) / n,
        "optim/entropy": -sum(b for b, _ in pairs) / n,
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
