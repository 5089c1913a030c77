"""Experiment trackers: what TensorBoard, W&B (offline) and MLflow hold after a run's rows,
read back with their own readers (tests/tracker_records.py), on resume and on failure."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import pytest

from mint_envkit.errors import ConfigError, MissingExtraError
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.tracker_kinds import TensorBoardTracker, mlflow_key
from mint_envkit.runs.trackers import (
    STATE_FILE,
    TrackingGroup,
    open_trackers,
    split_row,
    tracker_names,
    tracking_group,
)
from tracker_records import (
    mlflow_history,
    mlflow_run,
    offline_tracker_env,
    tensorboard_scalars,
    tensorboard_tags,
    tensorboard_tensors,
    wandb_config,
    wandb_files,
    wandb_history,
    wandb_records,
    wandb_runs,
)

ALL = ("tensorboard", "wandb", "mlflow")
REWARD = "env/all/reward/total"
BASELINE = "env/answers/baseline_name"


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    offline_tracker_env(monkeypatch, tmp_path / "home")


def _row(step: int, reward: float) -> dict:
    return {
        "step": step,
        REWARD: reward,
        "test/env/all/pass@1": 0.25,
        "env/all/correct": True,
        BASELINE: "constant '5'",
        "env/all/missing": None,
        "env/all/nan": float("nan"),
        "env/all/list": [1, 2],
    }


def _history(log_path, key):
    return [(row["_step"], row[key]) for row in wandb_history(log_path) if key in row]


# ----------------------------------------------------------------- the names


def test_tracker_names_are_checked():
    assert tracker_names(["tensorboard", "mlflow"]) == ("tensorboard", "mlflow")
    assert tracker_names(()) == ()
    with pytest.raises(ConfigError, match=r"write \('wandb',\)"):
        tracker_names("wandb")
    with pytest.raises(ConfigError, match="'neptune', which is not a tracker"):
        tracker_names(("neptune",))
    with pytest.raises(ConfigError, match="names a tracker twice"):
        tracker_names(("wandb", "wandb"))


@pytest.mark.parametrize("name", ALL)
def test_a_missing_extra_names_the_pip_command(monkeypatch, name):
    monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(MissingExtraError, match=rf"pip install 'mint-envkit\[{name}\]'"):
        tracker_names((name,))


def test_importing_the_kit_imports_no_tracker():
    code = (
        "import sys, mint_envkit\n"
        "from mint_envkit.rl import Config\n"
        "from mint_envkit.runs.trackers import open_trackers\n"
        "from mint_envkit.sweep import Sweep\n"
        "from mint_envkit.evaluation import evaluate\n"
        "print(sorted(m for m in ('tensorboard', 'wandb', 'mlflow') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=100, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_row_splits_into_scalars_and_texts():
    scalars, texts = split_row(_row(3, 0.5))
    assert scalars == {REWARD: 0.5, "test/env/all/pass@1": 0.25, "env/all/correct": 1.0}
    assert texts == {BASELINE: "constant '5'"}
    assert mlflow_key("test/env/all/pass@1") == "test/env/all/pass_1"


# ------------------------------------------------------------ reading back


def test_every_tracker_holds_every_row_offline_under_the_run(tmp_path):
    run = tmp_path / "run"
    config = {"learning_rate": 0.003, "dataset_builder": {"seed": 0}, "loggers": list(ALL)}
    trackers = open_trackers(ALL, run, config)
    assert trackers.names == ALL
    for step, reward in enumerate([0.25, 0.5]):
        trackers.log(_row(step, reward), step=step)
    trackers.close()

    assert tensorboard_scalars(run, REWARD) == [(0, 0.25), (1, 0.5)]
    assert tensorboard_tensors(run, BASELINE) == [(0, "constant '5'"), (1, "constant '5'")]
    assert "env/all/missing" not in tensorboard_tags(run)
    assert {"_hparams_/session_start_info", "config"} <= set(tensorboard_tags(run))
    assert json.loads(tensorboard_tensors(run, "config")[0][1].strip("`\n")) == config

    assert _history(run, REWARD) == [(0, 0.25), (1, 0.5)]
    assert _history(run, BASELINE) == [(0, "constant '5'"), (1, "constant '5'")]
    (wandb_run,) = wandb_runs(run)
    assert wandb_run.project == "mint-envkit" and wandb_run.display_name == "run"
    assert wandb_config(wandb_run)["learning_rate"] == 0.003
    telemetry = [r.telemetry for r in wandb_records(run) if r.HasField("telemetry")]
    assert telemetry and all(t.feature.offline for t in telemetry)  # W&B ran offline

    assert mlflow_history(run, REWARD) == [(0, 0.25), (1, 0.5)]
    assert mlflow_history(run, "test/env/all/pass_1") == [(0, 0.25), (1, 0.25)]
    found = mlflow_run(run)
    assert found.info.status == "FINISHED" and found.info.run_name == "run"
    assert found.data.params["dataset_builder.seed"] == "0"
    assert found.data.params["loggers"] == json.dumps(list(ALL))
    assert (run / "mlflow.db").is_file()  # the store is the run's own, no server
    assert not (tmp_path / "mlruns").exists()


def test_a_resumed_run_continues_its_tracker_runs_and_logs_no_step_twice(tmp_path):
    run = tmp_path / "run"
    first = open_trackers(ALL, run, {"max_steps": 3})
    for step in range(3):
        first.log(_row(step, float(step)), step=step)
    first.close(failed=True)  # as a run that crashed
    state = json.loads((run / STATE_FILE).read_text())
    assert {name: state[name]["last_step"] for name in ALL} == dict.fromkeys(ALL, 2)

    again = open_trackers(ALL, run, {"max_steps": 4})  # resumed from the checkpoint at 1
    for step in range(1, 4):
        again.log(_row(step, 10.0 + step), step=step)
    again.close()

    # TensorBoard takes the redone steps (as metrics.jsonl does); W&B and MLflow keep theirs
    assert tensorboard_scalars(run, REWARD) == [(0, 0.0), (1, 11.0), (2, 12.0), (3, 13.0)]
    assert [s for s, _ in tensorboard_tensors(run, BASELINE)] == [0, 1, 2, 3]
    assert _history(run, REWARD) == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0)]
    first_run, second_run = wandb_runs(run)
    assert first_run.run_id == second_run.run_id == state["wandb"]["id"]
    assert len(wandb_files(run)) == 2  # `wandb sync` uploads both into the one run
    assert mlflow_history(run, REWARD) == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0)]
    found = mlflow_run(run)
    assert found.info.run_id == state["mlflow"]["run_id"]
    assert found.info.status == "FINISHED"
    assert found.data.params["max_steps"] == "3"  # a param keeps its first value


def test_a_tracker_that_fails_is_reported_once_and_turned_off(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "nosuchscheme://nowhere")
    files = RunFiles(run)
    files.ensure()
    with files.tracking(("tensorboard", "mlflow"), {}) as trackers:
        assert trackers.names == ("tensorboard",)  # MLflow could not start: left out
        files.append_metrics(_row(0, 0.5))

        def disk_full(*_args):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(TensorBoardTracker, "log", disk_full)
        files.append_metrics(_row(1, 0.75))
        files.append_metrics(_row(2, 1.0))
        assert trackers.names == ()
    err = capsys.readouterr().err
    assert err.count("could not start mlflow tracking") == 1
    assert err.count("tensorboard tracking failed at step 1") == 1
    assert "No space left on device" in err and "metrics.jsonl has every step" in err
    assert [m["step"] for m in files.metrics()] == [0, 1, 2]  # the source of truth
    assert tensorboard_scalars(run, REWARD) == [(0, 0.5)]


def test_tracking_closes_the_trackers_and_stops_sending(tmp_path):
    files = RunFiles(tmp_path / "run")
    files.ensure()
    with pytest.raises(RuntimeError), files.tracking(("tensorboard",), {"lr": 0.1}):
        files.append_metrics({"step": 0, REWARD: 0.5})
        raise RuntimeError("the run crashed")
    assert files.trackers is None
    files.append_metrics({"step": 1, REWARD: 0.75})  # after the run: metrics.jsonl only
    assert tensorboard_scalars(tmp_path / "run", REWARD) == [(0, 0.5)]
    with files.tracking((), {}) as nothing:
        assert nothing is None and files.trackers is None


def test_a_group_is_one_wandb_group_and_one_mlflow_experiment_in_its_root(tmp_path):
    root = tmp_path / "sweep"
    with tracking_group("sweep", root):
        for name in ("t0p7", "t1p0"):
            trackers = open_trackers(("wandb", "mlflow"), root / name, {})
            trackers.log({"step": 0, REWARD: 0.5}, step=0)
            trackers.close()
    for name in ("t0p7", "t1p0"):
        (found,) = wandb_runs(root / name)
        assert (found.run_group, found.display_name) == ("sweep", name)
        assert mlflow_run(root / name).data.tags["mint_envkit.group"] == "sweep"
    assert (root / "mlflow.db").is_file() and not (root / "t0p7" / "mlflow.db").exists()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{(root / 'mlflow.db').resolve().as_posix()}")
    experiment = client.get_experiment_by_name("sweep")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["t0p7", "t1p0"]


def test_the_users_tracker_settings_win(tmp_path, monkeypatch):
    store = tmp_path / "elsewhere.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store.as_posix()}")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "mine")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    run = tmp_path / "run"
    trackers = open_trackers(("wandb", "mlflow"), run, {}, group=TrackingGroup("g", str(tmp_path)))
    trackers.log({"step": 0, REWARD: 0.5}, step=0)
    trackers.close()
    assert store.is_file() and not (run / "mlflow.db").exists()
    assert mlflow_history(run, REWARD) == [(0, 0.5)]
    assert not (run / "wandb").exists()  # WANDB_MODE decided: W&B wrote nothing here


def test_a_fresh_open_starts_new_runs_and_tensorboard_drops_the_old_one(tmp_path):
    run = tmp_path / "eval"
    for reward in (0.25, 0.75):
        trackers = open_trackers(("tensorboard",), run, {}, fresh=True)
        trackers.log({"step": 0, REWARD: reward}, step=0)
        trackers.close()
    assert tensorboard_scalars(run, REWARD) == [(0, 0.75)]
    assert len(tensorboard_tensors(run, "config")) == 1


def test_a_run_reopened_within_the_second_is_read_after_the_old_one(tmp_path, monkeypatch):
    """Event files of one second sort by their counter as text: file 10 before file 9.
    Readers would then see the reopened run's purge first and keep the old value."""
    from tensorboard.summary.writer import event_file_writer

    monkeypatch.setattr(event_file_writer, "_global_uid", event_file_writer.AtomicCounter(9))
    run = tmp_path / "eval"
    for reward in (0.25, 0.75):
        trackers = open_trackers(("tensorboard",), run, {}, fresh=True)
        trackers.log({"step": 0, REWARD: reward}, step=0)
        trackers.close()
    files = sorted(p.name for p in (run / "tensorboard").iterdir())
    assert [name.rsplit(".", 1)[1] for name in files] == ["9", "10"]  # in the order written
    assert tensorboard_scalars(run, REWARD) == [(0, 0.75)]


def test_mlflow_is_quiet_on_the_terminal(tmp_path, monkeypatch, capfd):
    """MLflow's own INFO lines ("Creating initial MLflow database tables...") carry no
    prefix: only the kit's line says where the tracking goes."""
    offline_tracker_env(monkeypatch, tmp_path)
    trackers = open_trackers(("mlflow",), tmp_path / "run", {"learning_rate": 1e-4})
    trackers.log({"step": 0, "env/all/reward/total": 0.5}, step=0)
    trackers.close()
    err = capfd.readouterr().err
    assert err.strip(), "the kit says where the tracking goes"
    assert all(line.startswith("mint_envkit: ") for line in err.splitlines()), err
