"""The RL training loop: sample, score, build datums, train, save; on MinT or locally.

It talks only through the ``mint`` SDK. With backend ``local`` (the default
without ``MINT_API_KEY``) it starts the embedded MinT-compatible server for
the run and stops it after; with ``mint`` it uses MinT (see
:mod:`mint_envkit.rollouts.backend`). Each step runs the phases below, one small
function each: :func:`sample_batch`, :func:`score_batch`, building the
datums (:mod:`mint_envkit.rl.datums`), :func:`train_on_batch` and
:func:`save_checkpoint`. ``main`` is the same function as
:func:`run_training`, under the name tinker-cookbook's loop uses.

Steps overlap by their waiting, not by their work: a step submits its update (and
its checkpoint's saves, when due) and the next step samples, scores and submits
its own before the first one's results are awaited. The service runs a
client's calls in order, so every call sees the same weights as it would one
step at a time (the same run, bit for bit); only the round trip of the results
is no longer on the path from one update to the next. Metrics rows and
checkpoints are written in step order as the results arrive, so a step's
``time/step`` and ``time/train`` overlap the next step's.

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

import asyncio
import contextlib
import time
from typing import Any

import attrs

from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.claims import LearningClaim
from mint_envkit.progress import Task, say, track
from mint_envkit.rl.checkpoints import prune_checkpoints, save_checkpoint, start_checkpoint
from mint_envkit.rl.config import Config, uses_kl_reference
from mint_envkit.rl.diagnostics import no_update_note
from mint_envkit.rl.evals import evaluate_split, run_claim
from mint_envkit.rl.health import train_watched
from mint_envkit.rl.kl import kl_shaped_advantages, open_reference
from mint_envkit.rl.offpolicy import BatchPipeline, staleness_metrics, versioned_records
from mint_envkit.rl.phases import ScoredBatch, score_batch, start_training, train_on_batch
from mint_envkit.rl.sampling import preload_renderers, sample_batch
from mint_envkit.rl.teaching import StallWatch, health_summary, replies_truncated, step_health
from mint_envkit.rollouts.backend import (
    Connection,
    connect,
    resolve_backend,
    service_client,
)
from mint_envkit.rollouts.records import progress_line
from mint_envkit.rollouts.sampler import sampler_snapshot
from mint_envkit.rollouts.tool_figures import tool_figures
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.record import Figures

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
        not_learning: how many steps could teach nothing, why and the fix
            (:func:`~mint_envkit.rl.teaching.health_summary`); None when every step could.

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
    not_learning: str | None = None


def _fields(config: Config, *names: str) -> dict[str, Any]:
    return {name: getattr(config, name) for name in names}


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
    stalls: StallWatch = attrs.field(factory=StallWatch)  # steps in a row that teach nothing


async def open_training_client(
    config: Config, service: Any, files: RunFiles, checkpoint: dict[str, Any] | None
) -> Any:
    """The run's training client: resumed from ``checkpoint``, warm-started from
    ``config.load_checkpoint_path``, or a fresh LoRA (RL and distillation alike)."""
    if checkpoint:
        say(f"resuming {config.log_path} at step {checkpoint['step']}")
        files.forget_after(int(checkpoint["step"]))
        return await service.create_training_client_from_state_with_optimizer_async(
            checkpoint["state_path"]
        )
    files.forget_after(0)
    if config.load_checkpoint_path:  # a warm start: its weights, a fresh optimizer
        say(f"starting from the weights of {config.load_checkpoint_path}")
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
        reference = await open_reference(service, config.kl_reference_config)
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


def _eval_due(run: _Run, step: int) -> bool:
    """Whether the held-out eval runs with the weights of ``step`` (before its batches)."""
    every = run.config.eval_every
    return bool(every and run.test_data is not None and step % every == 0)


def _phase(task: Task | None, step: int, what: str, since: float) -> None:
    """``step N: what`` on the progress display, timed from step N's own start."""
    if task is not None:
        task.phase(f"step {step}: {what}", since=since)


async def _sample_with_this_version(
    run: _Run,
    step: int,
    pipeline: BatchPipeline,
    metrics: dict[str, Any],
    task: Task | None,
    since: float,
) -> None:
    """The step's snapshot: the held-out eval when due, then the batches it samples."""
    # An unnamed (ephemeral) snapshot of weight version ``step``, requested
    # right after the previous update was submitted: nothing is written to storage.
    t0 = time.monotonic()
    sampling_client = await pipeline.snapshot(step, run.training)
    if _eval_due(run, step):
        # before this version's training batches start: the engine never mixes the two
        _phase(task, step, "held-out eval", since)
        metrics.update(await _evaluate(run, sampling_client, step))
        metrics["time/eval"] = time.monotonic() - t0
    pipeline.launch(step, sampling_client)


@attrs.frozen
class _Submitted:
    """A step whose calls are all submitted: what finishing it needs."""

    step: int
    started: float
    metrics: dict[str, Any]
    update: asyncio.Task[dict[str, Any]]
    checkpoint: asyncio.Task[dict[str, Any]] | None
    submitted_at: float
    episodes: int
    truncated: float | None = None  # the share of its sampled replies cut off

    def cancel(self) -> None:
        for pending in (self.update, self.checkpoint):
            if pending is not None:
                pending.cancel()


async def submit_step(
    run: _Run, step: int, pipeline: BatchPipeline, task: Task | None = None
) -> _Submitted:
    """One step up to its update (and checkpoint saves, when due) submitted; ``task``
    hears each phase as it starts."""
    config, files = run.config, run.files
    step_start = time.monotonic()
    metrics: dict[str, Any] = {"step": step}
    # Sampled ahead (max_steps_off_policy >= 1, after the first step): the update goes
    # first, and the snapshot of this step's weights samples the later batches after it.
    ahead = pipeline.sampled_ahead(step)
    if not ahead:
        await _sample_with_this_version(run, step, pipeline, metrics, task, step_start)
    _phase(task, step, "sampling", step_start)
    t0 = time.monotonic()
    prepared = await pipeline.take(step)
    metrics["time/sample"] = time.monotonic() - t0
    metrics["time/logprobs"] = prepared.logprobs_s
    metrics["sample_requests"] = prepared.batch.requests
    metrics.update(staleness_metrics(prepared))
    rollouts = prepared.batch.rollouts

    _phase(task, step, "scoring", step_start)
    try:
        scored = score_batch(
            step, rollouts, remove_constant_reward_groups=config.remove_constant_reward_groups
        )
    except MintEnvkitError as err:
        files.append_rollouts(versioned_records(prepared, {}))
        raise MintEnvkitError(f"{err}. Tracebacks are in {files.rollouts_path}.") from None
    metrics.update(scored.metrics)
    metrics.update(prepared.kl_metrics())
    metrics.update(Figures(tools=tool_figures(rollouts)).metrics(prefix="env"))  # an env with tools

    samples, reference, behaviour = prepared.trained(scored.advantages)
    token_advantages = [s.token_advantages() for s in samples]
    if run.reference is not None and samples:
        token_advantages, _ = kl_shaped_advantages(
            samples,
            token_advantages,
            behaviour,
            reference,
            coef=config.kl_penalty_coef,
            discount=config.kl_discount_factor,
        )
    files.append_rollouts(versioned_records(prepared, scored.advantages))

    _phase(task, step, "training", step_start)
    submitted_at = time.monotonic()
    update = await start_training(
        run.training,
        config,
        samples,
        token_advantages,
        after_submit=lambda: pipeline.request_snapshot(
            step + 1, run.training, sample=not _eval_due(run, step + 1)
        ),
        measure=() if samples else prepared.every_reply(),
        sampled=prepared.sampled(scored.advantages if samples else prepared.replies),
        reference=reference if run.reference is not None else None,
    )
    # right behind the update: the saves hold exactly the weights after this step
    checkpoint = await start_checkpoint(run.training, config, step + 1, run.total)
    if ahead:
        await _sample_with_this_version(run, step, pipeline, metrics, task, step_start)
    return _Submitted(
        step,
        step_start,
        metrics,
        update,
        checkpoint,
        submitted_at,
        len(rollouts),
        replies_truncated(rollouts),
    )


async def finish_step(run: _Run, submitted: _Submitted, task: Task) -> dict[str, Any] | None:
    """Await a submitted step's results; append its metrics (and checkpoint); return that."""
    config, files, step = run.config, run.files, submitted.step
    _phase(task, step, "training", submitted.started)
    metrics = {**submitted.metrics, **(await submitted.update)}
    metrics["time/train"] = time.monotonic() - submitted.submitted_at
    health = step_health(metrics, submitted.truncated)
    metrics.update(health.metrics())
    if run.config.eval_every and run.test_data is not None and step + 1 == run.total:
        _phase(task, step, "final held-out eval", submitted.started)
    metrics.update(await _final_evaluation(run, step, metrics))
    checkpoint = None
    if submitted.checkpoint is not None:
        _phase(task, step, "saving", submitted.started)
        t3 = time.monotonic()
        checkpoint = await submitted.checkpoint
        metrics["time/save"] = time.monotonic() - t3
    metrics["time/step"] = time.monotonic() - submitted.started
    files.append_metrics(metrics)
    if checkpoint is not None:
        files.append_checkpoint(checkpoint)
        await prune_checkpoints(run.rest, config, files)
    line = progress_line(step, metrics)
    notes = [no_update_note(metrics, submitted.episodes), run.stalls.note(health)]
    task.advance(detail="  ".join([line, *(n for n in notes if n)]))
    return checkpoint


async def run_steps(run: _Run, steps: range, pipeline: BatchPipeline, task: Task) -> Any:
    """Run ``steps``, each submitted before the step before it is finished; the last checkpoint.

    Step ``s + 1`` samples, scores and submits its update while step ``s``'s results are
    still on their way (the service runs the calls in order, so nothing changes but
    the waiting): one step's results are awaited at a time, in order, and the metrics
    rows and checkpoints are written in step order. Should a step fail, the step
    before it is still finished (its metrics and checkpoint written) before the error
    is raised.
    """
    checkpoint, before = None, None
    try:
        for step in steps:
            current = await submit_step(run, step, pipeline, task)
            if before is not None:
                done, before = before, None
                try:
                    checkpoint = await finish_step(run, done, task) or checkpoint
                except BaseException:
                    current.cancel()
                    raise
            before = current
        if before is not None:
            done, before = before, None
            checkpoint = await finish_step(run, done, task) or checkpoint
    except Exception:
        if before is not None:  # keep what the step before the failure trained
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    finish_step(run, before, task), run.config.backend_lost_after_s
                )
        raise
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
    files.write_code_state()
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    if checkpoint and start >= total:
        # Finished earlier: report it without starting a backend.
        return run_result(config, files, start, checkpoint, start, resolve_backend(config.backend))

    # Config.loggers: every metrics row also goes to the trackers (runs/trackers.py).
    with files.tracking(config.loggers, public):
        async with connect(config.backend_settings) as connection:
            if connection.backend == "local":
                say(f"training on the embedded local backend at {connection.base_url}")
                home = _local_checkpoint_home(connection)
                say(f"checkpoints: {home} (mint-envkit checkpoints list)")

            # A lost backend fails within Config.backend_lost_after_s, naming the URL, the
            # step and how to resume; an embedded server this run started is restarted once.
            async def train(current: Connection) -> dict[str, Any] | None:
                return await _train(config, current, files, train_data, test_data, total)

            checkpoint = await train_watched(config, connection, files, train, total)
    result = run_result(config, files, total, checkpoint, start, connection.backend)
    if result.claim is not None:
        say(result.claim.line())
    if result.not_learning is not None:
        say(result.not_learning)
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
        # the renderers' tokenizers load while the service opens the clients, not in step 0
        (training, reference, rest), _ = await asyncio.gather(
            _open(config, service, files, checkpoint),
            asyncio.to_thread(preload_renderers, train_data, test_data),
        )
        run = _Run(config, files, train_data, test_data, total, training, reference, rest)
        pipeline = BatchPipeline(config, train_data, reference, start=start, total=total)
        try:
            with track(f"train {config.log_path}", total, "steps", done=start) as task:
                checkpoint = await run_steps(run, range(start, total), pipeline, task) or checkpoint
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
        not_learning=health_summary(metrics),
    )
