"""The audit's learning check: a few real training steps, and what the held-out evals say.

The check trains ``steps`` steps of the loop (:func:`~mint_envkit.rl.run_training`) on
the local backend, with a held-out split (a quarter of the problems when the builder has
none) evaluated before the first step and after the last, greedily. What it reads, from
the loop's own figures:

- the before/after claim (:mod:`mint_envkit.evaluation.claims`): the gain split into
  format and content, measured where the base model is not cut off (the loop evaluates
  again at a larger reply limit when it is);
- the final eval's answer figures: collapse onto one answer or one position, and whether
  correctness beats the best trivial baseline beyond noise;
- the final eval's counterfactual check: whether the answers follow the offered
  candidates' content or their position.

:func:`learning_findings` turns them into the audit's findings.

Example::

    # not run: trains on the local backend
    learned = await learning_check(builder, "mint-envkit/smollm2-135m-instruct", 8, "runs/a", {})
    learned["claim"]["line"]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mint_envkit.auditing.report import Finding
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.evaluation.figures import headline
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.record import FINAL, TEST, Figures, TrainingHealth, find_eval

EVAL_TEMPERATURE = 1e-3
"""The learning check's held-out evals are greedy in effect (the backend takes T > 0).

Example::

    EVAL_TEMPERATURE < 0.01   # True
"""


async def learning_check(
    builder: DatasetBuilder,
    model: str,
    steps: int,
    log_path: str,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """Train ``steps`` steps of ``model`` on ``builder``; the claim and the final figures.

    ``options`` are more :class:`~mint_envkit.Config` fields (``learning_rate``,
    ``lora_rank``, ``base_url``, ...); ``max_tokens`` sets the builder's reply limit.

    Example::

        # not run: trains on the local backend
        learned = await learning_check(builder, model, 8, "runs/audit/learn", {})
        learned["after"]["answers/beats_baseline"]   # the final eval's summary
    """
    from mint_envkit.rl.config import Config
    from mint_envkit.rl.train import run_training

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
        eval_temperature=options.pop("eval_temperature", EVAL_TEMPERATURE),
        save_every=0,
        **options,
    )
    result = await run_training(config)
    rows = RunFiles(log_path).metrics()
    first, last = find_eval(rows, TEST), find_eval(rows, FINAL, last=True)
    before = Figures() if first is None else first[1]
    after = Figures() if last is None else last[1]
    return {
        "model": model,
        "steps": steps,
        "log_path": log_path,
        "before": attrs.evolve(before, max_tokens=reply_limit).summary(),
        "after": attrs.evolve(after, max_tokens=reply_limit).summary(),
        "claim": None if result.claim is None else result.claim.record(),
        "headline": headline(after) if last else None,
        # each step's training health (truncation, signal, advantages, gradient), and
        # whether some could teach nothing
        "health": [
            {"step": row.get("step"), **attrs.asdict(health)}
            for row in rows
            if (health := TrainingHealth.from_metrics(row)) is not None
        ],
        "not_learning": result.not_learning,
    }


def learning_findings(learned: Mapping[str, Any]) -> list[Finding]:
    """The findings of a learning check: collapse, no gain, position-following, or a
    warning when its before/after could not be measured where nothing is cut off.

    Example::

        learning_findings({"steps": 8, "after": {"answers/collapse": 1.0}, "claim": None})
        # [Finding(kind='collapse', ...), Finding(kind='warning', ...)]
    """
    after, steps = Figures.from_summary(learned.get("after") or {}), learned["steps"]
    claim = learned.get("claim")
    out = []
    permuted = after.counterfactual
    if after.answers.collapse:
        out.append(
            Finding(
                "collapse",
                "learn",
                f"after {steps} steps the held-out answers collapse: "
                f"{headline(after)}; the gain is a trivial policy's, not the task's",
            )
        )
    if permuted.position_following:
        out.append(
            Finding(
                "position",
                "learn",
                f"after {steps} steps the answers follow the position of the offered "
                f"candidates, not their content: with them permuted, "
                f"{permuted.same_position or 0.0:.0%} of the answers kept the "
                f"position and {permuted.same_content or 0.0:.0%} the content",
            )
        )
    if claim is None or claim.get("beats_baseline") is None:
        out.append(
            Finding(
                "warning",
                "learn",
                "the learning check could not measure before/after where the base model is "
                "not cut off"
                + ("" if claim is None else f": {claim['line']}")
                + "; give a larger reply limit (max_tokens)",
            )
        )
    elif not claim["beats_baseline"]:
        out.append(
            Finding(
                "no_gain",
                "learn",
                f"after {steps} steps held-out {after.answers.success_metric or 'correctness'} "
                f"does not beat the best trivial baseline beyond noise: {claim['line']}",
            )
        )
    if learned.get("not_learning"):  # steps that could teach nothing: why, and the fix
        out.append(Finding("warning", "learn", learned["not_learning"]))
    return out
