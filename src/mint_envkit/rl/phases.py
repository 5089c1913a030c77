"""A training step's score and train phases: advantages from rewards, the update submitted.

:func:`score_batch` turns a sampled batch into advantages and reward metrics;
:func:`start_training` submits the step's training calls and returns a task for
their metrics, so the loop (:mod:`mint_envkit.rl.train`) can submit the next
step's calls before this step's results arrive; :func:`train_on_batch` is the
two awaited at once. ``mint_envkit.rl.train`` re-exports the public ones.

Example::

    # not run: needs rollouts and a training client
    scored = score_batch(0, rollouts)
    metrics = await train_on_batch(training_client, config, samples, token_advantages)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import MintEnvkitError
from mint_envkit.rl.advantages import batch_advantages
from mint_envkit.rl.config import Config
from mint_envkit.rl.datums import Sample, datum_metrics, mask_parse_failures, plan_datums, to_datums
from mint_envkit.rl.diagnostics import learner_metrics
from mint_envkit.rl.update import start_update
from mint_envkit.rollouts.records import rollout_metrics
from mint_envkit.rollouts.types import GroupRollout

logger = logging.getLogger(__name__)


@attrs.frozen
class ScoredBatch:
    """A batch's advantages and reward metrics.

    Attributes:
        advantages: a group's position in the batch -> one advantage per
            episode; groups that do not train (failed; constant reward with
            ``remove_constant_reward_groups=True``) are absent.
        metrics: ``env/...`` reward, env and ``by_group`` metrics of the step.

    Example::

        # not run: needs rollouts built elsewhere
        scored = score_batch(step, rollouts)
        scored.metrics["env/all/reward/total"]  # 0.25
    """

    advantages: Mapping[int, list[float]]
    metrics: Mapping[str, Any]


def score_batch(
    step: int, rollouts: Sequence[GroupRollout], *, remove_constant_reward_groups: bool = False
) -> ScoredBatch:
    """Score one batch: reward metrics, and advantages within each group that trains.

    Groups whose rewards are all equal train with advantages of 0 (the default, as
    tinker-cookbook 0.3.0's ``remove_constant_reward_groups = False``), or, with
    ``remove_constant_reward_groups=True`` (``Config``'s field), are dropped (see
    :func:`~mint_envkit.rl.advantages.batch_advantages`).

    Raises:
        MintEnvkitError: every group of the step failed (the first error is
            in the message).

    Example::

        # not run: needs rollouts built elsewhere
        score_batch(0, rollouts).advantages  # {0: [0.5, -0.5], 1: [0.0, 0.0], 2: [1.0, -1.0]}
    """
    failed = [r for r in rollouts if r.error is not None]
    if rollouts and len(failed) == len(rollouts):
        raise MintEnvkitError(f"every group of step {step} failed; first error: {failed[0].error}")
    for rollout in failed:
        logger.warning("group %s failed: %s", rollout.index, rollout.error)
    metrics = rollout_metrics(rollouts, "env")
    advantages, by_group = batch_advantages(
        [
            None if r.error is not None else (r.rewards, [t.metrics for t in r.trajectories])
            for r in rollouts
        ],
        remove_constant=remove_constant_reward_groups,
    )
    return ScoredBatch(advantages=advantages, metrics={**metrics, **by_group})


async def train_on_batch(
    training: Any,
    config: Config,
    samples: Sequence[Sample],
    token_advantages: Sequence[list[float]],
    *,
    after_submit: Callable[[], None] | None = None,
    measure: Sequence[Sample] = (),
    sampled: Sequence[Sequence[float]] | None = None,
) -> dict[str, Any]:
    """``Config.num_substeps`` ``forward_backward`` + ``optim_step`` pairs on the samples.

    :func:`start_training`, then its results awaited (the loop itself submits the
    next step's calls before it awaits them).

    Example::

        # not run: needs a training client
        metrics = await train_on_batch(training_client, config, samples, token_advantages)
        metrics["train/datums"]  # 8
    """
    pending = await start_training(
        training,
        config,
        samples,
        token_advantages,
        after_submit=after_submit,
        measure=measure,
        sampled=sampled,
    )
    return await pending


async def start_training(
    training: Any,
    config: Config,
    samples: Sequence[Sample],
    token_advantages: Sequence[list[float]],
    *,
    after_submit: Callable[[], None] | None = None,
    measure: Sequence[Sample] = (),
    sampled: Sequence[Sequence[float]] | None = None,
    reference: Sequence[Sequence[float]] | None = None,
) -> asyncio.Task[dict[str, Any]]:
    """Submit a step's training calls; a task whose result is the step's training metrics.

    The datums are split into ``num_substeps`` minibatches (one
    ``forward_backward`` + ``optim_step`` pair each, 1 by default; see
    :mod:`mint_envkit.rl.update`). Every call is submitted before any is
    awaited, and this returns once they are: ``after_submit`` is called right
    after (the loop requests the next weight snapshot there, so the service
    queues it behind the whole update). With ``Config.mask_parse_failures``
    the replies that failed to parse get advantages of 0 first
    (:func:`~mint_envkit.rl.datums.mask_parse_failures`); with
    ``Config.compute_post_kl`` ``kl_pre_post_v1|v2`` are measured after the
    update, and, given the samples' KL ``reference`` logprobs,
    ``kl_post_reference_v1|v2`` (the updated weights against the reference). Besides the service's metrics the task reports
    ``optim/kl_sample_train_v1|v2`` from the samples' behaviour logprobs and
    the learner's, and ``optim/entropy`` (the sampling entropy) from the
    sampled logprobs: ``sampled`` (the sampler's own logprobs of the replies
    measured, given when the samples carry recomputed behaviour logprobs; then
    ``optim/cross_entropy_policy`` is reported too), else the samples' own
    (see :func:`~mint_envkit.rl.diagnostics.sample_train_metrics`).

    With no samples (every group dropped) nothing trains: the replies in
    ``measure`` (the loop passes every reply of the step) go through one
    ``forward`` instead, with no backward and no optimizer step, so the
    weights stay as they are and the three diagnostics are still reported;
    with nothing to measure nothing is sent. ``after_submit`` is called right
    after the ``forward`` is submitted.

    Example::

        # not run: needs a training client
        pending = await start_training(training_client, config, samples, token_advantages)
        metrics = await pending
        metrics["train/datums"]  # 8
    """
    plan = plan_datums(samples)  # a multi-turn episode trains as one datum
    metrics: dict[str, Any] = {
        "optim/lr": config.learning_rate,
        "train/tokens": sum(len(s.reply) for s in samples),
        **datum_metrics(samples, plan),
    }
    if not samples:  # nothing trains: measure the replies with a forward pass (no gradient)
        future = None
        if measure:
            zeros = [[0.0] * len(s.reply) for s in measure]
            future = await training.forward_async(
                to_datums(measure, zeros), config.loss_fn, config.loss_fn_config
            )
        if after_submit is not None:
            after_submit()
        return asyncio.ensure_future(_measured(metrics, future, measure, sampled))
    if config.mask_parse_failures:
        token_advantages, masked = mask_parse_failures(samples, token_advantages)
        metrics.update(masked)
    update = await start_update(
        training,
        config,
        samples,
        token_advantages,
        after_submit=after_submit,
        sampled=sampled,
        reference=reference,
    )
    return asyncio.ensure_future(_joined(metrics, update))


async def _measured(
    metrics: dict[str, Any],
    future: Any,
    measure: Sequence[Sample],
    sampled: Sequence[Sequence[float]] | None,
) -> dict[str, Any]:
    if future is not None:
        metrics.update(learner_metrics(await future, measure, sampled))
    return metrics


async def _joined(metrics: dict[str, Any], update: asyncio.Task[dict[str, Any]]) -> dict[str, Any]:
    return {**metrics, **(await update)}
