"""A sweep with Config.loggers: one tracker run per config, grouped by the sweep."""

from __future__ import annotations

import attrs

from mint_envkit.runs.files import RunFiles
from mint_envkit.sweep import Sweep
from tracker_records import mlflow_history, mlflow_run, offline_tracker_env, wandb_runs

REWARD = "env/all/reward/total"


async def runner(config):
    """What the loop does with its files: each row inside ``tracking`` goes to the trackers."""
    files = RunFiles(config.log_path)
    files.ensure()
    with files.tracking(config.loggers, config.public_dict()):
        for step in range(2):
            files.append_metrics({"step": step, REWARD: config.temperature + step})


async def test_each_config_is_one_tracker_run_of_the_sweeps_group(
    tmp_path, make_config, monkeypatch
):
    offline_tracker_env(monkeypatch, tmp_path / "home")
    base = make_config(loggers=("tensorboard", "wandb", "mlflow"))
    root = tmp_path / "lr-sweep"
    sweep = Sweep(base=base, grid={"temperature": [0.5, 1.0]}, root=root, runner=runner, quiet=True)
    assert [r.ok for r in await sweep.run()] == [True, True]
    for name, temperature in (("t0p5", 0.5), ("t1p0", 1.0)):
        run = root / name
        (found,) = wandb_runs(run)
        assert (found.run_group, found.display_name) == ("lr-sweep", name)
        assert mlflow_history(run, REWARD) == [(0, temperature), (1, temperature + 1)]
        assert mlflow_run(run).data.tags["mint_envkit.group"] == "lr-sweep"
        assert (run / "tensorboard").is_dir()  # `tensorboard --logdir ROOT`: one per config
    assert (root / "mlflow.db").is_file()  # one store, experiment "lr-sweep"


async def test_trackers_added_to_a_sweep_do_not_make_it_another_experiment(
    tmp_path, make_config, monkeypatch
):
    offline_tracker_env(monkeypatch, tmp_path / "home")

    async def fails_untracked(config):
        if config.temperature == 1.0 and not config.loggers:
            raise RuntimeError("out of memory")
        await runner(config)

    root = tmp_path / "sweep"
    base = make_config()
    grid = {"temperature": [0.5, 1.0]}
    first = await Sweep(base=base, grid=grid, root=root, runner=fails_untracked, quiet=True).run()
    assert [r.ok for r in first] == [True, False]
    tracked = attrs.evolve(base, loggers=("tensorboard",))  # an operational field
    again = Sweep(base=tracked, grid=grid, root=root, runner=fails_untracked, quiet=True)
    assert [(r.skipped, r.ok) for r in await again.run()] == [(True, True), (False, True)]
    assert (root / "t1p0" / "tensorboard").is_dir()
