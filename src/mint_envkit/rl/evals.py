"""The loop's held-out evals: the first and every ``eval_every`` step, the final one, and
the run's before/after line.

Each eval is one :func:`mint_envkit.evaluate` of the test split with the step's sampling
client, at ``Config.eval_sampling`` (the reply limit of training; ``eval_temperature``):
its rollouts go to ``rollouts.jsonl`` (split ``test`` or ``test_final``), its figures to
the step's metrics (``test/env/all/...``, ``test_final/env/all/...``). Every eval samples
the same seeds, so the first and the final one differ only by the weights.

The final eval also runs the counterfactual check when the problems offer candidates
(:mod:`mint_envkit.evaluation.counterfactual`: ``test_final/env/all/counterfactual/...``).

When the first eval cuts off more than 5% of the replies (``Config.uncut_evals``), it is
repeated at a reply limit where it does not (split ``test_uncut``, its figures with
their reply limit), and so is the final one (``test_final_uncut``):
:func:`run_claim` then says the gain where nothing is cut off (see
:mod:`mint_envkit.evaluation.claims`).

Example::

    # not run: needs a sampling client (a running backend)
    metrics = await evaluate_split(config, files, test_data, client, step=0)
    print(run_claim(config, files).line())
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mint_envkit.evaluation.claims import (
    TRUNCATION_OK,
    LearningClaim,
    run_claim_of,
    uncut_budget,
)
from mint_envkit.evaluation.run import evaluate
from mint_envkit.progress import say
from mint_envkit.rl.config import Config
from mint_envkit.rollouts.answers import collapse_note
from mint_envkit.rollouts.records import rollout_records
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.record import (
    FINAL,
    FINAL_UNCUT,
    TEST,
    UNCUT,
    Figures,
    eval_prefix,
    find_eval,
)

UNCUT_CEILING = 2048
"""The largest reply limit an uncut eval tries (tokens).

Example::

    UNCUT_CEILING >= 512   # True
"""


async def _one(
    config: Config,
    files: RunFiles,
    test_data: Any,
    client: Any,
    step: int,
    split: str,
    max_tokens: int,
) -> tuple[dict[str, Any], Figures]:
    sampling = attrs.evolve(config.eval_sampling, max_tokens=max_tokens)
    # the counterfactual check (candidates permuted) on the final eval only: None = auto
    wanted = None if split in (FINAL, FINAL_UNCUT) else False
    result = await evaluate(
        test_data, client=client, sampling=sampling, quiet=True, counterfactual=wanted
    )
    records = rollout_records(step, result.rollouts, {}, split, max_tokens=max_tokens)
    files.append_rollouts(records)
    figures = result.figures
    note = collapse_note(figures.answers, figures.correct)
    if note:
        say(f"{split} eval at step {step}: {note}")
    # the env's metrics and the figures under the split's prefix, and the reply limit
    return {**result.metrics(eval_prefix(split)), **figures.metrics(split)}, figures


def _recorded_budget(files: RunFiles, current: Mapping[str, Any]) -> int | None:
    """The uncut reply limit the first eval found (this step's metrics, else the files)."""
    found = find_eval([current, *files.metrics()], UNCUT)
    return None if found is None else found[1].max_tokens


async def evaluate_split(
    config: Config,
    files: RunFiles,
    test_data: Any,
    client: Any,
    step: int,
    final: bool = False,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One held-out eval of ``test_data`` with ``client``: its metrics (``test/env/...``,
    or ``test_final/env/...`` when ``final``), and the uncut evals described above.

    ``current`` is the step's metrics so far (a one-step run's first and final evals
    share a step).

    Example::

        # not run: needs a sampling client (a running backend)
        metrics = await evaluate_split(config, files, test_data, client, step=0)
        metrics["test/env/all/correct"], metrics["test/env/all/answers/baseline_name"]
    """
    split = FINAL if final else TEST
    limit = config.eval_sampling.max_tokens or config.max_tokens
    metrics, figures = await _one(config, files, test_data, client, step, split, limit)
    if not config.uncut_evals:
        return metrics
    if final:
        budget = _recorded_budget(files, current or {})
        if budget is not None:
            more, _ = await _one(config, files, test_data, client, step, FINAL_UNCUT, budget)
            metrics.update(more)
        return metrics
    cut = figures.truncated_rate or 0.0
    if step != 0 or cut <= TRUNCATION_OK:
        return metrics

    async def measure(max_tokens: int) -> Figures:
        found, at = await _one(config, files, test_data, client, step, UNCUT, max_tokens)
        measured.clear()  # the limit that ends the search is the one the metrics keep
        measured.update(found)
        tried.append(max_tokens)
        return at

    measured: dict[str, Any] = {}
    tried: list[int] = []
    found = await uncut_budget(measure, limit, UNCUT_CEILING, figures.truncated_rate)
    if found is None:
        say(
            f"the first held-out eval cuts off {cut:.0%} of the replies at {limit} tokens, "
            f"and still more than 5% at {tried[-1] if tried else limit} tokens (the larger "
            "limits tried stop once more room ends no more replies): the run's before/after "
            "figures compare reply lengths, not the task"
        )
        return metrics
    say(
        f"the first held-out eval cuts off {cut:.0%} of the replies at {limit} tokens; the "
        f"run also evaluates at {found[0]} tokens (where {found[1].truncated_rate or 0.0:.0%} "
        "are), first and last"
    )
    return {**metrics, **measured}


def run_claim(config: Config, files: RunFiles) -> LearningClaim | None:
    """The run's before/after claim: its first held-out eval against its final one (None
    when the run has not logged both; see
    :func:`~mint_envkit.evaluation.claims.run_claim_of`).

    Example::

        # not run: needs a finished run's files
        print(run_claim(config, files).line())
    """
    limit = config.eval_sampling.max_tokens or config.max_tokens
    return run_claim_of(files.metrics(), limit)
