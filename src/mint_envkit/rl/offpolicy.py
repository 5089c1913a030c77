"""Preparing batches ahead of training: bounded-staleness (off-policy) scheduling.

With ``Config.max_steps_off_policy = k`` (tinker-cookbook's name), the batch
of step ``s`` is sampled with the weights of version ``max(start, s - k)``
(version ``v``: the weights after ``v`` steps; ``start``: the step the run
began or resumed at). So sampling for the next ``k`` steps runs while the
current step trains, every sample is at most ``k`` versions old, and the
schedule, hence a run, is the same every time for a fixed seed. ``k = 0`` is
the on-policy loop: each step samples with its own weights, then trains.

A prepared batch carries, besides its rollouts, the logprobs the step needs
for every reply: the KL reference model's (when the run has a KL penalty)
and, when behaviour logprobs are recomputed, the sampler's weights' own
(``compute_logprobs``: temperature 1, no ``top_k`` / ``top_p``); both are
requested at once (``asyncio.gather``), as soon as the batch is sampled.

What the importance-sampling correction corrects: the loss weighs each token
by ``pi_learner / pi_behaviour``, where ``pi_behaviour`` is the logprob the
step's behaviour logprobs give it, taken from the weights that drew the reply
(so staleness is accounted for). The correction is exact only when those are
the logprobs of the distribution the reply was really drawn from, i.e. when
the sampler draws from the policy's own distribution (``temperature == 1``,
no ``top_k`` / ``top_p``). With recomputed behaviour logprobs the ratio is
the policy's (learner's weights vs sampler's weights, both untruncated at
temperature 1): exact for the weight staleness, while the gap between the
sampling distribution and the policy's is left uncorrected (on-policy the
ratio is 1, as the policy-gradient update intends).

With ``Config.num_substeps > 1`` a weight version is still one step: the
snapshot of version ``s + 1`` is requested after every substep of step ``s``
is submitted, so it holds the weights after the whole update, and a sample
``k`` versions old is ``k * num_substeps`` optimizer steps old (plus the
substeps before its own minibatch, which the ratio corrects the same way).
``Config.compute_post_kl``'s ``kl_pre_post_*`` compares the behaviour
logprobs (the sampler's weights, version ``s - k``) with the weights after
step ``s``: under overlap it is the drift over up to ``k + 1`` updates,
staleness included, not the last update alone (``optim/kl_sample_train_*``
is the same figure before the update).

Example::

    # not run: needs a sampling client (a running backend)
    pipeline = BatchPipeline(config, train_data, reference, start=0, total=10)
    pipeline.launch(step, sampling_client)   # at the top of every step
    prepared = await pipeline.take(step)
    prepared.version, prepared.batch.rollouts
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.rl.config import Config
from mint_envkit.rl.datums import Sample, training_samples
from mint_envkit.rl.diagnostics import mean_kl, recomputes_behavior_logprobs, reply_logprobs
from mint_envkit.rl.sampling import SampledBatch, sample_batch
from mint_envkit.rollouts.records import rollout_records
from mint_envkit.rollouts.sampler import begin_snapshot


def sampler_version(step: int, *, start: int, max_steps_off_policy: int) -> int:
    """The weight version that samples the batch of ``step``: ``max(start, step - k)``.

    Example::

        [sampler_version(s, start=0, max_steps_off_policy=1) for s in range(4)]  # [0, 0, 1, 2]
    """
    return max(start, step - max_steps_off_policy)


@attrs.frozen
class PreparedBatch:
    """A sampled batch and the logprobs of its replies, ready to score and train.

    Attributes:
        step: the step the batch belongs to.
        version: the weight version it was sampled with.
        batch: the rollouts and the sample requests sent.
        replies: a group's position -> its replies as :class:`Sample` (in
            :func:`~mint_envkit.rl.datums.training_samples` order, advantage 0).
        reference: position -> the KL reference model's logprobs of those
            replies (empty without a KL penalty).
        recomputed: position -> the sampler's weights' own logprobs of those
            replies (temperature 1, no truncation; empty when behaviour
            logprobs are not recomputed).
        sample_s, logprobs_s: seconds spent sampling, and on the logprobs.

    Example::

        # not run: needs a sampling client (a running backend)
        prepared = await prepare_batch(config, client, groups, step=3, version=2)
        prepared.step - prepared.version  # staleness: 1
    """

    step: int
    version: int
    batch: SampledBatch
    replies: Mapping[int, list[Sample]]
    reference: Mapping[int, list[list[float]]]
    recomputed: Mapping[int, list[list[float]]]
    sample_s: float
    logprobs_s: float

    def behaviour(self, position: int) -> list[list[float]]:
        """The behaviour logprobs of a group's replies: recomputed when they were, else sampled.

        Example::

            # not run: needs a sampling client (a running backend)
            prepared.behaviour(0)  # [[-0.41, -1.2], ...]
        """
        if position in self.recomputed:
            return self.recomputed[position]
        return [s.logprobs for s in self.replies[position]]

    def sampled(self, positions: Iterable[int]) -> list[list[float]] | None:
        """The sampled logprobs of the replies of ``positions``, when they were recomputed.

        In :meth:`trained` order; None when the behaviour logprobs are the
        sampled ones (nothing was recomputed). The entropy of the sampling
        distribution (``optim/entropy``) is measured on these.

        Example::

            # not run: needs a sampling client (a running backend)
            prepared.sampled(scored.advantages)  # [[-0.3, -0.9], ...] or None
        """
        if not self.recomputed:
            return None
        return [s.logprobs for p in positions for s in self.replies[p]]

    def trained(
        self, advantages: Mapping[int, Sequence[float]]
    ) -> tuple[list[Sample], list[list[float]], list[list[float]]]:
        """The samples that train, their KL reference logprobs and their behaviour logprobs.

        ``advantages`` maps a group's position to one advantage per episode
        (the groups that train). Each sample carries its behaviour logprobs
        (recomputed ones when they were), which the loss uses.

        Example::

            # not run: needs a sampling client (a running backend)
            samples, reference, behaviour = prepared.trained(scored.advantages)
        """
        samples: list[Sample] = []
        reference: list[list[float]] = []
        behaviour: list[list[float]] = []
        for position, values in advantages.items():
            own = training_samples(self.batch.rollouts, {position: values})
            lps = self.behaviour(position)
            samples += [attrs.evolve(s, logprobs=lp) for s, lp in zip(own, lps, strict=True)]
            behaviour += lps
            reference += self.reference.get(position, [])
        return samples, reference, behaviour

    def every_reply(self) -> list[Sample]:
        """Every reply of the batch with its behaviour logprobs, each with advantage 0.

        What a step that trains nothing measures instead, with a forward pass
        (see :func:`~mint_envkit.rl.train.train_on_batch`).

        Example::

            # not run: needs a sampling client (a running backend)
            len(prepared.every_reply())  # 8: two groups of four single-turn episodes
        """
        zeros = {p: [0.0] * len(self.batch.rollouts[p].trajectories) for p in self.replies}
        return self.trained(zeros)[0]

    def kl_metrics(self) -> dict[str, float]:
        """Which behaviour logprobs the step used, and the policy-vs-base KL over every reply.

        ``optim/behavior_logprobs_recomputed`` (1 or 0) and, with a KL
        reference, ``kl_policy_base``: the mean of behaviour minus reference
        logprob over every sampled reply token, trained or not.

        Example::

            # not run: needs a sampling client (a running backend)
            prepared.kl_metrics()["kl_policy_base"]  # 0.0002 at step 0
        """
        metrics = {"optim/behavior_logprobs_recomputed": float(bool(self.recomputed))}
        if self.reference:
            positions = list(self.reference)
            metrics["kl_policy_base"] = mean_kl(
                [lp for p in positions for lp in self.behaviour(p)],
                [lp for p in positions for lp in self.reference[p]],
            )
        return metrics


def staleness_metrics(prepared: PreparedBatch) -> dict[str, float]:
    """How old the weights that sampled a step's episodes are, in weight versions.

    ``off_policy/staleness_mean`` and ``off_policy/staleness_max`` over the
    batch's episodes (one snapshot samples a whole batch, so the two are
    equal), and ``off_policy/sampler_version``.

    Example::

        # not run: needs a sampling client (a running backend)
        staleness_metrics(prepared)  # {'off_policy/staleness_mean': 1.0, ...}
    """
    ages = [
        prepared.step - prepared.version
        for r in prepared.batch.rollouts
        for _ in (r.trajectories if r.error is None else [None])
    ]
    return {
        "off_policy/sampler_version": float(prepared.version),
        "off_policy/staleness_mean": sum(ages) / len(ages) if ages else 0.0,
        "off_policy/staleness_max": float(max(ages, default=0)),
    }


def versioned_records(
    prepared: PreparedBatch, advantages: Mapping[int, Sequence[float]]
) -> list[dict[str, Any]]:
    """The ``rollouts.jsonl`` lines of a training batch, each with its ``sampler_version``.

    Example::

        # not run: needs a sampling client (a running backend)
        versioned_records(prepared, scored.advantages)[0]["sampler_version"]  # 2
    """
    records = rollout_records(prepared.step, prepared.batch.rollouts, advantages, "train")
    return [{**record, "sampler_version": prepared.version} for record in records]


async def _per_position(
    client: Any, replies: Mapping[int, list[Sample]]
) -> dict[int, list[list[float]]]:
    flat = [s for samples in replies.values() for s in samples]
    values = await reply_logprobs(client, flat)
    out, at = {}, 0
    for position, samples in replies.items():
        out[position] = values[at : at + len(samples)]
        at += len(samples)
    return out


async def prepare_batch(
    config: Config,
    client: Any,
    groups: Sequence[Any],
    *,
    step: int,
    version: int,
    reference: Any = None,
) -> PreparedBatch:
    """Sample ``groups`` with ``client``; then ask for the replies' logprobs, all at once.

    ``reference`` is the KL reference model's sampling client (None: no KL
    penalty). The sampler's weights' own logprobs (temperature 1, no
    truncation) are recomputed when
    :func:`~mint_envkit.rl.diagnostics.recomputes_behavior_logprobs` says so.

    Example::

        # not run: needs a sampling client (a running backend)
        prepared = await prepare_batch(config, client, train.get_batch(0), step=0, version=0)
    """
    t0 = time.monotonic()
    batch = await sample_batch(config, client, groups, salt=step)
    t1 = time.monotonic()
    replies = {
        position: training_samples(batch.rollouts, {position: [0.0] * len(r.trajectories)})
        for position, r in enumerate(batch.rollouts)
        if r.error is None
    }
    empty: dict[int, list[list[float]]] = {}
    ref, recomputed = await asyncio.gather(
        _per_position(reference, replies) if reference is not None else _nothing(empty),
        _per_position(client, replies) if recomputes_behavior_logprobs(config) else _nothing(empty),
    )
    return PreparedBatch(
        step=step,
        version=version,
        batch=batch,
        replies=replies,
        reference=ref,
        recomputed=recomputed,
        sample_s=t1 - t0,
        logprobs_s=time.monotonic() - t1,
    )


async def _nothing(value: dict[int, list[list[float]]]) -> dict[int, list[list[float]]]:
    return value


class BatchPipeline:
    """Which batches are sampled when, and with which weights; the tasks in flight.

    At the top of step ``t`` the loop calls :meth:`launch` with the sampler of
    weight version ``t``: it starts every batch that version is due to sample
    (the batch of ``t`` itself at ``k = 0``; at ``k >= 1`` the batch of
    ``t + k``, and at the first step also those of ``start .. start + k``).
    :meth:`take` waits for the batch of a step. :meth:`request_snapshot`
    asks for the weight snapshot of the next step as soon as the current
    update is submitted (the service orders it behind the update), and
    :meth:`snapshot` returns it (or takes one now, at the first step).
    :meth:`close` cancels what is still in flight (a run that stopped early).

    Example::

        # not run: needs a sampling client (a running backend)
        pipeline = BatchPipeline(config, train_data, reference, start=0, total=3)
        try:
            pipeline.launch(0, sampler)
            prepared = await pipeline.take(0)
        finally:
            await pipeline.close()
    """

    def __init__(
        self, config: Config, train_data: Any, reference: Any, *, start: int, total: int
    ) -> None:
        self.config = config
        self.train_data = train_data
        self.reference = reference
        self.start = start
        self.total = total
        self.tasks: dict[int, asyncio.Task[PreparedBatch]] = {}
        self.snapshots: dict[int, asyncio.Task[Any]] = {}
        self.placed: set[int] = set()  # versions whose snapshot's save is numbered already
        self.launched: set[int] = set()

    def due(self, version: int) -> list[int]:
        """The steps whose batch the weights of ``version`` sample.

        Example::

            # not run: needs a Config and a dataset built elsewhere
            BatchPipeline(config_k1, data, None, start=0, total=4).due(0)  # [0, 1]
        """
        k = self.config.max_steps_off_policy
        return [
            s
            for s in range(version, min(version + k, self.total - 1) + 1)
            if sampler_version(s, start=self.start, max_steps_off_policy=k) == version
        ]

    def launch(self, version: int, client: Any) -> None:
        """Start sampling every batch due with ``client`` (the weights of ``version``); once."""
        if version in self.launched:
            return
        self.launched.add(version)
        for step in self.due(version):
            groups = self.train_data.get_batch(step % len(self.train_data))
            self.tasks[step] = asyncio.ensure_future(
                prepare_batch(
                    self.config,
                    client,
                    groups,
                    step=step,
                    version=version,
                    reference=self.reference,
                )
            )

    def request_snapshot(self, version: int, training: Any, *, sample: bool = True) -> None:
        """Ask for an unnamed sampler snapshot of weight ``version`` now (none past the last step).

        Call it right after the update that makes ``version`` was submitted:
        the service runs a client's requests in order, so the snapshot holds
        exactly that version (:func:`~mint_envkit.rollouts.sampler.begin_snapshot`).
        With ``sample`` the batches that version samples are launched the moment
        the snapshot is ready, whatever the loop is waiting for then (pass False
        when the step evaluates first: :meth:`launch` comes after its eval).
        """
        if version >= self.total or version in self.snapshots:
            return
        task, placed = begin_snapshot(training)
        if placed:
            self.placed.add(version)
        if sample:
            task = asyncio.ensure_future(self._launch_when_ready(version, task))
        self.snapshots[version] = task

    async def _launch_when_ready(self, version: int, snapshot: asyncio.Task[Any]) -> Any:
        client = await snapshot
        self.launch(version, client)
        return client

    def sampled_ahead(self, step: int) -> bool:
        """Whether the batch of ``step`` is already on its way and the snapshot of weight
        ``step`` already has its place among the client's calls: then the step may submit
        its update before it awaits that snapshot (which samples the later batches).

        Example::

            # not run: needs a Config and a dataset built elsewhere
            pipeline.sampled_ahead(3)  # True at max_steps_off_policy >= 1, after the first step
        """
        return step in self.tasks and step in self.placed

    async def snapshot(self, version: int, training: Any) -> Any:
        """The sampling client of weight ``version`` (requested now if it was not yet)."""
        self.request_snapshot(version, training, sample=False)
        self.placed.discard(version)
        return await self.snapshots.pop(version)

    async def take(self, step: int) -> PreparedBatch:
        """The prepared batch of ``step`` (waits for it)."""
        return await self.tasks.pop(step)

    async def close(self) -> None:
        """Cancel the batches still in flight and wait for them to stop."""
        tasks = [*self.tasks.values(), *self.snapshots.values()]
        self.tasks.clear()
        self.snapshots.clear()
        self.placed.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
