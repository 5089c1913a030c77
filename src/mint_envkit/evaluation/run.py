"""The one evaluation: sample an env's problems, score them, and the figures of it.

The training loop's held-out evals, ``mint-envkit eval``, the audit and the examples all
call :func:`evaluate` (several checkpoints: :func:`evaluate_many`). Each problem runs as
one group of ``samples`` envs, sampled by a
:class:`~mint_envkit.rollouts.sampler.SeededSampler`: every request's seed derives from
the settings' seed, the problem, the env and the turn, never from timing, so a fixed
seed gives the same samples and two checkpoints see the same problems and seeds. The
reply limit and the renderer are the dataset builder's unless the settings say
otherwise, so an evaluation samples what training samples.

With ``client`` the evaluation samples that sampling client; without one it connects to
the backend (:class:`~mint_envkit.rollouts.BackendSettings`: MinT with
``MINT_API_KEY``, else the embedded backend) and samples ``model_name`` or
``checkpoint``.

Example::

    from mint_envkit import evaluate
    from mint_envkit.rollouts import SamplingSettings

    result = await evaluate("examples/arithmetic_env.py:ArithmeticEnv",
                            model_name="mint-envkit/tiny-qwen3", samples=4,
                            sampling=SamplingSettings(max_tokens=8),
                            problems=[{"question": "What is 2 + 3?", "answer": "5"}])
    result.summary["max_tokens"], result.summary["samples"]   # (8, 4)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.counterfactual import counterfactual_figures, perturbed
from mint_envkit.evaluation.figures import evaluation_figures, headline
from mint_envkit.evaluation.files import write_results, write_run_folder
from mint_envkit.evaluation.metrics import ProblemResult, problem_result, summarize
from mint_envkit.evaluation.spec import EvalProblems, eval_problems
from mint_envkit.evaluation.tracking import eval_loggers, log_summary
from mint_envkit.progress import track
from mint_envkit.rollouts.backend import connect, sampling_client, service_client
from mint_envkit.rollouts.openai_endpoint import OpenAIEndpoint
from mint_envkit.rollouts.records import rollout_metrics
from mint_envkit.rollouts.run import rollout_group
from mint_envkit.rollouts.sampler import seeded_sampler
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings
from mint_envkit.rollouts.types import GroupRollout
from mint_envkit.runs.record import CounterfactualFigures, Figures

EVAL_CONCURRENCY = 64
"""Groups an evaluation rolls out at once when its settings say None.

Enough for a usual held-out split (the demo's 40 problems) to reach the server
together: the embedded backend samples the requests that arrive together as one
engine batch, which runs as long as its longest reply, and a decode step costs
about as much for 40 rows as for 16 on CPU. SmolLM2's 40 base replies of up to 96
tokens took 42.1 s at 16 and 33.6 s at 64, with the same figures (47.5% correct;
``benchmarks/eval_concurrency.py``, docs/benchmarks.md). It still bounds the
requests in flight on a large split.

Example::

    SamplingSettings(max_concurrent_groups=EVAL_CONCURRENCY)
"""


@attrs.frozen
class EvalResult:
    """One evaluation: its settings and figures (``summary``) and every problem's samples.

    Attributes:
        summary: what ``summary.json`` holds: ``model``, ``checkpoint``, ``backend``,
            ``split``, ``samples``, ``seed``, ``temperature``, ``max_tokens`` and the
            figures (:meth:`Figures.summary <mint_envkit.runs.record.Figures.summary>`);
            read them typed as :attr:`figures`.
        problems: one :class:`~mint_envkit.evaluation.ProblemResult` per problem.
        rollouts: the rollout of each problem, in the same order.
        out_dir: where the files were written (None when not asked).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        result = await evaluate(builder, model_name="mint-envkit/tiny-qwen3", samples=4)
        result.pass_at(1), result.correct, print(result.headline())
    """

    summary: dict[str, Any]
    problems: list[ProblemResult]
    rollouts: list[GroupRollout] = attrs.field(factory=list, eq=False, repr=False)
    out_dir: str | None = None

    @property
    def figures(self) -> Figures:
        """The figures of :attr:`summary`, typed (the run record's
        :class:`~mint_envkit.runs.record.Figures`).

        Example::

            # not run: `result` is an EvalResult, built elsewhere
            result.figures.answers.baseline_name   # "constant '31'"
        """
        return Figures.from_summary(self.summary)

    @property
    def mean_reward(self) -> float | None:
        """The mean reward over every sample of the problems that ran."""
        return self.figures.mean_reward

    @property
    def correct(self) -> float | None:
        """The share of samples the env scored correct (None when it reports none)."""
        return self.figures.correct

    @property
    def parse_failure_rate(self) -> float | None:
        """The share of samples whose answer did not parse."""
        return self.figures.parse_failure_rate

    @property
    def truncated_rate(self) -> float | None:
        """The share of samples cut off at the reply limit."""
        return self.figures.truncated_rate

    def pass_at(self, k: int) -> float | None:
        """The mean unbiased pass@k over problems (k as reported: 1, powers of two, K)."""
        table = self.figures.pass_at
        if str(k) not in table:
            raise ConfigError(f"pass@{k} was not computed; reported k: {', '.join(table)}")
        return table[str(k)]

    def metrics(self, prefix: str) -> dict[str, Any]:
        """The training loop's metrics of this evaluation: ``<prefix>/all/...``.

        The reward and env metrics of every episode (as a training step logs them)
        and the answer and counterfactual figures
        (:meth:`Figures.metrics <mint_envkit.runs.record.Figures.metrics>`).

        Example::

            # not run: `result` is an EvalResult, built elsewhere
            result.metrics("test/env")["test/env/all/correct"]   # 0.45
        """
        return {
            **rollout_metrics(self.rollouts, prefix),
            **self.figures.metrics(prefix=prefix),
        }

    def headline(self) -> str:
        """One line: correctness beside the best trivial baseline, parse and truncation
        rates, answer diversity, and any collapse, in words.

        Example::

            # not run: `result` is an EvalResult, built elsewhere
            print(result.headline())
            # correct 45.0% (best trivial baseline 5.0%: constant '31'; beats it), ...
        """
        return headline(self.figures)


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


async def _roll(
    chosen: EvalProblems, client: Any, settings: SamplingSettings, label: str, quiet: bool
) -> list[GroupRollout]:
    """Roll out every problem once, at most ``max_concurrent_groups`` at once."""
    limit = asyncio.Semaphore(settings.max_concurrent_groups or EVAL_CONCURRENCY)
    rewards: list[float] = []
    with track(f"eval {label}", len(chosen.pairs), "problems", enabled=not quiet) as task:

        async def one(split: str, group: Any) -> GroupRollout:
            sampler = seeded_sampler(client, settings, f"{split}:{group.index}")
            async with limit:
                rollout = await rollout_group(
                    group,
                    sampler,
                    fail_fast=settings.fail_fast,
                    timeout_s=settings.rollout_timeout_s,
                )
            rewards.extend(rollout.rewards)
            mean = f"{sum(rewards) / len(rewards):+.3f}" if rewards else "n/a"
            task.advance(**{"mean reward": mean})
            return rollout

        return list(await asyncio.gather(*(one(split, group) for split, group in chosen.pairs)))


async def _counterfactual(
    chosen: EvalProblems,
    client: Any,
    settings: SamplingSettings,
    label: str,
    quiet: bool,
    rollouts: list[GroupRollout],
    wanted: bool | None,
) -> CounterfactualFigures:
    """The counterfactual check's figures (all None when not wanted or nothing is perturbed)."""
    if wanted is False:
        return CounterfactualFigures()
    changed, where = perturbed(chosen)
    if not where or (wanted is None and 2 * len(where) < len(chosen.pairs)):
        return CounterfactualFigures()
    again = await _roll(changed, client, settings, f"{label} (candidates permuted)", quiet)
    results = [
        problem_result(split, group.problem, rollout)
        for (split, group), rollout in zip(changed.pairs, again, strict=True)
    ]
    correct = summarize(results, chosen.samples).correct
    return counterfactual_figures(rollouts, chosen, again, changed, where, correct)


async def evaluate_groups(
    chosen: EvalProblems,
    client: Any,
    settings: SamplingSettings,
    *,
    label: str = "base",
    describe: Mapping[str, Any] | None = None,
    folder: str | None = None,
    quiet: bool = False,
    counterfactual: bool | None = None,
) -> EvalResult:
    """Evaluate ``client`` on the problems of ``chosen`` (what :func:`evaluate` runs).

    ``settings.max_tokens`` None takes the builder's reply limit. ``describe`` adds
    settings to the summary (the model, the checkpoint, the backend); ``folder``
    writes the run folder the viewer reads. ``counterfactual``: run the counterfactual
    check (:mod:`mint_envkit.evaluation.counterfactual`; None: when at least half the
    problems offer candidates to permute).

    Example::

        # not run: needs a sampling client (a running backend)
        chosen = await eval_problems(builder, samples=4)
        result = await evaluate_groups(chosen, client, SamplingSettings(temperature=0.7))
    """
    settings = attrs.evolve(settings, max_tokens=settings.reply_limit(chosen.max_tokens))
    t0 = time.monotonic()
    rollouts = await _roll(chosen, client, settings, label, quiet)
    groups = [group for _, group in chosen.pairs]
    per_problem = [
        problem_result(split, group.problem, rollout)
        for (split, group), rollout in zip(chosen.pairs, rollouts, strict=True)
    ]
    figures = attrs.evolve(
        await evaluation_figures(per_problem, rollouts, groups, chosen.samples),
        max_tokens=settings.max_tokens,
        counterfactual=await _counterfactual(
            chosen, client, settings, label, quiet, rollouts, counterfactual
        ),
    )
    summary = {
        **dict(describe or {}),
        "label": label,
        "split": chosen.split,
        "samples": chosen.samples,
        "seed": settings.seed,
        "temperature": settings.temperature,
        **figures.summary(),
    }
    if isinstance(client, OpenAIEndpoint):  # what the server was sent, with its token counts
        summary["usage"] = client.usage()
    summary["seconds"] = round(time.monotonic() - t0, 3)
    if folder is not None:
        write_run_folder(folder, summary, per_problem, rollouts)
    out_dir = None if folder is None else str(Path(folder).parent)
    return EvalResult(summary=summary, problems=per_problem, rollouts=rollouts, out_dir=out_dir)


async def evaluate_many(
    target: Any,
    *,
    checkpoints: Sequence[str | None] = (None,),
    model_name: str | None = None,
    samples: int | None = None,
    sampling: SamplingSettings | None = None,
    backend: BackendSettings | None = None,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    limit: int | None = None,
    renderer_name: str | None = None,
    out_dir: str | None = None,
    counterfactual: bool | None = None,
    loggers: Sequence[str] = (),
    names: Sequence[str] | None = None,
    quiet: bool = False,
) -> list[EvalResult]:
    """Evaluate several checkpoints (None: the base model) on the same problems and seeds.

    One backend serves them all (an embedded one loads the model once). With
    ``out_dir``, ``results.jsonl`` and ``summary.json`` go there and each checkpoint's
    run folder (for the viewer) to ``out_dir/<label>`` (``names``, one per checkpoint;
    None: :func:`labels`); with ``loggers`` each checkpoint is one tracker run there,
    grouped by ``out_dir``. ``quiet``: no progress lines. The other arguments are those
    of :func:`evaluate`.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        base, tuned = await evaluate_many(builder, checkpoints=[None, "tinker://<run>/weights/final"])
    """
    loggers = eval_loggers(loggers, out_dir)
    chosen = await eval_problems(
        target,
        model_name=model_name,
        samples=samples,
        split=split,
        problems=problems,
        renderer_name=renderer_name,
        limit=limit,
    )
    sampling = sampling or SamplingSettings()
    backend = attrs.evolve(backend or BackendSettings(), models=(chosen.model_name,))
    if names is None:
        names = labels(checkpoints)
    elif len(names) != len(checkpoints) or len(set(names)) != len(names):
        raise ConfigError(
            f"evaluate_many(names=...) needs one distinct name per checkpoint, got {names!r} "
            f"for {len(checkpoints)} checkpoint(s); or None for labels(checkpoints)"
        )
    results = []
    async with connect(backend) as connection, service_client(connection) as service:
        for checkpoint, name in zip(checkpoints, names, strict=True):
            client = await sampling_client(service, chosen.model_name, checkpoint)
            describe = {
                "env": chosen.describe,
                "model": chosen.model_name,
                "checkpoint": checkpoint,
                "backend": connection.backend,
            }
            folder = None if out_dir is None else f"{out_dir}/{name}"
            results.append(
                await evaluate_groups(
                    chosen,
                    client,
                    sampling,
                    label=name,
                    describe=describe,
                    folder=folder,
                    quiet=quiet,
                    counterfactual=counterfactual,
                )
            )
    if out_dir is not None:
        from mint_envkit.evaluation.compare import comparison_record

        runs = [(r.summary, r.problems) for r in results]
        summary = results[0].summary if len(results) == 1 else comparison_record(results)
        write_results(out_dir, runs, summary)
        for result, name in zip(results, names, strict=True):
            log_summary(loggers, f"{out_dir}/{name}", result.summary, out_dir)
    return results


async def evaluate(
    target: Any,
    *,
    client: Any = None,
    checkpoint: str | None = None,
    model_name: str | None = None,
    samples: int | None = None,
    sampling: SamplingSettings | None = None,
    backend: BackendSettings | None = None,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    limit: int | None = None,
    renderer_name: str | None = None,
    out_dir: str | None = None,
    label: str | None = None,
    quiet: bool = False,
    counterfactual: bool | None = None,
    loggers: Sequence[str] = (),
) -> EvalResult:
    """Sample ``samples`` completions per problem and score them; no training.

    Args:
        target: an ENV_SPEC (``MODULE:NAME`` or ``path/to/file.py:NAME``), a
            :class:`~mint_envkit.DatasetBuilder`, an env class (with ``problems``), or
            built groups (a :class:`~mint_envkit.ProblemDataset` or a list of
            :class:`~mint_envkit.GroupBuilder`, evaluated as they are).
        client: a sampling client to evaluate (the loop's snapshot, one you made), or an
            OpenAI-compatible server (:class:`~mint_envkit.rollouts.OpenAIEndpoint`: its
            replies are tokenized with the builder's model, and the summary's ``usage``
            holds the requests, retries and the server's token counts); None connects
            to ``backend`` and samples ``model_name`` / ``checkpoint``.
        checkpoint: a ``tinker://`` path of sampler weights or a training state.
        model_name: the base model; default the builder's.
        samples: completions per problem (K; default 4, or the built groups' size);
            pass@k is reported for k = 1, the powers of two below K, and K.
        sampling: the reply limit (default: the builder's), temperature, seed, concurrency.
        backend: where to sample when no ``client`` is given (default: auto).
        split: ``test``/``train``/``all`` (None: test when there is one).
        problems: an env class's problems (dicts, or a .jsonl/.csv/parquet path).
        limit: the first N problems of each split.
        renderer_name: default the builder's (the model's own).
        out_dir: write results.jsonl, summary.json and a run folder for the viewer.
        label: the evaluation's name in progress lines and files (default ``base``
            or the checkpoint's name).
        quiet: no progress lines.
        counterfactual: evaluate the problems again with their offered candidates
            permuted and report whether the answers follow the content or the position
            (``counterfactual/...``); None: when at least half the problems offer
            candidates (see :mod:`mint_envkit.evaluation.counterfactual`).
        loggers: experiment trackers (``"tensorboard"``, ``"wandb"``, ``"mlflow"``, as
            ``Config.loggers``) that get the summary's figures as one row and its settings
            as the config (:mod:`mint_envkit.evaluation.tracking`); needs ``out_dir``.

    Raises:
        ConfigError: a bad option, or a checkpoint that is not found (the message
            says how to list them); ``loggers`` without ``out_dir``.
        MissingExtraError: a tracker of ``loggers`` is not installed.
        BackendError: the backend is unreachable or has no key.

    Example::

        # not run: samples 8 per problem from a model on the local backend (slow)
        result = await evaluate("examples/rl_hyperparameters.py:builder", samples=8,
                                out_dir="runs/ev")
        result.pass_at(1), result.pass_at(8), print(result.headline())
        # then: write_report("runs/ev") for the viewer page
    """
    if client is None:
        found = await evaluate_many(
            target,
            checkpoints=[checkpoint],
            model_name=model_name,
            samples=samples,
            sampling=sampling,
            backend=backend,
            split=split,
            problems=problems,
            limit=limit,
            renderer_name=renderer_name,
            out_dir=out_dir,
            counterfactual=counterfactual,
            loggers=loggers,
            names=None if label is None else [label],
            quiet=quiet,
        )
        return found[0]
    if checkpoint is not None or backend is not None:
        raise ConfigError(
            "evaluate(client=...) samples the client you give; checkpoint= and backend= "
            "are for evaluate() without a client (it connects and makes one)"
        )
    loggers = eval_loggers(loggers, out_dir)
    chosen = await eval_problems(
        target,
        model_name=model_name,
        samples=samples,
        split=split,
        problems=problems,
        renderer_name=renderer_name,
        limit=limit,
    )
    name = label or "base"
    folder = None if out_dir is None else f"{out_dir}/{name}"
    describe = {"env": chosen.describe, "model": chosen.model_name, "checkpoint": None}
    if isinstance(client, OpenAIEndpoint):
        describe |= {
            "model": client.model,
            "backend": f"openai ({client.base_url})",
            "tokenizer": chosen.model_name,
        }
    result = await evaluate_groups(
        chosen,
        client,
        sampling or SamplingSettings(),
        label=name,
        describe=describe,
        folder=folder,
        quiet=quiet,
        counterfactual=counterfactual,
    )
    if out_dir is not None:
        write_results(out_dir, [(result.summary, result.problems)], result.summary)
        log_summary(loggers, f"{out_dir}/{name}", result.summary, out_dir)
    return result


def evaluate_sync(target: Any, **kwargs: Any) -> EvalResult:
    """:func:`evaluate` from synchronous code (runs its own event loop).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        result = evaluate_sync(builder, samples=4)
    """
    return asyncio.run(evaluate(target, **kwargs))
