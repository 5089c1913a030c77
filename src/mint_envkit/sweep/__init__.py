"""Hyperparameter sweeps of RL runs: a grid of configs, run and summarised.

A :class:`Sweep` expands a grid of :class:`~mint_envkit.rl.config.Config`
fields (and dataset-builder fields such as ``group_size`` and
``batch_size``) into configs with stable names, runs them one after another
or ``parallel`` at once, records each finished config in ``results.jsonl``
(so running it again resumes), and summarises what the runs wrote in their
``metrics.jsonl`` as a table, ``summary.csv`` and ``summary.png``.

A finished sweep's summary comes from one place, :func:`load_summary`
(``mint-envkit summary SWEEP_DIR`` prints it); a :class:`Sweep` shows its own
with ``sweep.table()`` / ``sweep.summary()``. The modules of this package are
private: import from ``mint_envkit.sweep``.

Example::

    import json
    from pathlib import Path

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config
    from mint_envkit.sweep import Sweep

    async def runner(config):  # stands in for training: writes the run's metrics.jsonl
        with open(Path(config.log_path) / "metrics.jsonl", "w") as fh:
            print(json.dumps({"step": 0, "env/all/reward/total": -0.25,
                              "test/env/all/reward/total": -0.25}), file=fh)
            print(json.dumps({"step": 1, "env/all/reward/total": -0.1, "env/all/correct": 0.0,
                              "test_final/env/all/reward/total": 0.1, "train/datums": 8}), file=fh)

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(dataset_builder=builder, log_path="unused")

    sweep = Sweep(
        base=config,
        grid={"kl_penalty_coef": [0.0, 0.02], "temperature": [0.7, 1.0], "group_size": [2, 4]},
        root="runs/arithmetic-sweep",
        parallel=1,
        runner=runner,  # None (the default) trains each config with rl.train.main
    )
    results = await sweep.run()  # list[SweepResult]
    print(sweep.table())
    assert len(results) == 8 and all(r.ok for r in results)

    # or from the MINT_RL_* variables (8 configs by default):
    sweep = Sweep.from_env(config, root="runs/arithmetic-sweep")

:func:`interpolation_sweep` (from :mod:`mint_envkit.interpolation`, also named here)
mixes checkpoints on a grid of coefficients (MinT's ``interpolate_checkpoints``) and
evaluates each mix, resumable the same way.
"""

from mint_envkit.interpolation.results import InterpolationSweep
from mint_envkit.interpolation.run import interpolation_sweep
from mint_envkit.sweep._answers import HeldOutAnswers, held_out_answers
from mint_envkit.sweep._env import DEFAULT_GRID, grid_from_env, log_root_from_env
from mint_envkit.sweep._grid import GridPoint, apply_fields
from mint_envkit.sweep._rows import SummaryRow
from mint_envkit.sweep._runner import Sweep, SweepResult
from mint_envkit.sweep._summary import SweepSummary, load_summary

__all__ = [
    "DEFAULT_GRID",
    "GridPoint",
    "HeldOutAnswers",
    "InterpolationSweep",
    "SummaryRow",
    "Sweep",
    "SweepResult",
    "SweepSummary",
    "apply_fields",
    "grid_from_env",
    "held_out_answers",
    "interpolation_sweep",
    "load_summary",
    "log_root_from_env",
]
