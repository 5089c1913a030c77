"""On-policy distillation from an env: the student samples, a teacher scores, reverse KL trains.

:func:`run_distillation` is the sibling of :func:`~mint_envkit.rl.run_training`
with the same :class:`~mint_envkit.rl.Config`, run directory, evals,
checkpoints, resume and backends (MinT or the embedded one). Each step:

1. sample the step's problems on-policy with the student's current weights
   (:func:`~mint_envkit.rl.sampling.sample_batch`); rewards are computed and
   logged exactly as in RL (``env/all/...``), but do not train;
2. build one :class:`~mint_envkit.rl.teacher.TeacherSample` per reply: the
   teacher reads the env's :meth:`~mint_envkit.MessageEnv.teacher_messages`
   view (default: the student's messages) and the student's exact reply;
3. one ``mint.mint.forward_backward_reverse_kl`` against ``teacher`` (a base
   model name or a ``tinker://`` checkpoint the backend serves) and one
   ``optim_step``;
4. save a checkpoint when due.

The per-token reverse KL of the step is logged as ``distill/reverse_kl``
(the loss summed over reply tokens / reply tokens).

Example::

    # not run: needs a running backend (it trains)
    from mint_envkit.rl import Config, run_distillation

    result = await run_distillation(config, teacher=config.model_name)
    result.final_metrics["distill/reverse_kl"]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.checks import check_number
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.progress import Task, say, track
from mint_envkit.rl.checkpoints import prune_checkpoints, save_checkpoint
from mint_envkit.rl.config import Config, adam_params
from mint_envkit.rl.evals import evaluate_split
from mint_envkit.rl.health import train_watched
from mint_envkit.rl.sampling import sample_batch
from mint_envkit.rl.teacher import RecordingGroup, TeacherSample, reverse_kl_datum, teacher_samples
from mint_envkit.rl.train import (
    RunResult,
    open_training_client,
    run_result,
)
from mint_envkit.rollouts.backend import (
    Connection,
    connect,
    resolve_backend,
    service_client,
)
from mint_envkit.rollouts.records import progress_line, rollout_metrics, rollout_records
from mint_envkit.rollouts.sampler import sampler_snapshot
from mint_envkit.rollouts.settings import BackendSettings
from mint_envkit.runs.files import RunFiles


def _check(teacher: Any, temperature: Any) -> None:
    if not isinstance(teacher, str) or not teacher.strip():
        raise ConfigError(
            f"run_distillation(teacher=...) must name a base model or a tinker:// checkpoint, "
            f"got {teacher!r}; e.g. teacher=config.model_name for a privileged teacher"
        )
    check_number(
        temperature,
        "run_distillation(temperature=...)",
        low=0,
        low_open=True,
        why="1.0: the models' own distributions",
    )


def _loss_sum(output: Any) -> float:
    data = output.loss.data
    return float(sum(data)) if isinstance(data, list) else float(data)


async def distill_on_samples(
    training: Any,
    config: Config,
    samples: Sequence[TeacherSample],
    *,
    teacher: str,
    temperature: float = 1.0,
) -> dict[str, Any]:
    """One ``forward_backward_reverse_kl`` against ``teacher`` and one ``optim_step``.

    The optimizer step is submitted once the gradient is in. Returns the service's
    metrics (``train/...``, ``optim/...``) and ``distill/reverse_kl`` (the
    loss summed over the reply tokens, per reply token), ``distill/replies``
    and ``train/tokens``. With no samples nothing is sent.

    Example::

        # not run: needs a running backend (it trains)
        metrics = await distill_on_samples(training, config, samples, teacher="Qwen/Qwen3-0.6B")
        metrics["distill/reverse_kl"]  # 0.41
    """
    tokens = sum(len(s.reply) for s in samples)
    metrics: dict[str, Any] = {
        "optim/lr": config.learning_rate,
        "train/tokens": tokens,
        "distill/replies": len(samples),
    }
    if not samples:
        return metrics
    from mint.mint import ForwardBackwardReverseKLResponse, forward_backward_reverse_kl_async

    # The SDK's MinT calls run on its own event loop (as the training client's do); the
    # update waits for the gradient, so the optimizer step never overtakes it.
    submitted = training.holder.run_coroutine_threadsafe(
        forward_backward_reverse_kl_async(
            training,
            reference_model_path=teacher,
            data=[reverse_kl_datum(s) for s in samples],
            temperature=temperature,
        )
    )
    fb = await (await submitted)
    if not isinstance(fb, ForwardBackwardReverseKLResponse):
        fb = ForwardBackwardReverseKLResponse.model_validate(fb)
    opt = await (await training.optim_step_async(adam_params(config)))
    for key, value in (fb.metrics or {}).items():
        metrics[f"train/{key}"] = value
    for key, value in ((opt.metrics if opt else None) or {}).items():
        metrics[f"optim/{key}"] = value
    metrics["distill/reverse_kl"] = sum(_loss_sum(o) for o in fb.outputs) / max(1, tokens)
    return metrics


@attrs.frozen
class _Run:
    config: Config
    files: RunFiles
    train_data: Any
    test_data: Any
    total: int
    training: Any
    rest: Any
    teacher: str
    temperature: float


def _eval_due(run: _Run) -> bool:
    return bool(run.config.eval_every and run.test_data is not None)


async def _step(run: _Run, step: int, task: Task) -> dict[str, Any] | None:
    config, files = run.config, run.files
    start = time.monotonic()
    metrics: dict[str, Any] = {"step": step}
    client = await sampler_snapshot(run.training)
    if _eval_due(run) and step % config.eval_every == 0:
        t0 = time.monotonic()
        metrics.update(await evaluate_split(config, files, run.test_data, client, step))
        metrics["time/eval"] = time.monotonic() - t0
    t0 = time.monotonic()
    groups = [RecordingGroup(g) for g in run.train_data.get_batch(step % len(run.train_data))]
    batch = await sample_batch(config, client, groups, salt=step)
    metrics["time/sample"] = time.monotonic() - t0
    metrics["sample_requests"] = batch.requests
    rollouts = batch.rollouts
    files.append_rollouts(rollout_records(step, rollouts, {}, "train"))
    failed = [r for r in rollouts if r.error is not None]
    if rollouts and len(failed) == len(rollouts):
        raise MintEnvkitError(
            f"every group of step {step} failed; first error: {failed[0].error}. "
            f"Tracebacks are in {files.rollouts_path}."
        )
    metrics.update(rollout_metrics(rollouts, "env"))
    samples = teacher_samples(rollouts, [g.envs for g in groups])
    t0 = time.monotonic()
    metrics.update(
        await distill_on_samples(
            run.training, config, samples, teacher=run.teacher, temperature=run.temperature
        )
    )
    metrics["time/train"] = time.monotonic() - t0
    if _eval_due(run) and step + 1 == run.total:
        t0 = time.monotonic()
        final_client = await sampler_snapshot(run.training)
        metrics.update(
            await evaluate_split(
                config, files, run.test_data, final_client, step, final=True, current=metrics
            )
        )
        metrics["time/eval_final"] = time.monotonic() - t0
    t0 = time.monotonic()
    checkpoint = await save_checkpoint(run.training, config, step + 1, run.total)
    if checkpoint is not None:
        metrics["time/save"] = time.monotonic() - t0
    metrics["time/step"] = time.monotonic() - start
    files.append_metrics(metrics)
    if checkpoint is not None:
        files.append_checkpoint(checkpoint)
        await prune_checkpoints(run.rest, config, files)
    kl = metrics.get("distill/reverse_kl")
    line = progress_line(step, metrics)
    task.advance(detail=line + (f"  reverse KL {kl:.4f}" if kl is not None else ""))
    return checkpoint


async def _train(
    config: Config,
    connection: Connection,
    files: RunFiles,
    data: tuple[Any, Any, int],
    teacher: str,
    temperature: float,
) -> dict[str, Any] | None:
    train_data, test_data, total = data
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    async with service_client(connection) as service:
        training = await open_training_client(config, service, files, checkpoint)
        run = _Run(
            config,
            files,
            train_data,
            test_data,
            total,
            training,
            service.create_rest_client(),
            teacher,
            temperature,
        )
        with track(f"distill {config.log_path}", total, "steps", done=start) as task:
            for step in range(start, total):
                checkpoint = await _step(run, step, task) or checkpoint
    return checkpoint


def _serving(config: Config, teacher: str) -> BackendSettings:
    """``config``'s backend, whose embedded server also loads a base-model teacher."""
    settings = config.backend_settings
    if teacher.startswith("tinker://") or teacher == config.model_name:
        return settings
    return attrs.evolve(settings, models=(*settings.models, teacher))


async def run_distillation(config: Config, *, teacher: str, temperature: float = 1.0) -> RunResult:
    """Distil ``teacher`` into ``config``'s student on-policy, on ``config``'s env; to the end.

    The student samples the env's problems with its current weights; every
    reply is scored by the teacher (a base model name, e.g. the student's own
    ``config.model_name`` for a privileged teacher, or a ``tinker://``
    checkpoint the backend serves), which reads the env's
    :meth:`~mint_envkit.MessageEnv.teacher_messages` view; the student is
    trained by the per-token reverse KL to it (``forward_backward_reverse_kl``
    at ``temperature``). Rewards, evals (``Config.eval_every``), checkpoints,
    resume from ``config.log_path`` and the backend choice work as in
    :func:`~mint_envkit.rl.run_training`; the RL-only fields (``loss_fn``,
    KL penalty, ``max_steps_off_policy``, ...) are not used.

    Raises:
        ConfigError: ``teacher`` is not a non-empty name, or ``temperature``
            is not > 0; the log directory is not writable.
        BackendError: the backend is unreachable or lost (as in RL).
        MintEnvkitError: every group of a step failed.

    Example::

        # not run: needs a running backend (it trains)
        result = await run_distillation(
            Config(dataset_builder=builder, model_name=model, log_path="runs/distill",
                   learning_rate=1e-4, max_steps=20, eval_every=5),
            teacher=model,   # the same base model, shown the answer by the env's hook
        )
        result.final_metrics["test_final/env/all/correct"]
    """
    _check(teacher, temperature)
    files = RunFiles(config.log_path)
    files.ensure()
    train_data, test_data = await config.dataset_builder()
    total = config.max_steps or len(train_data)
    public = {
        **config.public_dict(),
        "distill_teacher": teacher,
        "distill_temperature": temperature,
    }
    files.write_config(public)
    files.write_code_state()
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    if checkpoint and start >= total:
        return run_result(config, files, start, checkpoint, start, resolve_backend(config.backend))
    with files.tracking(config.loggers, public):  # Config.loggers get every metrics row
        async with connect(_serving(config, teacher)) as connection:
            say(f"distilling {teacher} into {config.model_name} on {connection.describe()}")

            async def train(current: Connection) -> dict[str, Any] | None:
                return await _train(
                    config, current, files, (train_data, test_data, total), teacher, temperature
                )

            checkpoint = await train_watched(config, connection, files, train, total)
    result = run_result(config, files, total, checkpoint, start, connection.backend)
    if result.claim is not None:
        say(result.claim.line())
    return result
