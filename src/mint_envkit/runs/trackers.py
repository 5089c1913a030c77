"""Experiment tracking: every metrics row of a run, also in TensorBoard, W&B or MLflow.

``Config.loggers`` (and ``evaluate(loggers=...)``) names the trackers, any of
:data:`TRACKERS`; each is the extra of the same name (``pip install
'mint-envkit[wandb]'``), checked when the names are given (:func:`tracker_names`: a
:class:`~mint_envkit.errors.MissingExtraError`), not at step 5. :func:`open_trackers`
opens them for one run directory and returns a :class:`Trackers`; the loop does it
through :meth:`RunFiles.tracking <mint_envkit.runs.files.RunFiles.tracking>`, so
every row appended to ``metrics.jsonl`` also goes to each tracker: numbers as scalars
at the row's ``step``, text values (``.../answers/baseline_name``) as text where the
tracker has text (TensorBoard, W&B; MLflow has none: skipped), anything else (None,
lists) skipped. The config goes in once, as the hyperparameters.

What is promised:

- **Offline by default, under the run directory**: TensorBoard event files in
  ``log_path/tensorboard``; W&B offline (``wandb sync`` uploads it later) in
  ``log_path/wandb`` unless ``WANDB_MODE`` or ``WANDB_API_KEY`` is set (then W&B's own
  settings decide), ``WANDB_DIR`` moves it; MLflow in a SQLite store
  ``log_path/mlflow.db`` unless ``MLFLOW_TRACKING_URI`` is set. No account and no
  network needed (the class docstrings in :mod:`mint_envkit.runs.tracker_kinds`).
- **A resumed run continues its tracker runs**: ``log_path/trackers.json`` keeps the
  W&B run id, the MLflow run id and store, and each tracker's last logged step. A
  step logged before is never logged twice: W&B and MLflow keep what they have of it;
  TensorBoard purges from it (its ``purge_step`` marker) and takes the new row, as
  ``metrics.jsonl`` does.
- **A failing tracker never stops the run**: a tracker that cannot start, or raises
  while logging (disk full, a crash inside it), is reported once on stderr and turned
  off; ``metrics.jsonl`` stays the source of truth.
- **Groups**: inside :func:`tracking_group` (a sweep sets one per sweep) every run is
  one tracker run of the group: the W&B group, the MLflow experiment (in one store in
  the group's root), TensorBoard subfolders of the root.

Example::

    trackers = open_trackers(("tensorboard",), "runs/demo", {"learning_rate": 1e-4})
    trackers.log({"step": 0, "env/all/reward/total": 0.5}, step=0)
    trackers.close()   # runs/demo/tensorboard holds the event file
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError, MintEnvkitError, MissingExtraError
from mint_envkit.progress import say
from mint_envkit.runs.files import write_json_atomic
from mint_envkit.runs.tracker_kinds import KINDS, TrackerPlace

TRACKERS = tuple(KINDS)
"""The trackers ``Config.loggers`` may name: ``("tensorboard", "wandb", "mlflow")``.

Example::

    "wandb" in TRACKERS   # True
"""

EXTRA_MODULES = {
    "tensorboard": ("tensorboard",),
    "wandb": ("wandb",),
    "mlflow": ("mlflow", "sqlalchemy", "alembic"),
}
"""What each tracker's extra installs (the modules checked when a tracker is named).

Example::

    EXTRA_MODULES["mlflow"]   # ('mlflow', 'sqlalchemy', 'alembic'): the SQLite store's too
"""

STATE_FILE = "trackers.json"
"""The file in a run directory that lets a resumed run continue its tracker runs.

Example::

    trackers = open_trackers(("tensorboard",), "runs/demo", {})
    trackers.log({"step": 0, "env/all/reward/total": 0.5}, step=0)
    assert json.loads((Path("runs/demo") / STATE_FILE).read_text())["tensorboard"]["last_step"] == 0
"""


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def tracker_names(value: Any, *, field: str = "Config.loggers") -> tuple[str, ...]:
    """The tracker names of ``value`` as a tuple, checked: known, once each, installed.

    Raises:
        ConfigError: ``value`` is not a sequence of names (a bare string too), names
            an unknown tracker or one twice.
        MissingExtraError: a named tracker's extra is not installed; the message
            gives the pip command.

    Example::

        tracker_names(["tensorboard"])   # ('tensorboard',)
        tracker_names(())                # ()
    """
    if isinstance(value, str) or not isinstance(value, Iterable):
        hint = f"; write ({value!r},)" if isinstance(value, str) else ""
        raise ConfigError(
            f"{field} must be a tuple of tracker names ({', '.join(TRACKERS)}), got {value!r}{hint}"
        )
    names = tuple(value)
    for name in names:
        if name not in TRACKERS:
            raise ConfigError(
                f"{field} names {name!r}, which is not a tracker; choose from {', '.join(TRACKERS)}"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"{field} names a tracker twice: {names!r}; name each once")
    for name in names:
        missing = [m for m in EXTRA_MODULES[name] if not _installed(m)]
        if missing:
            raise MissingExtraError(
                f"{field} names {name!r}, but {', '.join(missing)} is not installed; run "
                f"pip install 'mint-envkit[{name}]'"
            )
    return names


@attrs.frozen
class TrackingGroup:
    """A group of tracker runs: its name and the root its runs' directories are under.

    Example::

        TrackingGroup(name="lr-sweep", root="runs/lr-sweep")
    """

    name: str
    root: str


_GROUP: contextvars.ContextVar[TrackingGroup | None] = contextvars.ContextVar(
    "mint_envkit_tracking_group", default=None
)


@contextlib.contextmanager
def tracking_group(name: str, root: str | os.PathLike[str]) -> Iterator[TrackingGroup]:
    """Make the runs opened inside (in this task) one group: a sweep's configs.

    Example::

        with tracking_group("lr-sweep", "runs/lr-sweep"):
            current_group().name   # 'lr-sweep'
    """
    group = TrackingGroup(name=name, root=os.fspath(root))
    token = _GROUP.set(group)
    try:
        yield group
    finally:
        _GROUP.reset(token)


def current_group() -> TrackingGroup | None:
    """The group set by the innermost :func:`tracking_group`, or None.

    Example::

        current_group()   # None outside a sweep
    """
    return _GROUP.get()


def split_row(row: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """A metrics row's scalars (finite numbers, bools as 0/1) and texts; ``step`` and
    everything else (None, lists, dicts) left out.

    Example::

        split_row({"step": 3, "reward": 0.5, "name": "constant '5'", "gone": None})
        # ({'reward': 0.5}, {'name': "constant '5'"})
    """
    scalars: dict[str, float] = {}
    texts: dict[str, str] = {}
    for key, value in row.items():
        if key == "step":
            continue
        if isinstance(value, (bool, int, float)) and math.isfinite(value):
            scalars[key] = float(value)
        elif isinstance(value, str):
            texts[key] = value
    return scalars, texts


class Trackers:
    """The open trackers of one run: :meth:`log` each metrics row, :meth:`close` at the end.

    A tracker that raises is reported once on stderr and turned off; the others go on.

    Example::

        trackers = open_trackers(("tensorboard",), "runs/demo", {})
        trackers.log({"env/all/reward/total": 0.5}, step=0)
        trackers.names   # ('tensorboard',): the ones still on
        trackers.close()
    """

    def __init__(self, opened: list[Any], state: dict[str, dict], state_path: Path) -> None:
        self._open = list(opened)
        self._state = state
        self._state_path = state_path
        self._save_failed = False
        self._save()

    @property
    def names(self) -> tuple[str, ...]:
        """The trackers still on."""
        return tuple(t.name for t in self._open)

    def log(self, row: Mapping[str, Any], step: int) -> None:
        """Send one metrics row to every tracker on, at ``step``.

        A step at or before a tracker's last logged one (a resumed run redoing
        steps) is skipped by W&B and MLflow, and replaces the old one in TensorBoard.
        """
        if not self._open:
            return
        scalars, texts = split_row(row)
        for tracker in list(self._open):
            mine = self._state.setdefault(tracker.name, {})
            last = mine.get("last_step")
            try:
                if isinstance(last, int) and step <= last:
                    if not tracker.purges:
                        continue
                    tracker.purge(step)
                tracker.log(scalars, texts, step)
            except Exception as err:  # a tracker's failure never stops the run
                self._fail(tracker, err, f"at step {step}")
                continue
            mine["last_step"] = step
        self._save()

    def close(self, *, failed: bool = False) -> None:
        """Close every tracker on (``failed``: the run raised; MLflow and W&B record it)."""
        for tracker in self._open:
            try:
                tracker.close(failed=failed)
            except Exception as err:
                say(f"{tracker.name} tracking failed while closing ({type(err).__name__}: {err})")
        self._open = []
        self._save()

    def _fail(self, tracker: Any, err: Exception, when: str) -> None:
        self._open.remove(tracker)
        say(
            f"{tracker.name} tracking failed {when} ({type(err).__name__}: {err}); it is off "
            "for the rest of this run (metrics.jsonl has every step)"
        )
        with contextlib.suppress(Exception):
            tracker.close(failed=True)

    def _save(self) -> None:
        try:
            write_json_atomic(self._state_path, self._state)
        except MintEnvkitError as err:
            if not self._save_failed:
                self._save_failed = True
                say(f"cannot save {STATE_FILE} ({err}); a resumed run may start new tracker runs")


def _read_state(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: dict(v) for k, v in data.items() if isinstance(v, dict)}


def open_trackers(
    loggers: Iterable[str],
    log_path: str | os.PathLike[str],
    config: Mapping[str, Any],
    *,
    name: str | None = None,
    group: TrackingGroup | None = None,
    fresh: bool = False,
) -> Trackers:
    """Open the trackers ``loggers`` names for the run directory ``log_path``.

    Args:
        loggers: tracker names (:data:`TRACKERS`); () opens none.
        log_path: the run directory (created): event files, W&B's offline run, the
            MLflow store outside a group, and ``trackers.json``.
        config: the hyperparameters (JSON-like; ``config.json``'s content).
        name: the run's name in W&B and MLflow (default: the directory's name).
        group: the group (default: :func:`current_group`, a sweep's).
        fresh: start new tracker runs instead of continuing the directory's earlier
            ones (an evaluation written again); TensorBoard purges the old one.

    Raises:
        ConfigError, MissingExtraError: as :func:`tracker_names`. A tracker that
            fails to start is reported on stderr and left out instead.

    Example::

        # not run: starts W&B and MLflow runs (needs their extras)
        trackers = open_trackers(("wandb", "mlflow"), "runs/audit", {"samples": 8},
                                 name="audit")
        trackers.log({"audit/exploits": 0}, step=0)
        trackers.close()
    """
    names = tracker_names(loggers, field="loggers")
    path = Path(log_path)
    path.mkdir(parents=True, exist_ok=True)
    state_path = path / STATE_FILE
    state = _read_state(state_path)
    if fresh:
        state = {"tensorboard": state["tensorboard"]} if "tensorboard" in state else {}
    group = group if group is not None else current_group()
    place = TrackerPlace(
        log_path=path,
        name=name or path.resolve().name,
        group=group.name if group else None,
        store_root=Path(group.root) if group else None,
    )
    hyperparameters = json.loads(json.dumps(dict(config), default=repr))
    opened = []
    for tracker in names:
        try:
            opened.append(KINDS[tracker](place, hyperparameters, state.setdefault(tracker, {})))
        except Exception as err:  # a tracker that cannot start never stops the run
            say(
                f"could not start {tracker} tracking ({type(err).__name__}: {err}); the run "
                "goes on without it (metrics.jsonl has every step)"
            )
    if opened:
        say("tracking to " + ", ".join(f"{t.name} ({t.where})" for t in opened))
    return Trackers(opened, state, state_path)
