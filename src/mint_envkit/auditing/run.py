"""``audit()``: the check to run before paying for MinT, offline.

Four parts, each optional but the first:

1. exploit probes (:mod:`mint_envkit.auditing.probes`) on up to ``limit`` problems, and
   the best constant-answer baseline (the most common reference answer, scored by
   the env);
2. real samples of a model the backend serves (``sample_model``; the CLI's default
   is the local SmolLM2): parse-status and truncation rates;
3. a learning check (``learn_steps``): that many training steps on the local
   backend, held-out correctness before and after beside the baseline, with the
   collapse flag;
4. a cost preview for MinT: tokens sampled, prefilled and trained per step (from the
   samples), times the planned steps; money only with ``prices`` (no price list here).

Example::

    # not run: loads a model on the local backend
    from mint_envkit.auditing import audit

    report = await audit("examples/rl_hyperparameters.py:builder",
                         sample_model="mint-envkit/tiny-qwen3", learn_steps=0)
    print(report.table()); report.ok
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.auditing.probes import run_probes
from mint_envkit.auditing.report import AuditReport, Finding, findings
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.spec import eval_problems, load_target
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings

PRICE_KEYS = ("sample", "prefill", "train")
"""The keys of ``prices``: US dollars per million sampled, prompt and trained tokens.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    await audit(builder, sample_model=model, prices={"sample": 0.6, "prefill": 0.2, "train": 1.8})
"""


def _model_of(target: Any, given: str | None) -> str:
    if isinstance(target, DatasetBuilder):
        return target.model_name
    if given:
        return given
    raise ConfigError(
        "auditing an env class needs model_name= (the model whose tokenizer renders the "
        "prompts), e.g. model_name='mint-envkit/tiny-qwen3'; a DatasetBuilder brings its own"
    )


async def _samples(target: Any, model: str, options: Mapping[str, Any]) -> tuple[dict, Any]:
    from mint_envkit.evaluation.run import evaluate

    result = await evaluate(target, model_name=model, **options)
    statuses = Counter(status or "none" for p in result.problems for status in p.parse_status)
    total = sum(statuses.values()) or 1
    summary = result.summary
    return (
        {
            "model": model,
            "samples": summary.get("samples"),
            "episodes": summary["episodes"],
            "correct": summary["correct"],
            "mean_reward": summary["mean_reward"],
            "truncated_rate": summary.get("truncated_rate"),
            "parse_status": {k: v / total for k, v in statuses.items()},
            **{
                key.split("/", 1)[1]: summary.get(key)
                for key in (
                    "answers/baseline_correct",
                    "answers/distinct",
                    "answers/top",
                    "answers/top_share",
                    "answers/collapse",
                )
            },
        },
        result,
    )


async def _cost(
    groups: Sequence[Any],
    result: Any,
    builder: DatasetBuilder | None,
    planned_steps: int | None,
    prices: Mapping[str, float] | None,
) -> dict[str, Any]:
    """Tokens per step from the samples, rendered with the audited builder's tokenizer."""
    renderer = groups[0].renderer()
    encode = renderer.tokenizer.encode
    replies = [r for p in result.problems for r in p.replies if isinstance(r, str)]
    reply_tokens = sum(len(encode(r, add_special_tokens=False)) + 1 for r in replies)
    mean_reply = reply_tokens / max(1, len(replies))
    prompts = []
    for group in groups:
        envs = await group.make_envs()
        prompts.append(len(renderer.render_tokens(await envs[0].initial_messages_async())))
    mean_prompt = sum(prompts) / max(1, len(prompts))
    batch = builder.batch_size if builder else 1
    size = builder.group_size if builder else 1
    if planned_steps is None and builder is not None:
        train, _ = await builder()
        planned_steps = len(train)
    steps = planned_steps or 1
    per_step = {
        "sampled_tokens_per_step": round(batch * size * mean_reply),
        "prefill_tokens_per_step": round(batch * mean_prompt),
        "trained_tokens_per_step": round(batch * size * (mean_prompt + mean_reply)),
    }
    cost: dict[str, Any] = {**per_step, "planned_steps": steps, "batch_size": batch}
    cost["group_size"] = size
    cost["total_tokens"] = steps * sum(per_step.values())
    cost["total_usd"] = None
    if prices:
        unknown = set(prices) - set(PRICE_KEYS)
        if unknown:
            raise ConfigError(f"prices takes {', '.join(PRICE_KEYS)}; unknown: {sorted(unknown)}")
        cost["prices_usd_per_mtok"] = dict(prices)
        cost["total_usd"] = (
            steps
            * (
                per_step["sampled_tokens_per_step"] * prices.get("sample", 0.0)
                + per_step["prefill_tokens_per_step"] * prices.get("prefill", 0.0)
                + per_step["trained_tokens_per_step"] * prices.get("train", 0.0)
            )
            / 1e6
        )
    return cost


def _eval_line(metrics: Mapping[str, Any], split: str) -> dict[str, Any]:
    """``correct`` and the ``answers/*`` figures of one eval line of metrics.jsonl."""
    head = f"{split}/env/all/"
    out = {"correct": metrics.get(head + "correct"), "reward": metrics.get(head + "reward/total")}
    for key in ("baseline_correct", "distinct", "top_share", "truncated", "collapse"):
        if head + "answers/" + key in metrics:
            out[key] = metrics[head + "answers/" + key]
    return out


async def _learn(
    builder: DatasetBuilder, model: str, steps: int, log_path: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    from mint_envkit.rl.config import Config
    from mint_envkit.rl.train import run_training
    from mint_envkit.rollouts.files import RunFiles

    if builder.test_problems is None and not builder.test_fraction:
        builder = attrs.evolve(builder, test_fraction=0.25)
    options = dict(options)
    reply_limit = options.pop("max_tokens", None) or builder.max_generation_tokens
    # the builder owns the model and the reply limit; Config takes them from it
    builder = attrs.evolve(builder, model_name=model, max_generation_tokens=reply_limit)
    config = Config(
        dataset_builder=builder,
        log_path=log_path,
        max_steps=steps,
        eval_every=steps,
        save_every=0,
        **options,
    )
    await run_training(config)
    lines = RunFiles(log_path).metrics()
    before = next((m for m in lines if "test/env/all/correct" in m), {})
    after = next((m for m in reversed(lines) if "test_final/env/all/correct" in m), {})
    return {
        "model": model,
        "steps": steps,
        "log_path": log_path,
        "before": _eval_line(before, "test"),
        "after": _eval_line(after, "test_final"),
    }


async def audit(
    target: Any,
    *,
    model_name: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    limit: int = 20,
    split: str | None = "train",
    sample_model: str | None = None,
    samples: int = 4,
    max_tokens: int | None = None,
    learn_steps: int = 0,
    learn_options: Mapping[str, Any] | None = None,
    planned_steps: int | None = None,
    prices: Mapping[str, float] | None = None,
    base_url: str | None = None,
    backend: str | None = None,
    out_dir: str | Path | None = None,
) -> AuditReport:
    """Audit an env's reward before training on it: probes, samples, learning, cost.

    Args:
        target: an ENV_SPEC (``MODULE:NAME``), a DatasetBuilder or an env class (with
            ``problems`` and ``model_name``).
        model_name: the model whose tokenizer renders the probes (a builder's own).
        limit: probe (and sample) at most this many problems of ``split``.
        sample_model: sample ``samples`` replies per problem from this model for the
            parse-status and truncation rates and the cost preview (None: skip).
        max_tokens: the samples' reply limit (default: the builder's).
        learn_steps: train this many steps on ``sample_model`` (a DatasetBuilder
            target; a test split is held out when it has none) and compare held-out
            correctness before and after with the baseline (0: skip).
        learn_options: more :class:`~mint_envkit.Config` fields for the learning check
            (``learning_rate``, ``lora_rank``, ``temperature``...).
        planned_steps: the MinT run's steps for the cost preview (default: one epoch).
        prices: US dollars per million tokens by :data:`PRICE_KEYS`; no money without.
        base_url, backend: the backend for samples and learning (default: embedded).
        out_dir: write ``audit.json`` (and the learning run under ``learn/``) here.

    Raises:
        ConfigError: a bad option (the message names it); BackendError when the
            backend is unreachable.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        report = await audit(builder, sample_model="mint-envkit/tiny-qwen3")
        print(report.table())
    """
    if isinstance(target, str):
        label, target = target, load_target(target)
    elif isinstance(target, DatasetBuilder):
        label = f"DatasetBuilder of {getattr(target.env, '__name__', repr(target.env))}"
    else:
        label = getattr(target, "__name__", type(target).__name__)
    check_integer(limit, "limit")
    check_integer(learn_steps, "learn_steps", least=0)
    model = _model_of(target, model_name)
    chosen = await eval_problems(
        target, model_name=model, samples=1, split=split, problems=problems, limit=limit
    )
    groups = [group for _split, group in chosen.pairs]
    if not groups:
        raise ConfigError(f"the {split} split of {label} has no problems to audit")
    probes = await run_probes(groups)
    constant = next((p for p in probes if p.name == "most_common"), None)
    baseline = constant.correct_rate if constant is not None else None
    found = findings(probes, baseline)
    report_samples = cost = learned = None
    given = {"base_url": base_url, "backend": backend}
    connection = {k: v for k, v in given.items() if v is not None}
    if sample_model:
        options = {"samples": samples, "split": split, "problems": problems, "limit": limit}
        options["sampling"] = SamplingSettings(max_tokens=max_tokens)
        options["backend"] = BackendSettings(**connection)
        report_samples, result = await _samples(target, sample_model, options)
        builder = target if isinstance(target, DatasetBuilder) else None
        cost = await _cost(groups, result, builder, planned_steps, prices)
    if learn_steps:
        if not isinstance(target, DatasetBuilder) or not sample_model:
            raise ConfigError(
                "learn_steps needs a DatasetBuilder target and sample_model (the model to "
                "train on the local backend)"
            )
        home = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="mint-envkit-audit-"))
        options = {"max_tokens": max_tokens, **connection, **(learn_options or {})}
        learned = await _learn(target, sample_model, learn_steps, str(home / "learn"), options)
        if learned["after"].get("collapse"):
            found.append(
                Finding(
                    "collapse",
                    "learn",
                    f"after {learn_steps} steps the held-out answers collapse (correct "
                    f"{learned['after'].get('correct')}, baseline "
                    f"{learned['after'].get('baseline_correct')}, distinct answers "
                    f"{learned['after'].get('distinct')}): the gain is a constant answer",
                )
            )
    report = AuditReport(
        target=label,
        problems=len(groups),
        probes=probes,
        baseline_correct=baseline,
        findings=found,
        samples=report_samples,
        learn=learned,
        cost=cost,
    )
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "audit.json").write_text(report.to_json())
    return report


def audit_sync(target: Any, **kwargs: Any) -> AuditReport:
    """:func:`audit` from synchronous code (runs its own event loop).

    Example::

        report = audit_sync("examples/rl_hyperparameters.py:builder")
    """
    return asyncio.run(audit(target, **kwargs))
