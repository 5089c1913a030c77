"""The RL training loop: sample, reward, advantages, train; on MinT or locally.

It talks only through the ``mint`` SDK. With backend ``local`` (the default
without ``MINT_API_KEY``) it starts the embedded MinT-compatible server for
the run and stops it after; with ``mint`` it uses MinT.

Example::

    import asyncio
    from mint_envkit.rl import Config, main

    result = asyncio.run(main(Config(dataset_builder=builder,
                                     model_name="mint-envkit/tiny-qwen3",
                                     log_path="runs/demo", max_steps=3)))
    print(result.final_metrics["env/all/reward/total"])
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs

from mint_envkit.errors import BackendError, MintEnvkitError
from mint_envkit.rl.advantages import batch_advantages, kl_adjusted_advantages
from mint_envkit.rl.config import Config, resolve_backend
from mint_envkit.rl.logs import RunFiles
from mint_envkit.rl.rollouts import SampleRequest, rollout_groups
from mint_envkit.rl.types import GroupRollout, SampledTokens

__all__ = ["ClientSampler", "RunResult", "main", "preflight", "shared_local_backend"]

logger = logging.getLogger(__name__)

LOCAL_API_KEY = "sk-mint-envkit-local"

_SHARED_LOCAL_URL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mint_envkit_shared_local_url", default=None
)


@contextlib.asynccontextmanager
async def shared_local_backend(
    models: Sequence[str], *, latency_ms: float = 0.0
) -> AsyncIterator[str]:
    """Start one embedded backend that every local run inside the block shares.

    A sweep of local configs uses it so the model loads once, not once per
    config. Runs with an explicit ``base_url`` are not affected.

    Example::

        async with shared_local_backend(["mint-envkit/tiny-qwen3"]) as url:
            await main(config_a)
            await main(config_b)   # same server as config_a
    """
    from mint_envkit.local.server import LocalServer

    server = LocalServer(models=list(models), latency_ms=latency_ms)
    await asyncio.to_thread(server.start)
    token = _SHARED_LOCAL_URL.set(server.base_url)
    try:
        yield server.base_url
    finally:
        _SHARED_LOCAL_URL.reset(token)
        await asyncio.to_thread(server.close)


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
    """

    log_path: str
    steps: int
    final_metrics: dict[str, Any]
    final_checkpoint: dict[str, Any] | None
    resumed_from: int
    backend: str


async def preflight(base_url: str, *, timeout_s: float = 15.0, api_key: str | None = None) -> None:
    """Check that a backend answers, within ``timeout_s`` seconds.

    The SDK alone retries an unreachable endpoint for minutes; this fails
    fast with a message that says what to check.

    Raises:
        BackendError: the endpoint is unreachable, answers with an error, or
            refuses the API key.

    Example::

        await preflight("http://127.0.0.1:8765")
    """
    import httpx

    url = base_url.rstrip("/") + "/api/v1/healthz"
    headers = {"X-API-Key": api_key} if api_key else {}
    deadline = time.monotonic() + timeout_s
    last_error = "no answer"
    async with httpx.AsyncClient(timeout=min(5.0, timeout_s)) as client:
        while time.monotonic() < deadline:
            try:
                response = await client.get(url, headers=headers)
            except httpx.HTTPError as err:
                last_error = f"{type(err).__name__}: {err}"
                await asyncio.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                continue
            if response.status_code in (401, 403):
                raise BackendError(
                    f"the backend at {base_url} refused the API key (HTTP {response.status_code}); "
                    "check MINT_API_KEY"
                )
            if response.status_code < 400:
                return
            last_error = f"HTTP {response.status_code}: {response.text[:200]}"
            await asyncio.sleep(0.5)
    raise BackendError(
        f"the backend at {base_url} did not answer within {timeout_s:.0f} s ({last_error}). "
        "Check the URL (Config.base_url / MINT_BASE_URL), your network, and that the server "
        "is running (`mint-envkit serve` for a local one); unset MINT_API_KEY or set "
        "MINT_ENVKIT_BACKEND=local to train on the embedded backend instead."
    )


@contextlib.asynccontextmanager
async def _backend(config: Config) -> AsyncIterator[tuple[str, str | None, str]]:
    """Yield (base_url, api_key, backend) for the run; start a local server if needed."""
    backend = resolve_backend(config.backend)
    if backend == "mint":
        api_key = os.environ.get("MINT_API_KEY") or os.environ.get("TINKER_API_KEY")
        if not api_key:
            raise BackendError(
                "backend 'mint' needs an API key: set MINT_API_KEY (MinT keys start with sk-), "
                "or use backend='local' for the embedded backend"
            )
        import mint  # noqa: F401  (seeds TINKER_BASE_URL with MinT's endpoint)

        base_url = (
            config.base_url or os.environ.get("MINT_BASE_URL") or os.environ["TINKER_BASE_URL"]
        )
        yield base_url, api_key, backend
        return
    if config.base_url:
        yield config.base_url, LOCAL_API_KEY, backend
        return
    shared = _SHARED_LOCAL_URL.get()
    if shared is not None:
        yield shared, LOCAL_API_KEY, backend
        return
    from mint_envkit.local.server import LocalServer

    models = [config.model_name]
    if config.kl_reference_config and config.kl_reference_config.base_model not in models:
        models.append(config.kl_reference_config.base_model)
    server = LocalServer(models=models, latency_ms=config.local_latency_ms)
    await asyncio.to_thread(server.start)
    try:
        yield server.base_url, LOCAL_API_KEY, backend
    finally:
        await asyncio.to_thread(server.close)


def _seed(*parts: Any) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class ClientSampler:
    """A rollout sampler backed by a ``mint`` sampling client.

    Each request gets its own seed, derived from ``seed``, ``salt`` (the step),
    the request count and the prompt, so a run is reproducible. ``calls``
    counts the sample requests sent.

    Example::

        sampler = ClientSampler(sampling_client, max_tokens=32, temperature=0.7, seed=0, salt=step)
        rollouts = await rollout_groups(groups, sampler)
    """

    def __init__(
        self,
        client: Any,
        *,
        max_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        seed: int = 0,
        salt: int = 0,
    ) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.seed = seed
        self.salt = salt
        self.calls = 0

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        import tinker

        self.calls += 1
        params = tinker.SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop=list(request.stop),
            seed=_seed(self.seed, self.salt, self.calls, request.prompt[-8:]),
        )
        response = await self.client.sample_async(
            prompt=tinker.ModelInput.from_ints(request.prompt),
            num_samples=request.num_samples,
            sampling_params=params,
        )
        return [
            SampledTokens(
                tokens=list(seq.tokens),
                logprobs=list(seq.logprobs or [0.0] * len(seq.tokens)),
                stop_reason=str(seq.stop_reason),
            )
            for seq in response.sequences
        ]


def _config_sampler(client: Any, config: Config, salt: int) -> ClientSampler:
    return ClientSampler(
        client,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=config.top_k,
        seed=config.seed,
        salt=salt,
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group_metrics(rollouts: Sequence[GroupRollout], prefix: str) -> dict[str, Any]:
    """Reward and env metrics averaged over every episode of the groups that ran."""
    out: dict[str, Any] = {}
    ok = [r for r in rollouts if r.error is None]
    episodes = [t for r in ok for t in r.trajectories]
    rewards = [t.total_reward for t in episodes]
    out[f"{prefix}/all/reward/total"] = _mean(rewards)
    sums: dict[str, list[float]] = {}
    for trajectory in episodes:
        for key, value in trajectory.metrics.items():
            sums.setdefault(key, []).append(float(value))
    for key, values in sorted(sums.items()):
        out[f"{prefix}/all/{key}"] = _mean(values)
    tags: dict[str, list[float]] = {}
    for rollout in ok:
        for tag in rollout.tags:
            tags.setdefault(tag, []).extend(t.total_reward for t in rollout.trajectories)
    for tag, values in sorted(tags.items()):
        out[f"{prefix}/{tag}/reward/total"] = _mean(values)
    out[f"{prefix}/all/episodes"] = len(episodes)
    out[f"{prefix}/all/rollout_errors"] = len(rollouts) - len(ok)
    return out


def _rollout_records(
    step: int, rollouts: Sequence[GroupRollout], advantages: dict[int, list[float]], split: str
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for position, rollout in enumerate(rollouts):
        if rollout.error is not None:
            records.append(
                {
                    "step": step,
                    "split": split,
                    "group": rollout.index,
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
                    "group": rollout.index,
                    "member": member,
                    "prompt": rollout.messages,
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


def _datums(
    rollouts: Sequence[GroupRollout], advantages: dict[int, list[float]]
) -> list[tuple[list[int], list[int], list[float], float]]:
    """(prompt tokens, reply tokens, reply logprobs, advantage) per transition that trains."""
    out = []
    for position, adv in advantages.items():
        for trajectory, value in zip(rollouts[position].trajectories, adv, strict=True):
            for transition in trajectory.transitions:
                if transition.ac.tokens:
                    out.append(
                        (
                            transition.ob,
                            transition.ac.tokens,
                            list(transition.ac.logprobs or [0.0] * len(transition.ac.tokens)),
                            value,
                        )
                    )
    return out


def _to_datum(
    prompt: list[int], reply: list[int], token_advantages: list[float], logprobs: list[float]
):
    import tinker

    tokens = prompt + reply
    n_prompt = len(prompt) - 1
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(
                data=tokens[1:], dtype="int64", shape=[len(tokens) - 1]
            ),
            "logprobs": tinker.TensorData(
                data=[0.0] * n_prompt + logprobs, dtype="float32", shape=[len(tokens) - 1]
            ),
            "advantages": tinker.TensorData(
                data=[0.0] * n_prompt + token_advantages, dtype="float32", shape=[len(tokens) - 1]
            ),
        },
    )


def _progress(step: int, total: int, metrics: dict[str, Any], seconds: float) -> None:
    reward = metrics.get("env/all/reward/total")
    correct = metrics.get("env/all/correct")
    parts = [f"step {step + 1}/{total}"]
    parts.append("reward " + ("n/a" if reward is None else f"{reward:+.3f}"))
    if correct is not None:
        parts.append(f"correct {correct:.2f}")
    dropped = metrics.get("env/all/by_group/dropped", 0)
    if dropped:
        parts.append(f"dropped groups {dropped}")
    errors = metrics.get("env/all/rollout_errors", 0)
    if errors:
        parts.append(f"rollout errors {errors}")
    parts.append(f"{seconds:.1f}s")
    print("  " + "  ".join(parts), file=sys.stderr, flush=True)


async def _evaluate(
    config: Config, sampling_client: Any, test: Any, step: int, files: RunFiles
) -> dict[str, Any]:
    sampler = _config_sampler(sampling_client, config, salt=-1 - step)
    groups = test.groups()
    rollouts = await rollout_groups(
        groups,
        sampler,
        max_concurrent=config.max_concurrent_groups,
        fail_fast=config.fail_fast,
        timeout_s=config.rollout_timeout_s,
    )
    files.append_rollouts(_rollout_records(step, rollouts, {}, "test"))
    return _group_metrics(rollouts, "test/env")


async def main(config: Config) -> RunResult:
    """Train ``config`` to the end; resume when ``config.log_path`` has a checkpoint.

    Raises:
        BackendError: the backend is unreachable (fails within
            ``config.preflight_timeout_s``) or refuses the key.
        MintEnvkitError: every group of a step failed (the first errors are
            in the message and in ``rollouts.jsonl``), or ``fail_fast`` and an
            env raised.

    Example::

        result = await main(config)
        result.final_metrics["env/all/correct"]
    """
    files = RunFiles(config.log_path)
    files.ensure()
    train, test = await config.dataset_builder()
    total = config.max_steps or len(train)
    files.write_config(config.public_dict())
    checkpoint = files.last_checkpoint()
    start = int(checkpoint["step"]) if checkpoint else 0
    if checkpoint and start >= total:
        # Finished earlier: report it without starting a backend.
        return _result(config, files, start, checkpoint, start, resolve_backend(config.backend))

    async with _backend(config) as (base_url, api_key, backend):
        if backend == "local":
            print(
                f"mint_envkit: training on the embedded local backend at {base_url}",
                file=sys.stderr,
                flush=True,
            )
        await preflight(base_url, timeout_s=config.preflight_timeout_s, api_key=api_key)
        import mint

        service = await asyncio.to_thread(mint.ServiceClient, base_url=base_url, api_key=api_key)
        if checkpoint:
            print(
                f"mint_envkit: resuming {config.log_path} at step {start}",
                file=sys.stderr,
                flush=True,
            )
            files.forget_after(start)
            training = await service.create_training_client_from_state_with_optimizer_async(
                checkpoint["state_path"]
            )
        else:
            files.forget_after(0)
            training = await service.create_lora_training_client_async(
                base_model=config.model_name,
                rank=config.lora_rank,
                seed=config.seed,
                train_mlp=config.train_mlp,
                train_attn=config.train_attn,
                train_unembed=config.train_unembed,
            )
        reference = None
        if config.kl_penalty_coef > 0 and config.kl_reference_config is not None:
            reference = await service.create_sampling_client_async(
                base_model=config.kl_reference_config.base_model
            )
        last_checkpoint = checkpoint
        run_tag = f"{config.seed}"

        for step in range(start, total):
            step_start = time.monotonic()
            metrics: dict[str, Any] = {"step": step}
            # An unnamed (ephemeral) snapshot: nothing is written to storage per
            # step. The SDK call waits on a future, so it runs in a worker thread
            # to keep this event loop free.
            sampling_client = await asyncio.to_thread(training.save_weights_and_get_sampling_client)
            t0 = time.monotonic()
            if config.eval_every and test is not None and step % config.eval_every == 0:
                metrics.update(await _evaluate(config, sampling_client, test, step, files))
                metrics["time/eval"] = time.monotonic() - t0
                t0 = time.monotonic()
            groups = train.get_batch(step % len(train))
            sampler = _config_sampler(sampling_client, config, salt=step)
            rollouts = await rollout_groups(
                groups,
                sampler,
                max_concurrent=config.max_concurrent_groups,
                fail_fast=config.fail_fast,
                timeout_s=config.rollout_timeout_s,
            )
            metrics["time/sample"] = time.monotonic() - t0
            metrics["sample_requests"] = sampler.calls
            failed = [r for r in rollouts if r.error is not None]
            if len(failed) == len(rollouts):
                files.append_rollouts(_rollout_records(step, rollouts, {}, "train"))
                raise MintEnvkitError(
                    f"every group of step {step} failed; first error: {failed[0].error}. "
                    f"Tracebacks are in {files.rollouts_path}."
                )
            for rollout in failed:
                logger.warning("group %s failed: %s", rollout.index, rollout.error)

            metrics.update(_group_metrics(rollouts, "env"))
            advantages, by_group = batch_advantages(
                [
                    None
                    if r.error is not None
                    else (r.rewards, [t.metrics for t in r.trajectories])
                    for r in rollouts
                ]
            )
            metrics.update(by_group)

            samples = _datums(rollouts, advantages)
            token_advantages = [[adv] * len(reply) for _, reply, _, adv in samples]
            if reference is not None and samples:
                import tinker

                t1 = time.monotonic()
                ref_all = await asyncio.gather(
                    *(
                        reference.compute_logprobs_async(tinker.ModelInput.from_ints(p + r))
                        for p, r, _, _ in samples
                    )
                )
                ref = [
                    list(values[-len(r) :])
                    for values, (_, r, _, _) in zip(ref_all, samples, strict=True)
                ]
                token_advantages, mean_kl = kl_adjusted_advantages(
                    token_advantages, [lp for _, _, lp, _ in samples], ref, config.kl_penalty_coef
                )
                metrics["kl_policy_base"] = mean_kl
                metrics["time/kl"] = time.monotonic() - t1
            files.append_rollouts(_rollout_records(step, rollouts, advantages, "train"))

            t2 = time.monotonic()
            metrics["optim/lr"] = config.learning_rate
            metrics["train/datums"] = len(samples)
            metrics["train/tokens"] = sum(len(r) for _, r, _, _ in samples)
            if samples:
                import tinker

                data = [
                    _to_datum(p, r, adv, lp)
                    for (p, r, lp, _), adv in zip(samples, token_advantages, strict=True)
                ]
                fb_future = await training.forward_backward_async(
                    data, config.loss_fn, config.loss_fn_config
                )
                opt_future = await training.optim_step_async(
                    tinker.AdamParams(
                        learning_rate=config.learning_rate,
                        beta1=config.beta1,
                        beta2=config.beta2,
                        eps=config.eps,
                        weight_decay=config.weight_decay,
                        grad_clip_norm=config.grad_clip_norm,
                    )
                )
                fb, opt = await fb_future, await opt_future
                for key, value in (fb.metrics or {}).items():
                    metrics[f"train/{key}"] = value
                for key, value in ((opt.metrics if opt else None) or {}).items():
                    metrics[f"optim/{key}"] = value
            metrics["time/train"] = time.monotonic() - t2

            done = step + 1
            if (config.save_every and done % config.save_every == 0) or done == total:
                t3 = time.monotonic()
                name = "final" if done == total else f"step{done:06d}"
                # Both saves are submitted before either is awaited: one round trip.
                state_future = await training.save_state_async(f"{name}-s{run_tag}-{done}")
                sampler_future = await training.save_weights_for_sampler_async(
                    f"{name}-s{run_tag}-{done}-sampler"
                )
                state, sampler_ckpt = await state_future, await sampler_future
                last_checkpoint = {
                    "name": name,
                    "step": done,
                    "state_path": state.path,
                    "sampler_path": sampler_ckpt.path,
                    "time": time.time(),
                }
                metrics["time/save"] = time.monotonic() - t3
            metrics["time/step"] = time.monotonic() - step_start
            files.append_metrics(metrics)
            if last_checkpoint is not None and last_checkpoint.get("step") == done:
                files.append_checkpoint(last_checkpoint)
            _progress(step, total, metrics, metrics["time/step"])

    return _result(config, files, total, last_checkpoint, start, backend)


def _result(
    config: Config,
    files: RunFiles,
    steps: int,
    checkpoint: dict[str, Any] | None,
    start: int,
    backend: str,
) -> RunResult:
    metrics = files.metrics()
    return RunResult(
        log_path=config.log_path,
        steps=steps,
        final_metrics=metrics[-1] if metrics else {},
        final_checkpoint=checkpoint,
        resumed_from=start,
        backend=backend,
    )
