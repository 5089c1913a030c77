"""The RL training loop: sample, score, build datums, train, save; on MinT or locally.

It talks only through the ``mint`` SDK. With backend ``local`` (the default
without ``MINT_API_KEY``) it starts the embedded MinT-compatible server for
the run and stops it after; with ``mint`` it uses MinT (see
:mod:`mint_envkit.rollouts.backend`). Each step runs the phases below, one small
function each: :func:`sample_batch`, :func:`score_batch`, building the
datums (:mod:`mint_envkit.rl.datums`), :func:`train_on_batch` and
:func:`save_checkpoint`. ``main`` is the same function as
:func:`run_training`, under the name tinker-cookbook's loop uses.

Example::

    # not run: needs a running backend (it trains)
    import asyncio
    from mint_envkit.rl import Config, run_training

    result = asyncio.run(run_training(Config(dataset_builder=builder,
                                             model_name="mint-envkit/tiny-qwen3",
                                             log_path="runs/demo", max_steps=3)))
    print(result.final_metrics["env/all/reward/total"])
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.claims import LearningClaim
from mint_envkit.progress import Task, track
from mint_envkit.rl.advantages import batch_advantages, kl_adjusted_advantages
from mint_envkit.rl.checkpoints import prune_checkpoints, save_checkpoint
from mint_envkit.rl.config import Config, uses_kl_reference
from mint_envkit.rl.datums import (
    Sample,
    datum_metrics,
    mask_parse_failures,
    plan_datums,
    to_datums,
)
from mint_envkit.rl.diagnostics import learner_metrics, no_update_note
from mint_envkit.rl.evals import evaluate_split, run_claim
from mint_envkit.rl.health import train_watched
from mint_envkit.rl.offpolicy import BatchPipeline, staleness_metrics, versioned_records
from mint_envkit.rl.sampling import sample_batch
from mint_envkit.rl.update import run_update
from mint_envkit.rollouts.backend import (
    Connection,
    connect,
    resolve_backend,
    service_client,
)
from mint_envkit.rollouts.files import RunFiles
from mint_envkit.rollouts.records import progress_line, rollout_metrics
from mint_envkit.rollouts.sampler import sampler_snapshot
from mint_envkit.rollouts.types import GroupRollout

__all__ = [
    "RunResult",
    "ScoredBatch",
    "main",
    "run_training",
    "sample_batch",
    "save_checkpoint",
    "score_batch",
    "train_on_batch",
]

logger = logging.getLogger(__name__)


@attrs.frozen
class RunResult:
    """What a finished run reports.

    Attributes:
        log_path: the run directory.
        steps: how many steps the run has completed in total.
        final_metrics: the metrics of the last step (from ``metrics.jsonl``).
        final_checkpoint: the final checkpoint record, or None.
        resumed_from: the step the run resumed at (0 for a fresh run).
        backend: ``"local"`` or ``"mint"``.
        claim: the run's before/after claim (its first held-out eval against its final
            one, measured where nothing is cut off; see
            :mod:`mint_envkit.evaluation.claims`), None without both evals.

    Example::

        # not run: needs a running backend (it trains)
        result = await run_training(config)
        result.steps, result.backend  # (3, 'local')
    """

    log_path: str
    steps: int
    final_metrics: dict[str, Any]
    final_checkpoint: dict[str, Any] | None
    resumed_from: int
    backend: str
    claim: LearningClaim | None = None


@attrs.frozen
class ScoredBatch:
    """A batch's advantages and reward metrics.

    Attributes:
        advantages: a group's position in the batch -> one advantage per
            episode; groups that do not train (failed; constant reward unless
            ``Config.remove_constant_reward_groups`` is False) are absent.
        metrics: ``env/...`` reward, env and ``by_group`` metrics of the step.

    Example::

        # not run: needs rollouts built elsewhere
        scored = score_batch(step, rollouts)
        scored.metrics["env/all/reward/total"]  # 0.25
    """

    advantages: Mapping[int, list[float]]
    metrics: Mapping[str, Any]


def score_batch(
    step: int, rollouts: Sequence[GroupRollout], *, remove_constant_reward_groups: bool = True
) -> ScoredBatch:
    """Score one batch: reward metrics, and advantages within each group that trains.

    Groups whose rewards are all equal do not train unless
    ``remove_constant_reward_groups`` is False (``Config``'s field): then they
    train with advantages of 0 (see
    :func:`~mint_envkit.rl.advantages.batch_advantages`).

    Raises:
        MintEnvkitError: every group of the step failed (the first error is
            in the message).

    Example::

        # not run: needs rollouts built elsewhere
        score_batch(0, rollouts).advantages  # {0: [0.5, -0.5], 2: [1.0, -1.0]}
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


def _fields(config: Config, *names: str) -> dict[str, Any]:
    return {name: getattr(config, name) for name in names}


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

    The datums are split into ``num_substeps`` minibatches (one pair each, 1
    by default; see :mod:`mint_envkit.rl.update`). Every call is submitted
    before any is awaited; ``after_submit`` is called right after they are
    (the loop requests the next weight snapshot there, so the service queues
    it behind the whole update). With ``Config.mask_parse_failures`` the
    replies that failed to parse get advantages of 0 first
    (:func:`~mint_envkit.rl.datums.mask_parse_failures`); with
    ``Config.compute_post_kl`` ``kl_pre_post_v1|v2`` are measured after the
    update. Besides the
    service's metrics it reports ``optim/kl_sample_train_v1|v2`` from the
    samples' behaviour logprobs and the learner's, and ``optim/entropy`` (the
    sampling entropy) from the sampled logprobs: ``sampled`` (the sampler's
    own logprobs of the replies measured, given when the samples carry
    recomputed behaviour logprobs; then ``optim/cross_entropy_policy`` is
    reported too), else the samples' own (see
    :func:`~mint_envkit.rl.diagnostics.sample_train_metrics`).

    With no samples (every group dropped) nothing trains: the replies in
    ``measure`` (the loop passes every reply of the step) go through one
    ``forward`` instead, with no backward and no optimizer step, so the
    weights stay as they are and the three diagnostics are still reported;
    with nothing to measure nothing is sent. ``after_submit`` is called right
    after the ``forward`` is submitted.

    Example::

        # not run: needs a training client
        metrics = await train_on_batch(training_client, config, samples, token_advantages)
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
        if future is not None:
            metrics.update(learner_metrics(await future, measure, sampled))
        return metrics
    if config.mask_parse_failures:
        token_advantages, masked = mask_parse_failures(samples, token_advantages)
        metrics.update(masked)
    update = await run_update(
        training, config, samples, token_advantages, after_submit=after_submit, sampled=sampled
    )
    return {**metrics, **update}


def _say(message: str) -> None:
    print(f"mint_envkit: {message}", file=sys.stderr, flush=True)


@attrs.frozen
class _Run:
    """What every step of one run shares."""

    config: Config
    files: RunFiles
    train_data: Any
    test_data: Any
    total: int
    training: Any
    reference: Any
    rest: Any  # the SDK's REST client: deletes old checkpoints


async def open_training_client(
    config: Config, service: Any, files: RunFiles, checkpoint: dict[str, Any] | None
) -> Any:
    """The run's training client: resumed from ``checkpoint``, warm-started from
    ``config.load_checkpoint_path``, or a fresh LoRA (RL and distillation alike)."""
    if checkpoint:
        _say(f"resuming {config.log_path} at step {checkpoint['step']}")
        files.forget_after(int(checkpoint["step"]))
        return await service.create_training_client_from_state_with_optimizer_async(
            checkpoint["state_path"]
        )
    files.forget_after(0)
    if config.load_checkpoint_path:  # a warm start: its weights, a fresh optimizer
        _say(f"starting from the weights of {config.load_checkpoint_path}")
        return await service.create_training_client_from_state_async(config.load_checkpoint_path)
    return await service.create_lora_training_client_async(
        base_model=config.model_name,
        rank=config.lora_rank,
        seed=config.sampling_seed,
        **_fields(config, "train_mlp", "train_attn", "train_unembed"),
    )


async def _open(
    config: Config, service: Any, files: RunFiles, checkpoint: dict[str, Any] | None
) -> tuple[Any, Any, Any]:
    """The training client (fresh, or resumed from ``checkpoint``), the KL reference, REST."""
    training = await open_training_client(config, service, files, checkpoint)
    reference = None
    if uses_kl_reference(config.kl_penalty_coef) and config.kl_reference_config is not None:
        reference = await service.create_sampling_client_async(
            base_model=config.kl_reference_config.base_model
        )
    return training, reference, service.create_rest_client()


async def _evaluate(run: _Run, client: Any, step: int) -> dict[str, Any]:
    return await evaluate_split(run.config, run.files, run.test_data, client, step)


async def _final_evaluation(run: _Run, step: int, current: dict[str, Any]) -> dict[str, Any]:
    """``test_final/env/...`` after the last step's update (empty when no eval is due)."""
    if not (run.config.eval_every and run.test_data is not None and step + 1 == run.total):
        return {}
    t0 = time.monotonic()
    client = await sampler_snapshot(run.training)
    metrics = await evaluate_split(
        run.config, run.files, run.test_data, client, step, final=True, current=current
    )
    return {**metrics, "time/eval_final": time.monotonic() - t0}


async def _step(run: _Run, step: int, pipeline: BatchPipeline, task: Task) -> dict[str, Any] | None:
    """One training step; appends its metrics (and checkpoint) and returns the checkpoint."""
    config, files = run.config, run.files
    step_start = time.monotonic()
    metrics: dict[str, Any] = {"step": step}
    # An unnamed (ephemeral) snapshot of weight version ``step``, requested
    # right after the previous update was submitted: nothing is written to storage.
    sampling_client = await pipeline.snapshot(step, run.training)
    t0 = time.monotonic()
    if config.eval_every and run.test_data is not None and step % config.eval_every == 0:
        # before this version's training batches start: the engine never mixes the two
        metrics.update(await _evaluate(run, sampling_client, step))
        metrics["time/eval"] = time.monotonic() - t0
        t0 = time.monotonic()
    pipeline.launch(step, sampling_client)
    prepared = await pipeline.take(step)
    metrics["time/sample"] = time.monotonic() - t0
    metrics["time/logprobs"] = prepared.logprobs_s
    metrics["sample_requests"] = prepared.batch.requests
    metrics.update(staleness_metrics(prepared))
    rollouts = prepared.batch.rollouts

    try:
        scored = score_batch(
            step, rollouts, remove_constant_reward_groups=config.remove_constant_reward_groups
        )
    except MintEnvkitError as err:
        files.append_rollouts(versioned_records(prepared, {}))
        raise MintEnvkitError(f"{err}. Tracebacks are in {files.rollouts_path}.") from None
    metrics.update(scored.metrics)
    metrics.update(prepared.kl_metrics())

    samples, reference, behaviour = prepared.trained(scored.advantages)
    token_advantages = [s.token_advantages() for s in samples]
    if run.reference is not None and samples:
        token_advantages, _ = kl_adjusted_advantages(
            token_advantages, behaviour, reference, config.kl_penalty_coef
        )
    files.append_rollouts(versioned_records(prepared, scored.advantages))

    t2 = time.monotonic()
    metrics.update(
        await train_on_batch(
            run.training,
            config,
            samples,
            token_advantages,
            after_submit=lambda: pipeline.request_snapshot(step + 1, run.training),
            measure=() if samples else prepared.every_reply(),
            sampled=prepared.sampled(scored.advantages if samples else prepared.replies),
        )
    )
    metrics["time/train"] = time.monotonic() - t2
    metrics.update(await _final_evaluation(run, step, metrics))

    t3 = time.monotonic()
    checkpoint = await save_checkpoint(run.training, config, step + 1, run.total)
    if checkpoint is not None:
        metrics["time/save"] = time.monotonic() - t3
    metrics["time/step"] = time.monotonic() - step_start
    files.append_metrics(metrics)
    if checkpoint is not None:
        files.append_checkpoint(checkpoint)
        await prune_checkpoints(run.rest, config, files)
    line = progress_line(step, metrics)
    note = no_update_note(metrics, len(rollouts))
    task.advance(detail=line + (f"  {note}" if note else ""))
    return checkpoint


async def run_training(config: Config) -> RunResult:
    """Train ``config`` to the end; resume when ``config.log_path`` has a checkpoint.

    Raises:
        BackendError: the backend is unreachable (fails within
            ``config.preflight_timeout_s``), refuses the key, or is lost
            mid-run (within ``config.backend_lost_after_s``; the message names
            the URL, the step and how to resume). An embedded server the run
            started is restarted once instead, resuming from the last checkpoint.
        ConfigError: the log directory (or the embedded backend's state dir)
            is not writable or (nearly) full; found before any work.
        MintEnvkitError: every group of a step failed (the first errors are
            in the message and in ``rollouts.jsonl``), or ``fail_fast`` and an
            env raised.

    Example::

        # not run: needs a running backend (it trains)
        result = await run_training(config)
        result.final_metrics["env/all/correct"]
    """
    files = RunFiles(config.log_path)
    files.ensure()
    train_data, test_data = await config.dataset_builder()
    total = config.max_steps or len(train_data)
    public = config.public_dict()
    files.write_config(public)
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    if checkpoint and start >= total:
        # Finished earlier: report it without starting a backend.
        return run_result(config, files, start, checkpoint, start, resolve_backend(config.backend))

    # Config.loggers: every metrics row also goes to the trackers (rollouts/trackers.py).
    with files.tracking(config.loggers, public):
        async with connect(config.backend_settings) as connection:
            if connection.backend == "local":
                _say(f"training on the embedded local backend at {connection.base_url}")
                home = _local_checkpoint_home(connection)
                _say(f"checkpoints: {home} (mint-envkit checkpoints list)")

            # A lost backend fails within Config.backend_lost_after_s, naming the URL, the
            # step and how to resume; an embedded server this run started is restarted once.
            async def train(current: Connection) -> dict[str, Any] | None:
                return await _train(config, current, files, train_data, test_data, total)

            checkpoint = await train_watched(config, connection, files, train, total)
    result = run_result(config, files, total, checkpoint, start, connection.backend)
    if result.claim is not None:
        _say(result.claim.line())
    return result


async def _train(
    config: Config,
    connection: Connection,
    files: RunFiles,
    train_data: Any,
    test_data: Any,
    total: int,
) -> dict[str, Any] | None:
    """Open the clients, resuming from the last checkpoint, and run the remaining steps."""
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    async with service_client(connection) as service:
        training, reference, rest = await _open(config, service, files, checkpoint)
        run = _Run(config, files, train_data, test_data, total, training, reference, rest)
        pipeline = BatchPipeline(config, train_data, reference, start=start, total=total)
        try:
            with track(f"train {config.log_path}", total, "steps", done=start) as task:
                for step in range(start, total):
                    checkpoint = await _step(run, step, pipeline, task) or checkpoint
        finally:
            await pipeline.close()
    return checkpoint


def _local_checkpoint_home(connection: Connection) -> str:
    """Where a local run's checkpoints are written: the state dir of the server it uses."""
    if connection.restart is None:  # a server someone else started: its --state-dir
        return f"the state dir of the server at {connection.base_url}"
    from mint_envkit.local.engine.core import default_state_dir  # this process runs the server

    return str(default_state_dir())


main = run_training
"""The cookbook-compatible name of :func:`run_training` (tinker-cookbook's loop is ``main``).

Example::

    # not run: needs a running backend (it trains)
    result = await main(config)
"""


def run_result(
    config: Config,
    files: RunFiles,
    steps: int,
    checkpoint: dict[str, Any] | None,
    start: int,
    backend: str,
) -> RunResult:
    """The :class:`RunResult` of a run (RL or distillation) from its log files."""
    metrics = files.metrics()
    return RunResult(
        log_path=config.log_path,
        steps=steps,
        final_metrics=metrics[-1] if metrics else {},
        final_checkpoint=checkpoint,
        resumed_from=start,
        backend=backend,
        claim=run_claim(config, files),
    )
