"""The three experiment trackers, one small class each: TensorBoard, W&B and MLflow.

Each class opens its tracker run for one run directory (a :class:`TrackerPlace`),
takes the run's config (the hyperparameters) once, then one step's figures at a
time (:meth:`log`: numbers as scalars, text where the tracker has text) and is
closed. Each one imports its package when it opens, never before, so importing
mint_envkit does not load a tracker. What a tracker must remember to continue its
run after a resume (the W&B run id, the MLflow run id and store) it keeps in its
``state`` dict, which :mod:`mint_envkit.runs.trackers` saves in the run
directory. Use them through :func:`~mint_envkit.runs.trackers.open_trackers`.

Example::

    # not run: writes TensorBoard event files (needs the tensorboard extra)
    place = TrackerPlace(log_path=Path("runs/demo"), name="demo")
    tracker = TensorBoardTracker(place, {"learning_rate": 1e-4}, state={})
    tracker.log({"env/all/reward/total": 0.5}, {"env/answers/baseline_name": "constant '5'"}, 0)
    tracker.close(failed=False)
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

PROJECT = "mint-envkit"
"""The W&B project and MLflow experiment of a run outside a group (``WANDB_PROJECT`` and
``MLFLOW_EXPERIMENT_NAME`` override it).

Example::

    os.environ.get("WANDB_PROJECT") or PROJECT   # 'mint-envkit' when unset
"""


@attrs.frozen
class TrackerPlace:
    """Where one tracker run goes: the run directory, the run's name and its group.

    Attributes:
        log_path: the run directory (TensorBoard's ``tensorboard/`` and W&B's
            ``wandb/`` go in it; MLflow's ``mlflow.db`` too, outside a group).
        name: the run's name in the trackers (W&B and MLflow run name).
        group: the group's name (a sweep's: W&B group, MLflow experiment), or None.
        store_root: where a local MLflow store goes (the group's root, else ``log_path``).

    Example::

        place = TrackerPlace(log_path=Path("runs/sweep/t0p7"), name="t0p7", group="sweep",
                             store_root=Path("runs/sweep"))
        place.mlflow_uri()   # 'sqlite:////.../runs/sweep/mlflow.db' unless MLFLOW_TRACKING_URI
    """

    log_path: Path
    name: str
    group: str | None = None
    store_root: Path | None = None

    def mlflow_uri(self) -> str:
        """``MLFLOW_TRACKING_URI`` when set, else a SQLite store in ``store_root`` (or
        ``log_path``): ``sqlite:////abs/path/mlflow.db``."""
        chosen = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
        if chosen:
            return chosen
        root = (self.store_root or self.log_path).resolve()
        return f"sqlite:///{(root / 'mlflow.db').as_posix()}"


def flat_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, bool | int | float | str]:
    """The config as one level of ``a.b`` keys with bool, number or text values.

    Nested dicts become dotted keys; lists and other values become their JSON text.

    Example::

        flat_config({"lr": 0.1, "builder": {"seed": 0}, "loggers": ["wandb"]})
        # {'lr': 0.1, 'builder.seed': 0, 'loggers': '["wandb"]'}
    """
    out: dict[str, bool | int | float | str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_config(value, f"{name}."))
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = json.dumps(value, default=repr)
    return out


class TensorBoardTracker:
    """TensorBoard event files in ``log_path/tensorboard`` (no TensorFlow needed).

    Scalars are ``simple_value`` summaries, text values the text plugin's, the
    config the hparams plugin's and a ``config`` text (JSON). A new run starts with a
    session start (``SessionLog.START``); :meth:`purge` writes another one, TensorBoard's
    restart marker (what ``purge_step`` writes), so TensorBoard's readers
    (``EventAccumulator``, also the plugin one) drop what was logged at that step and
    after, and a step logged again after a resume replaces the earlier one.

    Example::

        # not run: writes event files (needs the tensorboard extra)
        tracker = TensorBoardTracker(TrackerPlace(Path("runs/demo"), "demo"), {}, state={})
    """

    name = "tensorboard"
    purges = True

    def __init__(self, place: TrackerPlace, config: Mapping[str, Any], state: dict) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._event, self._summary = event_pb2, summary_pb2
        self.directory = place.log_path / "tensorboard"
        self.where = str(self.directory)
        self._config = dict(config)
        _after_existing_event_files(self.directory)
        self._writer = EventFileWriter(str(self.directory))
        if not state.get("config_logged"):  # a new TensorBoard run
            # The first session start: readers take a later one as a restart (purge).
            self._session_start(0)
            self._write_config()
            state["config_logged"] = True

    def _write(self, summary: Any, step: int) -> None:
        self._writer.add_event(self._event.Event(summary=summary, step=step, wall_time=time.time()))

    def _text(self, tag: str, text: str) -> Any:
        from tensorboard.compat.proto import tensor_pb2, types_pb2
        from tensorboard.plugins.text import metadata

        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[text.encode()])
        return self._summary.Summary.Value(
            tag=tag, metadata=metadata.create_summary_metadata(None, None), tensor=tensor
        )

    def _write_config(self) -> None:
        from tensorboard.plugins.hparams import summary_v2

        flat = flat_config(self._config)
        self._write(summary_v2.hparams_pb(flat), 0)
        text = "```\n" + json.dumps(self._config, indent=2, default=repr) + "\n```"
        self._write(self._summary.Summary(value=[self._text("config", text)]), 0)
        self._writer.flush()

    def _session_start(self, step: int) -> None:
        log = self._event.SessionLog(status=self._event.SessionLog.START)
        self._writer.add_event(self._event.Event(step=step, wall_time=time.time(), session_log=log))

    def purge(self, step: int) -> None:
        """Forget what this run logged at ``step`` and later (TensorBoard's ``purge_step``)."""
        self._session_start(step)
        if step == 0:
            self._write_config()

    def log(self, scalars: Mapping[str, float], texts: Mapping[str, str], step: int) -> None:
        """One step: the scalars and the texts, written and flushed."""
        values = [self._summary.Summary.Value(tag=k, simple_value=v) for k, v in scalars.items()]
        values += [self._text(k, v) for k, v in texts.items()]
        self._write(self._summary.Summary(value=values), step)
        self._writer.flush()

    def close(self, *, failed: bool) -> None:
        """Flush and close the event file."""
        self._writer.close()


def _after_existing_event_files(directory: Path) -> None:
    """Wait until a new event file's name sorts after every one already in ``directory``.

    Readers load a directory's event files in name order, and a name is
    ``events.out.tfevents.<whole second>.<host>.<pid>.<counter>``: two files of the same
    second sort by pid and counter as text, so a run reopened within the second it was
    last written (a resume, an evaluation written again) could be read before the old
    file, and its purge marker would then come first and drop nothing. A file of an
    earlier second always sorts first, so waiting for the next second is enough (at most
    one second, only when a file of this second exists).
    """
    newest = -1
    for path in directory.glob("events.out.tfevents.*"):
        second = path.name.split(".")[3]
        if second.isdigit():
            newest = max(newest, int(second))
    while int(time.time()) <= newest:
        time.sleep(max(0.01, newest + 1 - time.time()))


class WandbTracker:
    """A W&B run: offline in ``log_path/wandb`` unless your W&B settings say otherwise.

    Without ``WANDB_MODE`` and ``WANDB_API_KEY`` the run is offline (``wandb sync``
    uploads it later); ``WANDB_DIR`` moves its files from ``log_path``;
    ``WANDB_PROJECT`` names the project (default ``mint-envkit``). The run id is kept
    in ``state``, so a resumed run continues it (``resume="allow"``). Texts are logged
    as W&B strings beside the numbers.

    Example::

        # not run: starts a W&B run (needs the wandb extra)
        tracker = WandbTracker(TrackerPlace(Path("runs/demo"), "demo"), {"lr": 0.1}, state={})
    """

    name = "wandb"
    purges = False

    def __init__(self, place: TrackerPlace, config: Mapping[str, Any], state: dict) -> None:
        import wandb

        place.log_path.mkdir(parents=True, exist_ok=True)
        options: dict[str, Any] = {}
        if not (os.environ.get("WANDB_MODE") or os.environ.get("WANDB_API_KEY")):
            options["mode"] = "offline"
        if not os.environ.get("WANDB_DIR"):
            options["dir"] = str(place.log_path)
        settings = wandb.Settings(
            console="off", silent=True, disable_git=True, save_code=False, x_disable_stats=True
        )
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT") or PROJECT,
            name=place.name,
            group=place.group,
            config=dict(config),
            id=state.get("id"),
            resume="allow",
            reinit="create_new",
            settings=settings,
            **options,
        )
        state["id"] = self.run.id
        run_dir = str(Path(self.run.dir).parent)  # run.dir is the run's files/ folder
        self.where = f"offline in {run_dir}" if self.run.offline else run_dir

    def log(self, scalars: Mapping[str, float], texts: Mapping[str, str], step: int) -> None:
        """One step, at W&B step ``step``."""
        self.run.log({**scalars, **texts}, step=step)

    def close(self, *, failed: bool) -> None:
        """Finish the run (exit code 1 when the training failed)."""
        self.run.finish(exit_code=1 if failed else 0)


_MLFLOW_BAD = re.compile(r"[^/\w.\- :]")


def mlflow_key(key: str) -> str:
    """``key`` with the characters MLflow refuses in a name replaced by ``_`` (250 at most).

    Example::

        mlflow_key("test/env/all/pass@1")   # 'test/env/all/pass_1'
    """
    return _MLFLOW_BAD.sub("_", key)[:250]


class MlflowTracker:
    """An MLflow run in a local SQLite store (``mlflow.db``) unless ``MLFLOW_TRACKING_URI``.

    The experiment is ``MLFLOW_EXPERIMENT_NAME``, else the group's name (a sweep's),
    else ``mint-envkit``; the run is named after the run directory. The config goes in
    as params (dotted keys, text values of at most 6000 characters); names MLflow
    refuses are written with ``_`` (:func:`mlflow_key`). MLflow has no text metrics:
    texts are not logged. The run id and the store are kept in ``state``, so a resumed
    run continues its MLflow run.

    Example::

        # not run: writes an MLflow store (needs the mlflow extra)
        tracker = MlflowTracker(TrackerPlace(Path("runs/demo"), "demo"), {"lr": 0.1}, state={})
    """

    name = "mlflow"
    purges = False

    def __init__(self, place: TrackerPlace, config: Mapping[str, Any], state: dict) -> None:
        from mlflow.tracking import MlflowClient

        # quiet on the terminal: MLflow's and its migrations' INFO lines ("Creating initial
        # MLflow database tables...") carry no prefix and would read as the kit's
        for logger in ("mlflow", "alembic"):
            logging.getLogger(logger).setLevel(logging.WARNING)
        uri = place.mlflow_uri()
        local = uri.startswith("sqlite:///") and not os.environ.get("MLFLOW_TRACKING_URI")
        if local:
            (place.store_root or place.log_path).mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(uri)
        self.where = uri
        run = None
        if state.get("run_id") and state.get("tracking_uri") == uri:
            run = self.client.get_run(state["run_id"])
            self.client.update_run(run.info.run_id, status="RUNNING")
        else:
            state.clear()
            run = self._create(place, uri, local)
            state.update(run_id=run.info.run_id, tracking_uri=uri)
        self.run_id = run.info.run_id
        self._log_params(flat_config(config), set(run.data.params))

    def _create(self, place: TrackerPlace, uri: str, local: bool) -> Any:
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or place.group or PROJECT
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            artifacts = None
            if local:  # beside the store, not in the working directory
                artifacts = (
                    (place.store_root or place.log_path).resolve() / "mlartifacts"
                ).as_uri()
            experiment_id = self.client.create_experiment(name, artifact_location=artifacts)
        tags = {"mint_envkit.log_path": str(place.log_path.resolve())}
        if place.group:
            tags["mint_envkit.group"] = place.group
        return self.client.create_run(experiment_id, run_name=place.name, tags=tags)

    def _log_params(self, flat: Mapping[str, Any], present: set[str]) -> None:
        from mlflow.entities import Param

        params = {}
        for key, value in flat.items():
            name = mlflow_key(key)
            if name not in present and name not in params:
                params[name] = Param(name, str(value)[:6000])
        chosen = list(params.values())
        for start in range(0, len(chosen), 100):
            self.client.log_batch(self.run_id, params=chosen[start : start + 100])

    def log(self, scalars: Mapping[str, float], texts: Mapping[str, str], step: int) -> None:
        """One step's numbers, as metrics at ``step`` (texts are not logged)."""
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        metrics = [Metric(mlflow_key(k), float(v), stamp, step) for k, v in scalars.items()]
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def close(self, *, failed: bool) -> None:
        """Mark the run finished (or failed)."""
        self.client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")


KINDS = {"tensorboard": TensorBoardTracker, "wandb": WandbTracker, "mlflow": MlflowTracker}
"""Each tracker's name -> its class.

Example::

    KINDS["tensorboard"].name   # 'tensorboard'
"""
