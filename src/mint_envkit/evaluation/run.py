"""Evaluating a base model or a checkpoint on an env, without training.

Each problem runs once as a group of ``samples`` envs: one sampling request
of K completions, scored by the env. The backend is chosen as for training
(:mod:`mint_envkit.rl.backend`: MinT when ``MINT_API_KEY`` is set, else the
embedded local backend). Every request's seed derives from ``seed``, the
problem and the turn, never from timing, so a fixed seed gives the same
samples, and two checkpoints compared see the same problems and seeds.

Example::

    from mint_envkit import evaluate

    result = await evaluate("examples/arithmetic_env.py:ArithmeticEnv",
                            model_name="mint-envkit/tiny-qwen3", samples=4,
                            problems=[{"question": "What is 2 + 3?", "answer": "5"}])
    result.pass_at(4), result.mean_reward
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.files import write_results, write_run_folder
from mint_envkit.evaluation.metrics import ProblemResult, problem_result, summarize
from mint_envkit.evaluation.spec import EvalSettings, eval_groups
from mint_envkit.rl.answers import answer_figures, rollout_answers
from mint_envkit.rl.backend import connect, preflight, service_client
from mint_envkit.rl.rollouts import SampleRequest, rollout_group
from mint_envkit.rl.sampling import ClientSampler, sampler_snapshot
from mint_envkit.rl.types import GroupRollout, SampledTokens


@attrs.frozen
class EvalResult:
    """One evaluation: its settings and figures (``summary``) and every problem's samples.

    Attributes:
        summary: what ``summary.json`` holds: ``model``, ``checkpoint``,
            ``backend``, ``split``, ``samples``, ``seed``, ... and the figures
            ``mean_reward``, ``correct``, ``pass@`` (k -> value),
            ``parse_failure_rate``, ``truncated_rate``, ``problems``, ``episodes``,
            ``errors``, and the answer figures ``answers/baseline_correct``,
            ``answers/distinct``, ``answers/entropy``, ``answers/top_share``,
            ``answers/top``, ``answers/truncated``, ``answers/concentrated``,
            ``answers/beats_baseline``, ``answers/collapse`` (see
            :mod:`mint_envkit.rl.answers`).
        problems: one :class:`~mint_envkit.evaluation.metrics.ProblemResult`
            per problem, in problem order.
        out_dir: where the files were written (None when not asked).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        result = await evaluate(builder, model_name="mint-envkit/tiny-qwen3", samples=4)
        result.pass_at(1), result.pass_at(4), result.parse_failure_rate
    """

    summary: dict[str, Any]
    problems: list[ProblemResult]
    out_dir: str | None = None

    @property
    def mean_reward(self) -> float | None:
        """The mean reward over every sample of the problems that ran."""
        return self.summary["mean_reward"]

    @property
    def parse_failure_rate(self) -> float | None:
        """The share of samples whose answer did not parse."""
        return self.summary["parse_failure_rate"]

    def pass_at(self, k: int) -> float | None:
        """The mean unbiased pass@k over problems (k as reported: 1, powers of two, K)."""
        table = self.summary["pass@"]
        if str(k) not in table:
            raise ConfigError(f"pass@{k} was not computed; reported k: {', '.join(table)}")
        return table[str(k)]


def _salt(*parts: Any) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@attrs.frozen
class _SeededSampler:
    """Samples with a seed fixed by (problem, env, turn): the same in every run."""

    client: Any
    config: EvalSettings
    key: str

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        salt = _salt(self.key, request.env_index, request.turn)
        config = self.config
        sampler = ClientSampler(
            self.client,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            seed=config.seed,
            salt=salt,
        )
        return await sampler(request)


async def _sampling_client(service: Any, model_name: str, checkpoint: str | None) -> Any:
    """A sampling client on the base model, a sampler-weights path or a training-state path."""
    if checkpoint is None:
        return await service.create_sampling_client_async(base_model=model_name)
    import tinker

    if not checkpoint.startswith("tinker://"):
        raise ConfigError(
            f"checkpoint {checkpoint!r} is not a tinker:// path; list the checkpoints with "
            "`mint-envkit checkpoints list`"
        )
    rest = service.create_rest_client()
    try:
        info = await rest.get_weights_info_by_tinker_path(checkpoint)
    except tinker.NotFoundError:
        raise ConfigError(
            f"checkpoint {checkpoint!r} not found on this backend; list the checkpoints "
            "with `mint-envkit checkpoints list` (add --base-url URL for a running server)"
        ) from None
    base = getattr(info, "base_model", None)
    if base and base != model_name:
        raise ConfigError(
            f"checkpoint {checkpoint!r} was trained on {base!r}, not on model {model_name!r}; "
            f"evaluate it with model {base!r}"
        )
    if "/sampler_weights/" in checkpoint:
        return await service.create_sampling_client_async(model_path=checkpoint)
    training = await service.create_training_client_from_state_async(checkpoint)
    return await sampler_snapshot(training)


async def _roll(
    pairs: Sequence[tuple[str, Any]],
    client: Any,
    config: EvalSettings,
    *,
    label: str,
    progress_every: int | None,
) -> list[GroupRollout]:
    """Roll out every (split, group), at most ``max_concurrent_groups`` at once, with progress."""
    limit = asyncio.Semaphore(config.max_concurrent_groups or 16)
    every = progress_every if progress_every is not None else max(1, -(-len(pairs) // 10))
    start, done, rewards = time.monotonic(), 0, []

    async def one(split: str, group: Any) -> GroupRollout:
        nonlocal done
        sampler = _SeededSampler(client, config, f"{split}:{group.index}")
        async with limit:
            rollout = await rollout_group(group, sampler, timeout_s=config.rollout_timeout_s)
        done += 1
        rewards.extend(rollout.rewards)
        if every and (done % every == 0 or done == len(pairs)):
            mean = f"{sum(rewards) / len(rewards):+.3f}" if rewards else "n/a"
            print(
                f"  eval {label}: {done}/{len(pairs)} problems  mean reward {mean}  "
                f"{time.monotonic() - start:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        return rollout

    return list(await asyncio.gather(*(one(split, group) for split, group in pairs)))


def _label(checkpoint: str | None) -> str:
    if checkpoint is None:
        return "base"
    tail = checkpoint.rstrip("/").rsplit("/", 1)[-1]
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in tail) or "checkpoint"


def labels(checkpoints: Sequence[str | None]) -> list[str]:
    """A short distinct name per checkpoint (``base`` for None): its output folder.

    Example::

        labels([None, "tinker://r/sampler_weights/final"])   # ['base', 'final']
    """
    out: list[str] = []
    for position, checkpoint in enumerate(checkpoints):
        name = _label(checkpoint)
        out.append(name if name not in out else f"{position}-{name}")
    return out


async def evaluate_many(
    target: Any,
    *,
    model_name: str,
    checkpoints: Sequence[str | None] = (None,),
    samples: int = 4,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    temperature: float = 1.0,
    max_tokens: int = 256,
    seed: int = 0,
    out_dir: str | None = None,
    base_url: str | None = None,
    backend: str = "auto",
    renderer_name: str | None = None,
    limit: int | None = None,
    max_concurrent: int = 16,
    progress_every: int | None = None,
) -> list[EvalResult]:
    """Evaluate several checkpoints (None: the base model) on the same problems and seeds.

    One backend serves them all (an embedded one loads the model once). With
    ``out_dir``, ``results.jsonl`` and ``summary.json`` go there and each
    checkpoint's run folder (for the viewer) to ``out_dir/<label>`` (see
    :func:`labels`). The other arguments are those of :func:`evaluate`.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        base, tuned = await evaluate_many(builder, model_name=model,
                                          checkpoints=[None, "tinker://<run>/weights/final"])
    """
    config = EvalSettings(
        model_name=model_name,
        samples=samples,
        limit=limit,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        base_url=base_url,
        backend=backend,
        max_concurrent_groups=max_concurrent,
    )
    pairs = await eval_groups(
        target,
        model_name=model_name,
        samples=samples,
        split=split,
        problems=problems,
        renderer_name=renderer_name,
        limit=limit,
    )
    names = labels(checkpoints)
    settings = {
        "env": target if isinstance(target, str) else _describe(target),
        "model": model_name,
        "split": split or (pairs[0][0] if pairs else "train"),
        "samples": samples,
        "seed": seed,
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    async with connect(config) as connection:
        await preflight(str(connection.base_url), api_key=connection.api_key)
        settings["backend"] = connection.backend
        # its session closes before an embedded server stops
        async with service_client(connection) as service:
            results = [
                await _one(
                    pairs,
                    service,
                    config,
                    checkpoint,
                    name,
                    settings=settings,
                    folder=None if out_dir is None else f"{out_dir}/{name}",
                    progress_every=progress_every,
                )
                for checkpoint, name in zip(checkpoints, names, strict=True)
            ]
    if out_dir is not None:
        from mint_envkit.evaluation.compare import comparison_record

        runs = [(r.summary, r.problems) for r in results]
        summary = results[0].summary if len(results) == 1 else comparison_record(results)
        write_results(out_dir, runs, summary)
    return results


async def _one(
    pairs: Sequence[tuple[str, Any]],
    service: Any,
    config: EvalSettings,
    checkpoint: str | None,
    name: str,
    *,
    settings: dict[str, Any],
    folder: str | None,
    progress_every: int | None,
) -> EvalResult:
    """Evaluate one checkpoint on ``pairs``; write its run folder when ``folder`` is given."""
    t0 = time.monotonic()
    client = await _sampling_client(service, config.model_name, checkpoint)
    rollouts = await _roll(pairs, client, config, label=name, progress_every=progress_every)
    per_problem = [
        problem_result(split, group.problem, rollout)
        for (split, group), rollout in zip(pairs, rollouts, strict=True)
    ]
    summary = {
        **settings,
        "checkpoint": checkpoint,
        "label": name,
        **summarize(per_problem, int(settings["samples"])),
        **answer_figures(rollout_answers(rollouts, [group for _, group in pairs])),
        "seconds": round(time.monotonic() - t0, 3),
    }
    if folder is not None:
        write_run_folder(folder, summary, per_problem, rollouts)
    out_dir = None if folder is None else str(Path(folder).parent)
    return EvalResult(summary=summary, problems=per_problem, out_dir=out_dir)


def _describe(target: Any) -> str:
    env = getattr(target, "env", target)
    return f"{getattr(env, '__module__', '?')}.{getattr(env, '__qualname__', repr(env))}"


async def evaluate(
    target: Any,
    *,
    model_name: str,
    checkpoint: str | None = None,
    samples: int = 4,
    **options: Any,
) -> EvalResult:
    """Sample ``samples`` completions per problem and score them; no training.

    Args:
        target: an ENV_SPEC (``MODULE:NAME`` or ``path/to/file.py:NAME``), a
            :class:`~mint_envkit.DatasetBuilder`, or an env class with ``problems``.
        model_name: the base model (the checkpoint's base model with ``checkpoint``).
        checkpoint: None (the base model), or a ``tinker://`` path of sampler
            weights or of a training state.
        samples: completions per problem (K); pass@k is reported for k = 1,
            the powers of two below K, and K.
        **options: ``split`` (``test``/``train``/``all``; None: test when
            there is one), ``problems``, ``temperature`` (1.0), ``max_tokens``
            (256), ``seed`` (0), ``out_dir`` (write results.jsonl, summary.json
            and a run folder ``base/`` or ``<checkpoint name>/`` for the viewer), ``base_url``, ``backend``,
            ``renderer_name``, ``limit`` (first N problems), ``max_concurrent``
            (16 groups), ``progress_every`` (a progress line every N problems).

    Raises:
        ConfigError: a bad option, or a checkpoint that is not found (the
            message says how to list them).
        BackendError: the backend is unreachable or has no key.

    Example::

        # not run: samples 8 per problem from a model on the local backend (slow)
        result = await evaluate("examples/rl_hyperparameters.py:builder",
                                model_name="mint-envkit/tiny-qwen3", samples=8, out_dir="runs/ev")
        result.pass_at(1), result.pass_at(8), result.mean_reward
        # then: write_report("runs/ev") for the viewer page
    """
    found = await evaluate_many(
        target, model_name=model_name, checkpoints=[checkpoint], samples=samples, **options
    )
    return found[0]


def evaluate_sync(target: Any, **kwargs: Any) -> EvalResult:
    """:func:`evaluate` from synchronous code (runs its own event loop).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        result = evaluate_sync(builder, model_name="mint-envkit/tiny-qwen3", samples=4)
    """
    return asyncio.run(evaluate(target, **kwargs))
