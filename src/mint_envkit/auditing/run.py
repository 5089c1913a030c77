"""``audit()``: the check to run before paying for MinT, offline.

Four parts, each optional but the first:

1. exploit probes (:mod:`mint_envkit.auditing.probes`) on up to ``limit`` problems,
   with the env's own probes and the caller's, and generated ones
   (:mod:`mint_envkit.auditing.generated`: a seeded search over replies derived from the
   answer's type), each judged by the env and by a strict comparison of its own; the
   best trivial baseline (a constant answer, a candidate of the prompt by position, a
   uniform pick), each guess judged through the env's whole scoring path;
2. real samples of a model the backend serves (``sample_model``; the CLI's default is
   the local SmolLM2): the evaluation's figures, kept in ``samples.jsonl``;
3. a learning check (``learn_steps``, :mod:`mint_envkit.auditing.learn`): that many
   training steps on the local backend, held-out before and after where nothing is cut
   off, beside the baseline, with the collapse and position checks;
4. a cost preview for MinT (:mod:`mint_envkit.auditing.cost`).

Example::

    # not run: loads a model on the local backend
    import attrs

from mint_envkit.auditing import audit

    report = await audit("examples/rl_hyperparameters.py:builder",
                         sample_model="mint-envkit/tiny-qwen3", learn_steps=0)
    print(report.table()); report.ok
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.auditing.code import audit_code
from mint_envkit.auditing.cost import cost_preview
from mint_envkit.auditing.game_probes import run_game_probes
from mint_envkit.auditing.generated import DEFAULT_EXAMPLES, generated_probes
from mint_envkit.auditing.learn import learning_check, learning_findings
from mint_envkit.auditing.probes import AuditedProblem, ProbeResult, audited_problems, run_probes
from mint_envkit.auditing.replies import last_user
from mint_envkit.auditing.report import AuditReport, Finding
from mint_envkit.auditing.rules import GAME, findings
from mint_envkit.auditing.shortcuts import prompt_findings
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.checks import check_integer, is_number
from mint_envkit.envs.base import AuditProbe
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.spec import SAMPLES, eval_problems, load_target
from mint_envkit.rollouts.answers import AnswerGroup, agrees
from mint_envkit.rollouts.baselines import Baseline, trivial_baselines
from mint_envkit.rollouts.game_moves import is_game
from mint_envkit.rollouts.game_policies import best_game_baseline, game_baselines
from mint_envkit.rollouts.judging import (
    BY_CORRECT,
    BY_REWARD,
    PartialCredit,
    judge_guesses,
    partial_policies,
)
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings
from mint_envkit.runs.trackers import open_trackers, tracker_names, tracking_group
from mint_envkit.sandbox.mutants import MAX_MUTANTS
from mint_envkit.sandbox.reward import shared_runs


def _model_of(target: Any, given: str | None) -> str:
    if isinstance(target, DatasetBuilder):
        return given or target.model_name
    if given:
        return given
    raise ConfigError(
        "auditing an env class needs model_name= (the model whose tokenizer renders the "
        "prompts), e.g. model_name='mint-envkit/tiny-qwen3'; a DatasetBuilder brings its own"
    )


async def _baseline(
    problems: Sequence[AuditedProblem],
) -> tuple[list[Baseline], list[PartialCredit]]:
    """Every trivial policy on the probed problems the env can judge (some form of the
    answer scores right there), each guess judged through the env's whole scoring path,
    and the policies that earn partial credit on most problems."""
    judged_here = [p for p in problems if p.judge.basis is not None]
    answers = [
        AnswerGroup(
            reference=p.group.problem.get("answer"),
            parsed=[None],
            check=None if p.env is None else p.env.check,
            prompt=last_user(p.messages),
        )
        for p in judged_here
    ]
    pairs = [(a, p.judge) for a, p in zip(answers, judged_here, strict=True)]
    judged = await judge_guesses(pairs)
    partial = await partial_policies(pairs)
    return trivial_baselines(judged, agrees), partial


def _basis(problems: Sequence[AuditedProblem]) -> str | None:
    """What "right" means for these problems: the env's ``correct``, or its reward."""
    bases = {p.judge.basis for p in problems}
    return next((b for b in (BY_REWARD, BY_CORRECT) if b in bases), None)


@attrs.frozen
class Probed:
    """The probe part of an audit: every row, the baseline, what "right" means, findings.

    Example::

        # not run: `groups` are the audited problems' GroupBuilders, built elsewhere
        probed = await probe_part(groups, [], examples=30, seed=0, quiet=True)
        probed.baseline_name, [f.kind for f in probed.findings]
    """

    probes: list[ProbeResult]
    baseline_correct: float | None
    baseline_name: str | None
    basis: str | None
    findings: list[Finding]
    game: bool = False


async def probe_part(
    groups: Sequence[Any],
    extra: Sequence[AuditProbe],
    *,
    examples: int,
    seed: int,
    quiet: bool,
) -> Probed:
    """Probes (listed, the env's, the caller's, generated), the best trivial baseline and
    their findings, on ``groups`` (one GroupBuilder per problem).

    Example::

        # not run: see Probed
        probed = await probe_part(groups, [], examples=30, seed=0, quiet=True)
    """
    problems = await audited_problems(groups)
    if is_game(groups[0].make_message_env()):  # a game: episodes, not one reply
        rows = await run_game_probes(problems, extra, quiet=quiet)
        rows += await generated_probes(problems, examples=examples, seed=seed)
        best = best_game_baseline(await game_baselines(groups, seed=seed))
        baseline, baseline_name = (None, None) if best is None else (best.success, best.name)
        basis = _basis(problems) or (BY_CORRECT if best is not None else None)
        found = findings(rows, baseline, by_reward=basis == BY_REWARD, yard=GAME)
        return Probed(rows, baseline, baseline_name, basis, found, game=True)
    rows = await run_probes(problems, extra, quiet=quiet)
    rows += await generated_probes(problems, examples=examples, seed=seed)
    baselines, partial = await _baseline(problems)
    best = max(baselines, key=lambda b: b.correct) if baselines else None
    baseline, baseline_name = (None, None) if best is None else (best.correct, best.name)
    basis = _basis(problems)
    found = findings(rows, baseline, by_reward=basis == BY_REWARD, policies=partial)
    # a reward that pays wrong answers as much as right ones makes every policy "right":
    # no baseline then says anything about the data
    flat = any(f.kind == "inverted" or (f.kind, f.probe) == ("exploit", "wrong") for f in found)
    found += await prompt_findings(problems, [] if flat else baselines)
    return Probed(rows, baseline, baseline_name, basis, [*found, *_ordering_finding(groups)])


async def _samples(
    target: Any, model: str, options: Mapping[str, Any], out_dir: Path | None
) -> tuple[dict, Any]:
    from mint_envkit.evaluation.run import evaluate

    result = await evaluate(target, model_name=model, **options)
    statuses = Counter(status or "none" for p in result.problems for status in p.parse_status)
    total = sum(statuses.values()) or 1
    figures = result.figures
    if out_dir is not None:
        _write_samples(out_dir / "samples.jsonl", result)
    return (
        {
            "model": model,
            "samples": result.summary.get("samples"),
            "max_tokens": figures.max_tokens,
            "episodes": figures.episodes,
            "correct": figures.correct,
            "mean_reward": figures.mean_reward,
            "truncated_rate": figures.truncated_rate,
            "parse_status": {k: v / total for k, v in statuses.items()},
            "headline": result.headline(),
            **attrs.asdict(figures.answers),
            "tools": attrs.asdict(figures.tools),  # an env with tools: how the samples used them
        },
        result,
    )


def _write_samples(path: Path, result: Any) -> None:
    """One line per sampled reply: the problem, the reply, its reward, correct, status."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for problem in result.problems:
            for i, reply in enumerate(problem.replies):
                line = {
                    "problem": problem.problem,
                    "index": problem.index,
                    "reply": reply,
                    "reward": problem.rewards[i] if i < len(problem.rewards) else None,
                    "correct": problem.correct[i] if i < len(problem.correct) else None,
                    "parse_status": problem.parse_status[i]
                    if i < len(problem.parse_status)
                    else None,
                }
                out.write(json.dumps(line, default=str) + "\n")


def _ordering_finding(groups: Sequence[Any]) -> list[Finding]:
    try:
        made = type(groups[0].make_message_env())
    except Exception:  # an env that cannot be made: the probes' rows say why
        return []
    scoring = getattr(made, "scoring", None)
    if scoring is None or scoring.ordering_known:
        return []
    return [Finding("warning", "ordering", scoring.ordering)]


def _probes_of(given: Sequence[AuditProbe | Mapping[str, Any]] | str | None) -> list[AuditProbe]:
    """The caller's probes: AuditProbes, dicts, or a .jsonl file of {name, reply, kind}."""
    if given is None:
        return []
    if isinstance(given, str | Path):
        path = Path(given)
        if not path.is_file():
            raise ConfigError(f"probes file {str(path)!r} does not exist")
        rows = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ConfigError(f"{path}:{number} is not JSON: {err}") from None
        given = rows
    out = []
    for item in given:
        if isinstance(item, AuditProbe):
            out.append(item)
        elif isinstance(item, Mapping) and {"name", "reply"} <= set(item):
            out.append(
                AuditProbe(str(item["name"]), str(item["reply"]), item.get("kind", "non_answer"))
            )
        else:
            raise ConfigError(
                f"a probe must be an AuditProbe or {{'name', 'reply', 'kind'}}, got {item!r}; "
                "kind is 'non_answer' (default) or 'answer_shaped'"
            )
    return out


async def audit(
    target: Any,
    *,
    model_name: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    limit: int = 20,
    split: str | None = "train",
    probes: Sequence[AuditProbe | Mapping[str, Any]] | str | None = None,
    search: int = DEFAULT_EXAMPLES,
    seed: int = 0,
    sample_model: str | None = None,
    samples: int = SAMPLES,
    max_tokens: int | None = None,
    learn_steps: int = 0,
    learn_options: Mapping[str, Any] | None = None,
    planned_steps: int | None = None,
    prices: Mapping[str, float] | None = None,
    base_url: str | None = None,
    backend: str | None = None,
    out_dir: str | Path | None = None,
    loggers: Sequence[str] = (),
    quiet: bool = False,
    mutants: int = MAX_MUTANTS,
) -> AuditReport:
    """Audit an env's reward before training on it: probes, samples, learning, cost.

    Args:
        target: an ENV_SPEC (``MODULE:NAME``), a DatasetBuilder or an env class (with
            ``problems`` and ``model_name``).
        model_name: the model whose tokenizer renders the probes (a builder's own).
        limit: probe (and sample) at most this many problems of ``split``.
        probes: more probes to try on every problem: :class:`~mint_envkit.AuditProbe`
            values, dicts ``{"name", "reply", "kind"}``, or a ``.jsonl`` file of them
            (``{answer}``, ``{wrong}`` and ``{question}`` in a reply are filled in).
        search: generated replies tried per family of the answer's type
            (:mod:`mint_envkit.auditing.generated`; 0: no search). The search is
            seeded and counted in replies, not seconds, so it finds the same on every
            machine.
        seed: the search's seed.
        sample_model: sample ``samples`` replies per problem from this model for its
            figures and the cost preview (None: skip); they go to ``samples.jsonl``.
        max_tokens: the samples' reply limit (default: the builder's).
        learn_steps: train this many steps on ``sample_model`` (a DatasetBuilder
            target; a test split is held out when it has none) and compare held-out
            correctness before and after with the baseline (0: skip).
        learn_options: more :class:`~mint_envkit.Config` fields for the learning check
            (``learning_rate``, ``lora_rank``, ``temperature``...).
        planned_steps: the MinT run's steps for the cost preview (default: one epoch).
        prices: US dollars per million tokens by ``PRICE_KEYS``; no money without.
        base_url, backend: the backend for samples and learning (default: embedded).
        out_dir: write ``audit.json``, ``samples.jsonl`` (and the learning run under
            ``learn/``) here.
        loggers: experiment trackers (``"tensorboard"``, ``"wandb"``, ``"mlflow"``) that
            get the audit's figures as one row (each probe's mean reward, the baseline,
            the samples' figures, the verdict) under ``out_dir``; the learning check's
            run logs its steps to them too.
        quiet: no progress lines.
        mutants: a code env (:class:`~mint_envkit.sandbox.CodeEnv`): mutate each
            problem's reference solution at most this many times to measure its tests'
            strength (0: skip); see :mod:`mint_envkit.auditing.code`.

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
    check_integer(search, "search", least=0)
    check_integer(seed, "seed", least=0)
    check_integer(mutants, "mutants", least=0)
    trackers = tracker_names(loggers, field="audit(loggers=...)")
    if trackers and out_dir is None:
        raise ConfigError(
            f"audit(loggers={trackers!r}) writes the trackers' files in the audit's folder; "
            "pass out_dir=... too"
        )
    extra = _probes_of(probes)
    model = _model_of(target, model_name)
    chosen = await eval_problems(
        target, model_name=model, samples=1, split=split, problems=problems, limit=limit
    )
    groups = [group for _split, group in chosen.pairs]
    if not groups:
        raise ConfigError(f"the {split} split of {label} has no problems to audit")
    with shared_runs():  # the reference solution runs once for the probes and the code audit
        probed = await probe_part(groups, extra, examples=search, seed=seed, quiet=quiet)
        code = await audit_code(groups, mutants=mutants, quiet=quiet)  # None: no code env
    found = list(probed.findings) if code is None else code.findings(probed.findings)
    baseline = (probed.baseline_correct, probed.baseline_name) if code is None else code.baseline
    report_samples = cost = learned = None
    given = {"base_url": base_url, "backend": backend}
    connection = BackendSettings(**{k: v for k, v in given.items() if v is not None})
    home = Path(out_dir) if out_dir else None
    if sample_model:
        options = {"samples": samples, "split": split, "problems": problems, "limit": limit}
        options["sampling"] = SamplingSettings(max_tokens=max_tokens)
        options["backend"] = connection
        options["quiet"] = quiet
        report_samples, result = await _samples(target, sample_model, options, home)
        if report_samples.get("collapse") == 1.0:
            found.append(
                Finding(
                    "warning",
                    "samples",
                    f"the sampled {sample_model}'s answers collapse ({result.headline()}); "
                    "that is the base model's, not the reward's: see the learning check",
                )
            )
        builder = target if isinstance(target, DatasetBuilder) else None
        cost = await cost_preview(groups, result, builder, planned_steps, prices)
    if learn_steps:
        if not isinstance(target, DatasetBuilder) or not sample_model:
            raise ConfigError(
                "learn_steps needs a DatasetBuilder target and sample_model (the model to "
                "train on the local backend)"
            )
        where = home or Path(tempfile.mkdtemp(prefix="mint-envkit-audit-"))
        options = {k: v for k, v in given.items() if v is not None}
        options = {"max_tokens": max_tokens, **options, **(learn_options or {})}
        if trackers:
            options.setdefault("loggers", trackers)
        # one tracker store for the audit: its learning run and its summary row (_track)
        with _grouped(trackers, home):
            learned = await learning_check(
                target, sample_model, learn_steps, str(where / "learn"), options
            )
        found.extend(learning_findings(learned))
    report = AuditReport(
        target=label,
        problems=len(groups),
        probes=probed.probes,
        baseline_correct=baseline[0],
        baseline_name=baseline[1],
        basis=probed.basis,
        game=probed.game,
        findings=found,
        samples=report_samples,
        learn=learned,
        cost=cost,
        code=code,
    )
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "audit.json").write_text(report.to_json())
        if trackers:
            _track(report, trackers, home)
    return report


def _grouped(loggers: Sequence[str], home: Path | None) -> contextlib.AbstractContextManager:
    """The audit's tracker runs as one group in ``home`` (one MLflow store, one W&B group)."""
    if not loggers or home is None:
        return contextlib.nullcontext()
    return tracking_group(home.resolve().name, home)


def _track(report: AuditReport, loggers: Sequence[str], home: Path) -> None:
    """The audit as one tracker row: each probe's mean reward, the baseline, the samples'
    figures and the verdict (``audit/...``)."""
    row: dict[str, Any] = {
        "audit/ok": float(report.ok),
        "audit/exploits": len(report.exploits),
        "audit/verdict": report.verdict.line,
        "audit/baseline_correct": report.baseline_correct,
        "audit/baseline_name": report.baseline_name,
    }
    row.update({f"audit/probe/{p.name}": p.mean_reward for p in report.probes})
    for key, value in (report.samples or {}).items():
        if is_number(value):
            row[f"audit/samples/{key}"] = value
    with _grouped(loggers, home):
        tracked = open_trackers(loggers, home / "tracking", {"target": report.target}, name="audit")
    try:
        tracked.log({k: v for k, v in row.items() if v is not None}, step=0)
    finally:
        tracked.close()


def audit_sync(target: Any, **kwargs: Any) -> AuditReport:
    """:func:`audit` from synchronous code (runs its own event loop).

    Example::

        report = audit_sync("examples/rl_hyperparameters.py:builder")
    """
    return asyncio.run(audit(target, **kwargs))
