"""Running a sweep: every config of a grid, in order or ``parallel`` at once, resumable.

Example::

    # `runner`, `config` and `Sweep` as in the mint_envkit.sweep example

    async def flaky(config):  # fails at temperature 1.0
        if config.temperature == 1.0:
            raise RuntimeError("reward function raised")
        await runner(config)

    sweep = Sweep(base=config, grid={"temperature": [0.7, 1.0]}, root="runs/sweep",
                  runner=runner, quiet=True)
    results = await sweep.run()
    assert [r.status for r in results] == ["ok", "ok"]

    # the same grid with the failing runner (each example runs in a fresh folder):
    failing = Sweep(base=config, grid={"temperature": [0.7, 1.0]}, root="runs/failing",
                    runner=flaky, quiet=True)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import os
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rl.config import Config
from mint_envkit.rollouts.backend import (
    resolve_connection,
    shared_local_backend,
)
from mint_envkit.runs.files import append_jsonl, check_writable, write_text_atomic
from mint_envkit.runs.names import jsonable
from mint_envkit.runs.store import METRICS, RESULTS, latest_results, utc_now
from mint_envkit.runs.trackers import tracking_group
from mint_envkit.sweep._env import grid_from_env, log_root_from_env
from mint_envkit.sweep._grid import GridPoint, apply_fields, expand_grid, normalize_grid
from mint_envkit.sweep._manifest import check_or_write_manifest, config_sha, exclusive
from mint_envkit.sweep._summary import SweepSummary, build_summary

Runner = Callable[[Config], Awaitable[Any] | Any]
"""What runs one config: ``async def runner(config) -> Any`` (a plain function works too).

It must write ``metrics.jsonl`` into ``config.log_path`` and raise on failure.
The default is :func:`mint_envkit.rl.train.main`.

Example::

    async def runner(config: Config) -> None:
        ...  # train, writing config.log_path/metrics.jsonl, e.g.:
        with open(Path(config.log_path) / "metrics.jsonl", "w") as fh:
            print(json.dumps({"step": 0, "env/all/reward/total": -0.1}), file=fh)
"""

ERROR_FILE = "sweep_error.txt"
"""The file, in a config's log_path, holding the traceback of its latest failed attempt.

Example::

    result = (await failing.run())[1]  # the module example's failing sweep
    print((Path(result.log_path) / ERROR_FILE).read_text())  # the traceback
    assert "RuntimeError: reward function raised" in (Path(result.log_path) / ERROR_FILE).read_text()
"""


@attrs.frozen
class SweepResult:
    """The outcome of one config of a sweep.

    Attributes:
        name: the config name (its subdirectory of the sweep root).
        status: ``"ok"`` or ``"failed"``.
        params: its grid values.
        log_path: its run directory.
        seconds: how long its (latest) attempt took.
        error: ``"ErrorType: message"`` when it failed, else None.
        finished_at: when the attempt finished (ISO 8601, UTC).
        skipped: True when an earlier run of the sweep had finished it, so
            it was not run again.
        value: what the runner returned (None when skipped).
        config: the config that was (or would be) run.

    Example::

        results = await failing.run()  # the module example's failing sweep
        assert [r.name for r in results if not r.ok] == ["t1p0"]
        assert results[1].error == "RuntimeError: reward function raised"
    """

    name: str
    status: Literal["ok", "failed"]
    params: Mapping[str, Any]
    log_path: str
    seconds: float
    error: str | None = None
    finished_at: str | None = None
    skipped: bool = False
    value: Any = attrs.field(default=None, repr=False)
    config: Config | None = attrs.field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the config finished without error.

        Example::

            results = await failing.run()  # the module example's failing sweep
            assert [r.ok for r in results] == [True, False]
        """
        return self.status == "ok"


def _root(value: Any) -> str:
    try:
        text = os.fspath(value)
    except TypeError:
        raise ConfigError(f"Sweep.root must be a path, got {value!r}") from None
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"Sweep.root must be a non-empty path, got {value!r}")
    return text


def _check_parallel(_instance: Any, _attribute: Any, value: Any) -> None:
    check_integer(value, "Sweep.parallel", why="1 runs configs one after another")


def _check_runner(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not callable(value):
        raise ConfigError(
            f"Sweep.runner must be a callable taking a Config (or None for "
            f"mint_envkit.rl.train.main), got {value!r}"
        )


def _check_base(_instance: Any, _attribute: Any, value: Any) -> None:
    if not isinstance(value, Config):
        raise ConfigError(f"Sweep.base must be a mint_envkit.rl.Config, got {type(value).__name__}")


class _Pace:
    """How far a sweep is: ``(k/n done, ETA ...)`` after each config, from its pace so far."""

    def __init__(self, total: int) -> None:
        self.start, self.total, self.done = time.monotonic(), total, 0

    def tick(self) -> str:
        self.done += 1
        left = self.total - self.done
        if left <= 0:
            return f" ({self.done}/{self.total} done)"
        eta = (time.monotonic() - self.start) / self.done * left
        return f" ({self.done}/{self.total} done, ETA {eta:.0f}s)"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else text


@attrs.frozen(kw_only=True, eq=False)
class Sweep:
    """A grid of RL configs run under one root directory, resumable.

    Building a ``Sweep`` expands and validates every config (an invalid
    combination raises :class:`~mint_envkit.errors.ConfigError` naming the
    config and the field), before anything runs. Each config's ``log_path``
    is ``ROOT/<name>`` with a stable name from its grid values
    (``kl0p02-t0p7-g4``). A config with ``kl_penalty_coef > 0`` gets
    ``KLReferenceConfig(base_model=config.model_name)`` when ``base`` has no
    ``kl_reference_config``.

    Attributes:
        base: the config every grid point starts from.
        grid: field name -> values to try; :class:`Config` fields or dataset
            builder fields (``group_size``, ``batch_size``, ...). Stored in
            canonical form (name order, lists).
        root: the sweep directory (``sweep.json``, ``results.jsonl``, one
            subdirectory per config, ``summary.csv``, ``summary.png``).
        parallel: how many configs run at once (1: one after another).
        runner: what runs one config; None means
            :func:`mint_envkit.rl.train.main`, and then the configs that train
            on the embedded local backend (without a ``base_url``) share one
            server for the whole sweep (``shared_local_backend``).
        quiet: no progress lines.
        points: the expanded grid, with log paths under ``root``.

    Example::

        sweep = Sweep(base=config, grid={"temperature": [0.7, 1.0]}, root="runs/temps",
                      runner=runner)  # runner=None trains each config (rl.train.main)
        assert [p.name for p in sweep.points] == ["t0p7", "t1p0"]
        results = await sweep.run()
        print(sweep.table())
        assert [r.ok for r in results] == [True, True]
        assert [r.skipped for r in await sweep.run()] == [True, True]  # resumed: all done
    """

    base: Config = attrs.field(validator=_check_base)
    grid: Mapping[str, Sequence[Any]] = attrs.field(factory=dict)
    root: str = attrs.field(converter=_root)
    parallel: int = attrs.field(default=1, validator=_check_parallel)
    runner: Runner | None = attrs.field(default=None, validator=_check_runner)
    quiet: bool = False
    points: tuple[GridPoint, ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        grid = normalize_grid(self.base, self.grid)
        points = tuple(
            attrs.evolve(
                point,
                config=attrs.evolve(point.config, log_path=os.path.join(self.root, point.name)),
            )
            for point in expand_grid(self.base, grid)
        )
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "points", points)

    def clear(self) -> str | None:
        """Delete this sweep's root and the checkpoints its runs saved (named in their
        ``checkpoints.jsonl``, deleted from the store of ``base``'s backend); what was
        deleted, in words, or None when the root does not exist. A root that holds files
        but no ``sweep.json`` is kept (a :class:`~mint_envkit.errors.ConfigError`).

        Example::

            # not run: deletes files and checkpoints
            print(sweep.clear())   # deleted runs/temps and the 4 checkpoint(s) its runs saved
        """
        from mint_envkit.sweep._clear import clear_root

        return clear_root(self.root, self.base.backend, self.base.base_url)

    @classmethod
    def from_env(
        cls,
        base: Config,
        *,
        root: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
        parallel: int = 1,
        runner: Runner | None = None,
        quiet: bool = False,
    ) -> Sweep:
        """A sweep whose grid, overrides and root come from the ``MINT_RL_*`` variables.

        The grid and overrides are :func:`~mint_envkit.sweep.grid_from_env`'s
        (overrides such as ``max_steps`` are applied to ``base``); the root is
        ``MINT_LOG_ROOT`` when set, else ``root``.

        Example::

            sweep = Sweep.from_env(config, root="runs/arithmetic-sweep", environ={})
            assert len(sweep.points) == 8  # with no MINT_RL_* variable set
            sweep = Sweep.from_env(config, environ={"MINT_RL_TEMPS": "0.7", "MINT_LOG_ROOT": "runs/t"})
            assert (len(sweep.points), sweep.root) == (4, "runs/t")
        """
        grid, overrides = grid_from_env(environ, defaults)
        sweep_root = log_root_from_env(environ, default=root)
        base = apply_fields(base, overrides, label="with the MINT_RL_* overrides")
        return cls(
            base=base, grid=grid, root=sweep_root, parallel=parallel, runner=runner, quiet=quiet
        )

    # ------------------------------------------------------------ describing

    @property
    def names(self) -> list[str]:
        """The config names, in grid order.

        Example::

            sweep = Sweep.from_env(config, root="runs/arithmetic-sweep", environ={})
            assert sweep.names[:2] == ["kl0p0-t0p7-g2", "kl0p0-t0p7-g4"]
        """
        return [point.name for point in self.points]

    def _entries(self) -> list[dict[str, Any]]:
        entries = []
        for point in self.points:
            config = point.config
            builder = config.dataset_builder
            entries.append(
                {
                    "name": point.name,
                    "params": jsonable(dict(point.params)),
                    "settings": {
                        "kl_penalty_coef": config.kl_penalty_coef,
                        "temperature": config.temperature,
                        "group_size": builder.group_size,
                        "batch_size": getattr(builder, "batch_size", None),
                        "max_steps": config.max_steps,
                    },
                    "config_sha": config_sha(config),
                }
            )
        return entries

    def summary(self) -> SweepSummary:
        """The summary of this sweep, from the files under ``root`` (see :meth:`table`).

        Example::

            assert sweep.summary().rows[0].status == "missing"  # the module example's, not run yet
            await sweep.run()
            assert sweep.summary().rows[0].mean_reward == -0.1
        """
        return build_summary(self.root, self._entries(), extra_columns=list(self.grid))

    def table(self) -> str:
        """The console table: one row per config, read from its ``metrics.jsonl``.

        Columns ``KL  Temperature  Group size  [other grid fields]  Steps
        Mean reward  Correct  Status  Log path``.

        Example::

            await sweep.run()  # the module example's sweep
            print(sweep.table())
            # KL    Temperature  Group size  Steps  Mean reward  Correct  Eval before  Eval after  ...
            # 0.00  0.7          2           2      -0.100       0.00     -0.250       0.100       ...
            # 0.00  1.0          2           2      -0.100       0.00     -0.250       0.100       ...
            assert sweep.table().splitlines()[1].startswith("0.00  0.7          2           2      -0.100")
        """
        return self.summary().table()

    # --------------------------------------------------------------- running

    def _say(self, message: str) -> None:
        if not self.quiet:
            print(f"[sweep] {message}", flush=True)

    def _resolve_runner(self) -> Runner:
        if self.runner is not None:
            return self.runner
        from mint_envkit.rl.train import main  # lazily: the training stack is heavy

        return main

    def _shared_backend(self, todo: Sequence[GridPoint]) -> contextlib.AbstractAsyncContextManager:
        """One embedded backend for every local run of the default runner, or nothing.

        With the default runner, configs that train on the embedded backend
        (backend ``local``, or ``auto`` with no MinT key) and name no
        ``base_url`` share one server, so the model loads once, not once per
        config. Custom runners are left alone.
        """
        if self.runner is not None:
            return contextlib.nullcontext()
        local = []
        for point in todo:
            connection = resolve_connection(point.config.backend, point.config.base_url)
            if connection.backend == "local" and connection.base_url is None:
                local.append(point.config)
        servers = {(c.local_latency_ms, c.local_batch_invariant, c.local_threads) for c in local}
        if not local or len(servers) != 1:
            return contextlib.nullcontext()
        latency, batch_invariant, threads = servers.pop()
        models = sorted({m for c in local for m in c.backend_settings.models})
        return shared_local_backend(
            models, latency_ms=latency, batch_invariant=batch_invariant, threads=threads
        )

    async def _run_one(
        self, point: GridPoint, runner: Runner, position: str, pace: _Pace
    ) -> SweepResult:
        log_path = Path(point.config.log_path)
        check_writable(log_path, what=f"the run directory of {point.name}")
        self._say(f"{position} start {point.name}")
        started = time.monotonic()
        value: Any = None
        error: str | None = None
        try:
            # Config.loggers: each config is one tracker run of the sweep's group
            with tracking_group(Path(self.root).resolve().name, self.root):
                value = runner(point.config)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(MintEnvkitError):  # a full disk: the error is in results
                write_text_atomic(log_path / ERROR_FILE, traceback.format_exc())
        else:
            if not (log_path / METRICS).exists():
                error = f"MissingMetrics: the runner returned but wrote no {METRICS} in {log_path}"
            else:
                (log_path / ERROR_FILE).unlink(missing_ok=True)
        seconds = round(time.monotonic() - started, 3)
        status: Literal["ok", "failed"] = "ok" if error is None else "failed"
        finished_at = utc_now()
        params = jsonable(dict(point.params))
        append_jsonl(
            Path(self.root) / RESULTS,
            {
                "name": point.name,
                "status": status,
                "error": error,
                "log_path": os.fspath(log_path),
                "seconds": seconds,
                "params": params,
                "sampling_seed": point.config.sampling_seed,
                "data_seed": getattr(point.config.dataset_builder, "seed", None),
                "finished_at": finished_at,
            },
        )
        tail = f": {_first_line(error)}" if error else ""
        self._say(f"{position} {status} {point.name} {seconds:.1f}s{pace.tick()}{tail}")
        return SweepResult(
            name=point.name,
            status=status,
            params=point.params,
            log_path=os.fspath(log_path),
            seconds=seconds,
            error=error,
            finished_at=finished_at,
            value=value,
            config=point.config,
        )

    async def run(self) -> list[SweepResult]:
        """Run every config not finished yet; return one result per config, in grid order.

        Writes ``sweep.json`` on the first run; a root whose ``sweep.json``
        holds a different grid or base config raises
        :class:`~mint_envkit.errors.ConfigError`. Configs whose latest
        ``results.jsonl`` record is ok (and whose ``metrics.jsonl`` exists)
        are skipped; failed and missing ones run. Each finished attempt is
        appended to ``results.jsonl`` at once. A config that raises is recorded
        as failed and the sweep goes on; ``KeyboardInterrupt``, ``SystemExit``
        and cancellation propagate (finished results are kept; running the
        sweep again resumes). Ends by writing ``summary.csv`` and
        ``summary.png``. A sweep root that cannot be written or is (nearly)
        full is a :class:`~mint_envkit.errors.ConfigError` before any config
        runs; a write that fails later (disk full) stops the sweep with a
        :class:`~mint_envkit.errors.MintEnvkitError` naming the directory.

        Example::

            results = await failing.run()  # the module example's failing sweep
            assert (sum(r.ok for r in results), len(results)) == (1, 2)
            results = await failing.run()  # runs the failed config again (it fails again)
            assert [r.skipped for r in results] == [True, False]
        """
        root = Path(self.root)
        check_writable(root, what="the sweep root (MINT_LOG_ROOT)")
        with exclusive(root):
            check_or_write_manifest(root, self.grid, self.base, self._entries())
            latest = latest_results(root)
            results: dict[str, SweepResult] = {}
            todo: list[GridPoint] = []
            for point in self.points:
                record = latest.get(point.name)
                metrics = Path(point.config.log_path) / METRICS
                if record is not None and record.get("status") == "ok" and metrics.exists():
                    results[point.name] = SweepResult(
                        name=point.name,
                        status="ok",
                        params=point.params,
                        log_path=point.config.log_path,
                        seconds=float(record.get("seconds") or 0.0),
                        finished_at=record.get("finished_at"),
                        skipped=True,
                        config=point.config,
                    )
                else:
                    todo.append(point)
            self._say(
                f"{len(self.points)} configs in {root}: {len(results)} finished earlier, "
                f"{len(todo)} to run (parallel={self.parallel})"
            )
            if todo:
                runner = self._resolve_runner()
                queue = collections.deque(todo)
                started = 0
                pace = _Pace(len(todo))

                async def worker() -> None:
                    nonlocal started
                    while queue:
                        point = queue.popleft()
                        started += 1
                        position = f"[{started}/{len(todo)}]"
                        results[point.name] = await self._run_one(point, runner, position, pace)

                try:
                    async with self._shared_backend(todo), asyncio.TaskGroup() as group:
                        for _ in range(min(self.parallel, len(todo))):
                            group.create_task(worker())
                except ExceptionGroup as errors:
                    # Runner errors are recorded in _run_one; what gets here is the
                    # sweep's own failure (e.g. a full disk): raise it as itself.
                    if len(errors.exceptions) == 1:
                        raise errors.exceptions[0] from None
                    raise
            for line in self.summary().write_files():
                self._say(line)
        return [results[point.name] for point in self.points]
