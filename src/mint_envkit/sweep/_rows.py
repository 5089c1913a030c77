"""What one config's run says: its ``metrics.jsonl`` read per step, and its summary row.

The keys below name the metrics the sweep's table shows.

Example::

    import json
    import os

    def write_run(path):  # what a run writes: metrics.jsonl, one line per step
        os.makedirs(path)
        with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
            print(json.dumps({"step": 0, "env/all/reward/total": -0.25,
                              "test/env/all/reward/total": -0.25}), file=fh)
            print(json.dumps({"step": 1, "env/all/reward/total": -0.1, "env/all/correct": 0.0,
                              "test_final/env/all/reward/total": 0.1}), file=fh)

    write_run("runs/sweep/t0p7")
    m = read_run_metrics("runs/sweep/t0p7")
    assert (m.steps, m.final["env/all/reward/total"]) == (2, -0.1)

    # one config's row of a sweep's summary (load_summary(root).rows), from its fields:
    step = {"step": 0, "env/all/reward/total": -0.1, "env/all/correct": 0.0, "train/datums": 8}
    row = SummaryRow(name="t0p7", params={"temperature": 0.7}, status="ok",
                     settings={"kl_penalty_coef": 0.0, "temperature": 0.7, "group_size": 2},
                     metrics=RunMetrics(exists=True, steps=1, final=step, history=(step,)),
                     log_path="runs/sweep/t0p7")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.checks import is_integer
from mint_envkit.runs.files import read_jsonl
from mint_envkit.runs.record import FINAL, TEST, Figures
from mint_envkit.runs.store import METRICS
from mint_envkit.sweep._answers import HeldOutAnswers, _number, held_out_answers

REWARD_KEY = "env/all/reward/total"
"""The metric shown as "Mean reward": the mean total reward of the final step.

Example::

    write_run("runs/sweep/t0p7")  # the module example's run
    assert read_run_metrics("runs/sweep/t0p7").final[REWARD_KEY] == -0.1
"""
CORRECT_KEY = "env/all/correct"
"""The metric shown as "Correct": the fraction correct at the final step.

Example::

    write_run("runs/sweep/t0p7")  # the module example's run
    assert read_run_metrics("runs/sweep/t0p7").final.get(CORRECT_KEY) == 0.0  # None if not logged
"""


@attrs.frozen
class RunMetrics:
    """What one run's ``metrics.jsonl`` says.

    Attributes:
        exists: whether the file exists.
        steps: number of steps logged (distinct ``step`` values; a step
            logged again after a resume counts once).
        final: the final step's metrics (all lines of that step merged, later
            lines winning).
        unreadable: lines that were not JSON objects (e.g. a torn last line).
        history: every step's metrics, in order (each merged like ``final``).

    Example::

        write_run("runs/sweep/t0p7")  # the module example's run
        m = read_run_metrics("runs/sweep/t0p7")
        assert (m.exists, m.steps, m.final.get("env/all/reward/total")) == (True, 2, -0.1)
        assert not read_run_metrics("runs/sweep/never-ran").exists
    """

    exists: bool
    steps: int
    final: Mapping[str, Any]
    unreadable: int = 0
    history: tuple[Mapping[str, Any], ...] = ()


def read_run_metrics(log_path: str | os.PathLike[str]) -> RunMetrics:
    """Read ``metrics.jsonl`` of one run directory.

    Example::

        write_run("runs/sweep/t0p7")  # the module example's run
        assert read_run_metrics("runs/sweep/t0p7").final["env/all/correct"] == 0.0
    """
    path = Path(log_path) / METRICS
    bad: list[str] = []
    lines = read_jsonl(path, unreadable=bad)
    keys: list[Any] = []
    for index, line in enumerate(lines):
        step = line.get("step")
        valid = is_integer(step)
        keys.append(("step", step) if valid else ("line", index))
    merged: dict[Any, dict[str, Any]] = {}
    for key, line in zip(keys, lines, strict=True):
        merged.setdefault(key, {}).update(line)
    history = tuple(merged.values())
    final = merged[keys[-1]] if lines else {}
    return RunMetrics(
        exists=path.exists(),
        steps=len(merged),
        final=final,
        unreadable=len(bad),
        history=history,
    )


@attrs.frozen
class SummaryRow:
    """One config of a sweep, as its files describe it.

    Attributes:
        name: the config name (its subdirectory).
        params: its grid values.
        settings: its KL coefficient, temperature and group size.
        status: ``"ok"`` (latest attempt ok and metrics written), ``"failed"``
            (latest attempt raised) or ``"missing"`` (never finished).
        metrics: what its ``metrics.jsonl`` says.
        log_path: its run directory.
        error: the error of its latest failed attempt.
        seconds: the duration of its latest attempt.

    Example::

        # load_summary(root).rows holds one per config; the module example builds one:
        assert (row.name, row.status, row.mean_reward) == ("t0p7", "ok", -0.1)
    """

    name: str
    params: Mapping[str, Any]
    settings: Mapping[str, Any]
    status: str
    metrics: RunMetrics
    log_path: str
    error: str | None = None
    seconds: float | None = None

    @property
    def mean_reward(self) -> float | None:
        """``env/all/reward/total`` of the final step, or None.

        Example::

            assert row.mean_reward == -0.1  # the module example's row
        """
        return _number(self.metrics.final.get(REWARD_KEY))

    @property
    def correct(self) -> float | None:
        """``env/all/correct`` of the final step, or None when the env has no such metric.

        Example::

            assert row.correct == 0.0  # the module example's row
        """
        return _number(self.metrics.final.get(CORRECT_KEY))

    @property
    def eval_before(self) -> float | None:
        """The held-out reward before the first update (step 0's test eval), or None.

        Example::

            first = {"step": 0, "test/env/all/reward/total": -0.25}
            last = {"step": 1, "test_final/env/all/reward/total": 0.1}
            row = SummaryRow(name="t0p7", params={}, settings={}, status="ok", log_path="t0p7",
                             metrics=RunMetrics(exists=True, steps=2, final=last,
                                                history=(first, last)))
            assert (row.eval_before, row.eval_after) == (-0.25, 0.1)
        """
        first = self.metrics.history[0] if self.metrics.history else {}
        figures = Figures.from_metrics(first, TEST)
        return None if figures is None else figures.mean_reward

    @property
    def eval_after(self) -> float | None:
        """The held-out reward after the last update, on the same problems, or None."""
        figures = Figures.from_metrics(self.metrics.final, FINAL)
        return None if figures is None else figures.mean_reward

    @property
    def answers(self) -> HeldOutAnswers:
        """Held-out correctness before and after, beside the best trivial baseline.

        The final evaluation's ``answers/*`` metrics (see
        :func:`~mint_envkit.sweep.held_out_answers`); every figure is None for a
        run that did not log it.

        Example::

            final = {"step": 9, "test_final/env/all/correct": 0.575,
                     "test_final/env/all/answers/baseline_correct": 0.575,
                     "test_final/env/all/answers/collapse": 1.0}
            row = SummaryRow(name="lr1em04", params={}, settings={}, status="ok",
                             log_path="lr1em04",
                             metrics=RunMetrics(exists=True, steps=1, final=final,
                                                history=(final,)))
            answers = row.answers
            assert (answers.correct_after, answers.baseline, answers.flag) == (
                0.575, 0.575, "COLLAPSE")
        """
        return held_out_answers(self.metrics.history)

    @property
    def datums(self) -> int:
        """Datums trained on over all steps (0 when every group was constant).

        Example::

            assert row.datums == 8  # the module example's row
        """
        return int(sum(_number(m.get("train/datums")) or 0 for m in self.metrics.history))

    @property
    def kl(self) -> float | None:
        """The KL of the policy to the base model at the final step (``kl_policy_base``), or None."""
        return _number(self.metrics.final.get("kl_policy_base"))
