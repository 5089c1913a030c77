"""Running sweeps: layout, results.jsonl, failure isolation, parallelism, resume."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import attrs
import pytest

from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rl.config import Config, KLReferenceConfig
from mint_envkit.rollouts import backend
from mint_envkit.sweep import DEFAULT_GRID, Sweep, SweepResult


@pytest.fixture(autouse=True)
def no_matplotlib(monkeypatch):
    """Keep these tests fast: skip summary.png (plotting is tested in test_summary.py)."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)


GRID = {"temperature": [0.7, 1.0], "group_size": [2, 4]}
NAMES = ["t0p7-g2", "t0p7-g4", "t1p0-g2", "t1p0-g4"]


def write_metrics(config: Config) -> None:
    """What a training run writes: one metrics line per step."""
    path = Path(config.log_path) / "metrics.jsonl"
    with path.open("a") as fh:
        for step in range(config.max_steps or 1):
            reward = config.temperature * config.dataset_builder.group_size / 10 + step
            fh.write(json.dumps({"step": step, "env/all/reward/total": reward}) + "\n")


class RecordingRunner:
    """A real runner: writes metrics, remembers what it ran, fails on request."""

    def __init__(self, fail: set[str] = frozenset()):
        self.ran: list[str] = []
        self.fail = fail

    async def __call__(self, config: Config) -> dict[str, str]:
        name = Path(config.log_path).name
        self.ran.append(name)
        await asyncio.sleep(0)
        if name in self.fail:
            raise RuntimeError(f"env exploded in {name}")
        write_metrics(config)
        return {"ran": name}


def run_expecting(exception: type[BaseException], coro) -> None:
    """asyncio.run(coro), which must raise `exception`.

    asyncio.run leaves its main task holding the exception; it is logged as
    "never retrieved" when the task is garbage-collected. Collect it now, so
    the log is not written from inside some later, unrelated code (CPython
    3.11's traceback printing re-enters ast.parse and can break a parse that
    the collection interrupted).
    """
    with pytest.raises(exception):
        asyncio.run(coro)
    gc.collect()


def results_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "results.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ layout


async def test_sweep_runs_every_config_in_its_own_directory(make_config, tmp_path):
    root = tmp_path / "sweep"
    runner = RecordingRunner()
    seen: list[Config] = []

    async def run(config: Config):
        seen.append(config)
        return await runner(config)

    sweep = Sweep(base=make_config(), grid=GRID, root=root, runner=run, quiet=True)
    assert sweep.names == NAMES
    results = await sweep.run()

    assert [r.name for r in results] == NAMES
    assert all(isinstance(r, SweepResult) and r.ok and not r.skipped for r in results)
    assert results[0].value == {"ran": "t0p7-g2"}
    assert [c.log_path for c in seen] == [os.path.join(str(root), n) for n in NAMES]
    assert [(c.temperature, c.dataset_builder.group_size) for c in seen] == [
        (0.7, 2),
        (0.7, 4),
        (1.0, 2),
        (1.0, 4),
    ]
    for name in NAMES:
        assert (root / name / "metrics.jsonl").exists()

    manifest = json.loads((root / "sweep.json").read_text())
    assert manifest["grid"] == {"temperature": [0.7, 1.0], "group_size": [2, 4]}
    assert manifest["base_config"]["model_name"] == "tiny-model"
    assert manifest["base_config"]["dataset_builder"] == {
        "group_size": 2,
        "batch_size": 4,
        "seed": 0,
    }
    assert [c["name"] for c in manifest["configs"]] == NAMES
    assert manifest["created_at"].endswith("+00:00")
    assert manifest["mint_envkit_version"]

    lines = results_lines(root)
    assert [line["name"] for line in lines] == NAMES
    line = lines[1]
    assert set(line) == {
        "name",
        "status",
        "error",
        "log_path",
        "seconds",
        "params",
        "sampling_seed",
        "data_seed",
        "finished_at",
    }
    assert line["sampling_seed"] == 0  # Config.sampling_seed
    assert line["data_seed"] == 0  # the dataset builder's seed
    assert line["status"] == "ok" and line["error"] is None
    assert line["params"] == {"temperature": 0.7, "group_size": 4}
    assert line["log_path"] == os.path.join(str(root), "t0p7-g4")
    assert (root / "summary.csv").exists()


async def test_kl_reference_is_filled_for_the_runs(make_config, tmp_path):
    seen: dict[str, KLReferenceConfig | None] = {}

    async def run(config: Config):
        seen[Path(config.log_path).name] = config.kl_reference_config
        write_metrics(config)

    sweep = Sweep(
        base=make_config(),
        grid={"kl_penalty_coef": [0.0, 0.02]},
        root=tmp_path,
        runner=run,
        quiet=True,
    )
    await sweep.run()
    assert seen == {"kl0p0": None, "kl0p02": KLReferenceConfig(base_model="tiny-model")}


async def test_default_grid_runs_eight_configs(make_config, tmp_path):
    runner = RecordingRunner()
    sweep = Sweep(base=make_config(), grid=DEFAULT_GRID, root=tmp_path, runner=runner, quiet=True)
    results = await sweep.run()
    assert len(results) == 8 and all(r.ok for r in results)
    assert runner.ran[-1] == "kl0p02-t1p0-g4"


def fake_train_module(monkeypatch) -> types.SimpleNamespace:
    """Stand in for mint_envkit.rl.train.main and for starting an embedded server.

    The sweep's real ``shared_local_backend`` runs; only the server it would
    start is replaced, and each run records whether it would reach the shared one.
    """
    seen = types.SimpleNamespace(calls=[], shared=[], inside=[], invariant=[])
    url = "http://127.0.0.1:1"

    async def main(config: Config):
        seen.calls.append(config.log_path)
        seen.inside.append(backend.resolve_connection("local").base_url == url)
        write_metrics(config)

    @contextlib.asynccontextmanager
    async def local_backend(models, *, latency_ms=0.0, batch_invariant=False, threads=None):
        seen.shared.append((list(models), latency_ms))
        seen.invariant.append(batch_invariant)
        yield url

    fake = types.ModuleType("mint_envkit.rl.train")
    fake.main = main
    monkeypatch.setitem(sys.modules, "mint_envkit.rl.train", fake)
    monkeypatch.setattr(backend, "local_backend", local_backend)
    return seen


async def test_default_runner_is_train_main_with_one_shared_local_backend(
    make_config, tmp_path, monkeypatch
):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", "local")
    seen = fake_train_module(monkeypatch)
    sweep = Sweep(
        base=make_config(local_latency_ms=5.0),
        grid={"kl_penalty_coef": [0.0, 0.1]},
        root=tmp_path,
        quiet=True,
    )
    assert sweep.runner is None
    results = await sweep.run()
    assert all(r.ok for r in results)
    assert seen.calls == [os.path.join(str(tmp_path), n) for n in ("kl0p0", "kl0p1")]
    assert seen.shared == [(["tiny-model"], 5.0)]
    assert seen.inside == [True, True]


async def test_configs_that_want_different_servers_share_none(make_config, tmp_path, monkeypatch):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", "local")
    seen = fake_train_module(monkeypatch)
    sweep = Sweep(
        base=make_config(),
        grid={"local_batch_invariant": [False, True]},
        root=tmp_path,
        quiet=True,
    )
    assert all(r.ok for r in await sweep.run())
    assert seen.shared == [] and seen.inside == [False, False]


async def test_a_shared_server_is_batch_invariant_when_the_configs_ask(
    make_config, tmp_path, monkeypatch
):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", "local")
    seen = fake_train_module(monkeypatch)
    sweep = Sweep(
        base=make_config(local_batch_invariant=True),
        grid={"kl_penalty_coef": [0.0, 0.1]},
        root=tmp_path,
        quiet=True,
    )
    assert all(r.ok for r in await sweep.run())
    assert seen.invariant == [True] and seen.inside == [True, True]


@pytest.mark.parametrize(
    ("backend", "fields"),
    [("mint", {}), ("local", {"base_url": "http://127.0.0.1:8000"})],
)
async def test_no_shared_backend_for_mint_or_an_explicit_url(
    make_config, tmp_path, monkeypatch, backend, fields
):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", backend)
    seen = fake_train_module(monkeypatch)
    sweep = Sweep(base=make_config(**fields), grid={"group_size": [2]}, root=tmp_path, quiet=True)
    assert (await sweep.run())[0].ok
    assert seen.shared == [] and seen.inside == [False]


async def test_custom_runners_get_no_shared_backend(make_config, tmp_path, monkeypatch):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", "local")
    seen = fake_train_module(monkeypatch)
    runner = RecordingRunner()
    await Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=runner, quiet=True).run()
    assert seen.shared == [] and runner.ran == NAMES


async def test_a_plain_function_runner_works(make_config, tmp_path):
    def run(config: Config) -> str:
        write_metrics(config)
        return "sync"

    sweep = Sweep(base=make_config(), grid={"group_size": [1]}, root=tmp_path, runner=run)
    results = await sweep.run()
    assert results[0].ok and results[0].value == "sync"


# ----------------------------------------------------------------- failures


async def test_a_failing_config_is_recorded_and_the_sweep_goes_on(make_config, tmp_path):
    runner = RecordingRunner(fail={"t0p7-g4"})
    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=runner, quiet=True)
    results = await sweep.run()

    assert runner.ran == NAMES
    assert [r.status for r in results] == ["ok", "failed", "ok", "ok"]
    assert results[1].error == "RuntimeError: env exploded in t0p7-g4"
    lines = results_lines(tmp_path)
    assert lines[1]["status"] == "failed"
    assert lines[1]["error"] == "RuntimeError: env exploded in t0p7-g4"
    traceback_text = (tmp_path / "t0p7-g4" / "sweep_error.txt").read_text()
    assert "Traceback" in traceback_text and "env exploded" in traceback_text


async def test_a_runner_that_writes_no_metrics_fails(make_config, tmp_path):
    async def run(config: Config):
        return None

    sweep = Sweep(base=make_config(), grid={"group_size": [2]}, root=tmp_path, runner=run)
    [result] = await sweep.run()
    assert result.status == "failed"
    assert result.error.startswith("MissingMetrics:")


async def test_rerun_skips_finished_and_reruns_failed(make_config, tmp_path):
    first = RecordingRunner(fail={"t0p7-g4", "t1p0-g4"})
    await Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=first, quiet=True).run()

    second = RecordingRunner()
    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=second, quiet=True)
    results = await sweep.run()
    assert second.ran == ["t0p7-g4", "t1p0-g4"]
    assert [r.skipped for r in results] == [True, False, True, False]
    assert all(r.ok for r in results)
    assert not (tmp_path / "t0p7-g4" / "sweep_error.txt").exists()
    statuses = [(line["name"], line["status"]) for line in results_lines(tmp_path)]
    assert statuses[-2:] == [("t0p7-g4", "ok"), ("t1p0-g4", "ok")]
    assert len(statuses) == 6

    third = RecordingRunner()
    await Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=third, quiet=True).run()
    assert third.ran == []


async def test_an_ok_config_whose_metrics_vanished_runs_again(make_config, tmp_path):
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True
    ).run()
    (tmp_path / "t1p0-g2" / "metrics.jsonl").unlink()
    again = RecordingRunner()
    await Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=again, quiet=True).run()
    assert again.ran == ["t1p0-g2"]


def test_keyboard_interrupt_propagates_and_keeps_finished_results(make_config, tmp_path):
    class Interrupting(RecordingRunner):
        async def __call__(self, config):
            if Path(config.log_path).name == "t1p0-g2":
                raise KeyboardInterrupt
            return await super().__call__(config)

    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=Interrupting(), quiet=True)
    run_expecting(KeyboardInterrupt, sweep.run())
    assert [line["name"] for line in results_lines(tmp_path)] == ["t0p7-g2", "t0p7-g4"]

    resumed = RecordingRunner()
    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=resumed, quiet=True)
    results = asyncio.run(sweep.run())
    assert resumed.ran == ["t1p0-g2", "t1p0-g4"]
    assert all(r.ok for r in results)


def test_system_exit_in_parallel_sweep_propagates(make_config, tmp_path):
    async def run(config: Config):
        if Path(config.log_path).name == "t0p7-g4":
            raise SystemExit(3)
        await asyncio.sleep(0)
        write_metrics(config)

    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=run, parallel=2, quiet=True)
    run_expecting(SystemExit, sweep.run())
    path = tmp_path / "results.jsonl"
    recorded = results_lines(tmp_path) if path.exists() else []
    assert all(line["status"] == "ok" for line in recorded)
    assert "t0p7-g4" not in {line["name"] for line in recorded}

    resumed = RecordingRunner()
    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=resumed, quiet=True)
    assert all(r.ok for r in asyncio.run(sweep.run()))
    assert "t0p7-g4" in resumed.ran


async def test_cancelling_a_sweep_cancels_its_runs_and_records_nothing_for_them(
    make_config, tmp_path
):
    started = asyncio.Event()
    cancelled: list[str] = []

    async def run(config: Config):
        started.set()
        try:
            await asyncio.Event().wait()  # forever
        except asyncio.CancelledError:
            cancelled.append(Path(config.log_path).name)
            raise

    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=run, parallel=2, quiet=True)
    task = asyncio.create_task(sweep.run())
    await started.wait()
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["t0p7-g2", "t0p7-g4"]
    assert not (tmp_path / "results.jsonl").exists()


CRASH_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path
    import attrs
    from mint_envkit.rl.config import Config
    from mint_envkit.sweep import Sweep

    @attrs.frozen
    class Builder:
        group_size: int = 2
        batch_size: int = 4
        seed: int = 0
        def describe(self):
            return {"group_size": self.group_size, "batch_size": self.batch_size,
                    "seed": self.seed}

    async def run(config):
        name = Path(config.log_path).name
        if name == sys.argv[2]:
            os._exit(17)  # the process dies mid-sweep, like a kill -9
        with open(os.path.join(config.log_path, "metrics.jsonl"), "w") as fh:
            fh.write(json.dumps({"step": 0, "env/all/reward/total": 1.0}) + "\\n")

    base = Config(dataset_builder=Builder(), model_name="tiny-model", log_path="unused")
    grid = {"temperature": [0.7, 1.0], "group_size": [2, 4]}
    asyncio.run(Sweep(base=base, grid=grid, root=sys.argv[1], runner=run).run())
    """
)


async def test_resume_after_the_process_is_killed_mid_sweep(make_config, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    root = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, str(script), str(root), "t1p0-g2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 17, proc.stderr
    assert "[sweep] [2/4] ok t0p7-g4" in proc.stdout
    assert [(line["name"], line["status"]) for line in results_lines(root)] == [
        ("t0p7-g2", "ok"),
        ("t0p7-g4", "ok"),
    ]

    resumed = RecordingRunner()
    results = await Sweep(
        base=make_config(), grid=GRID, root=root, runner=resumed, quiet=True
    ).run()
    assert resumed.ran == ["t1p0-g2", "t1p0-g4"]
    assert [r.skipped for r in results] == [True, True, False, False]
    assert all(r.ok for r in results)


# -------------------------------------------------------------- parallelism


class Barrier:
    """Lets runners through only once `needed` of them are inside at the same time."""

    def __init__(self, needed: int):
        self.needed = needed
        self.inside = 0
        self.most_inside = 0
        self.open = asyncio.Event()

    async def __call__(self, config: Config) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        if self.inside >= self.needed:
            self.open.set()
        try:
            # A bound, not a timing assertion: a sweep that never overlaps
            # fails here instead of hanging the test run.
            await asyncio.wait_for(self.open.wait(), timeout=10)
            write_metrics(config)
        finally:
            self.inside -= 1


async def test_parallel_configs_overlap(make_config, tmp_path):
    barrier = Barrier(needed=8)
    sweep = Sweep(
        base=make_config(), grid=DEFAULT_GRID, root=tmp_path, runner=barrier, parallel=8, quiet=True
    )
    results = await sweep.run()
    assert all(r.ok for r in results), [r.error for r in results]
    assert barrier.most_inside == 8


async def test_parallel_is_a_bound(make_config, tmp_path):
    barrier = Barrier(needed=2)
    sweep = Sweep(
        base=make_config(), grid=DEFAULT_GRID, root=tmp_path, runner=barrier, parallel=2, quiet=True
    )
    results = await sweep.run()
    assert all(r.ok for r in results), [r.error for r in results]
    assert barrier.most_inside == 2


async def test_parallel_one_runs_one_at_a_time(make_config, tmp_path):
    inside = 0
    most = 0

    async def run(config: Config) -> None:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        for _ in range(3):
            await asyncio.sleep(0)
        write_metrics(config)
        inside -= 1

    await Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=run, quiet=True).run()
    assert most == 1


async def test_parallel_failures_are_isolated(make_config, tmp_path):
    runner = RecordingRunner(fail={"t0p7-g2", "t1p0-g4"})
    sweep = Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=runner, parallel=4, quiet=True
    )
    results = await sweep.run()
    assert [r.status for r in results] == ["failed", "ok", "ok", "failed"]
    assert sorted(line["name"] for line in results_lines(tmp_path)) == NAMES


# ------------------------------------------------------- guarding the root


async def test_a_root_with_another_grid_is_refused(make_config, tmp_path):
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True
    ).run()
    other = Sweep(
        base=make_config(),
        grid={"temperature": [0.7, 1.0], "group_size": [2, 8]},
        root=tmp_path,
        runner=RecordingRunner(),
        quiet=True,
    )
    with pytest.raises(ConfigError, match=r"different grid.*MINT_LOG_ROOT"):
        await other.run()


async def test_grid_order_does_not_matter_for_resume(make_config, tmp_path):
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True
    ).run()
    again = RecordingRunner()
    reordered = {"group_size": [4, 2], "temperature": [1.0, 0.7]}
    await Sweep(base=make_config(), grid=reordered, root=tmp_path, runner=again, quiet=True).run()
    assert again.ran == []


async def test_a_root_with_another_base_config_is_refused(make_config, tmp_path):
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True
    ).run()
    longer = Sweep(
        base=make_config(max_steps=5),
        grid=GRID,
        root=tmp_path,
        runner=RecordingRunner(),
        quiet=True,
    )
    with pytest.raises(ConfigError, match=r"max_steps: None -> 5.*MINT_LOG_ROOT"):
        await longer.run()


@attrs.frozen
class BigBuilder:
    """A builder whose description is long: a model name and many problems."""

    model_name: str = "real-model"
    problems: tuple[str, ...] = tuple(f"What is {i} + {i}?" for i in range(60))
    group_size: int = 2
    batch_size: int = 4
    seed: int = 0

    def describe(self) -> dict:
        return attrs.asdict(self)


async def test_another_builder_in_a_root_is_named_by_its_field_not_dumped(make_config, tmp_path):
    """Issue 48: the smoke run on the real run's folder exited with a 1,000-character dump
    of both builders; the refusal names the field that differs, each value cut short."""
    real = make_config(dataset_builder=BigBuilder(), model_name="real-model")
    await Sweep(base=real, grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True).run()
    tiny = make_config(dataset_builder=BigBuilder(model_name="tiny-model"), model_name="tiny-model")
    with pytest.raises(ConfigError) as info:
        await Sweep(base=tiny, grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True).run()
    message = str(info.value)
    assert "dataset_builder.model_name: 'real-model' -> 'tiny-model'" in message
    assert len(message) < 400, message


async def test_operational_fields_may_change_between_runs(make_config, tmp_path):
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner(), quiet=True
    ).run()
    again = RecordingRunner()
    moved = make_config(base_url="http://127.0.0.1:9999", preflight_timeout_s=60.0)
    await Sweep(base=moved, grid=GRID, root=tmp_path, runner=again, quiet=True).run()
    assert again.ran == []


async def test_two_sweeps_cannot_share_a_root_at_once(make_config, tmp_path):
    gate = asyncio.Event()

    async def slow(config: Config) -> None:
        await gate.wait()
        write_metrics(config)

    first = asyncio.create_task(
        Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=slow, quiet=True).run()
    )
    while not (tmp_path / "t0p7-g2").exists():
        await asyncio.sleep(0)
    second = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=slow, quiet=True)
    with pytest.raises(ConfigError, match="another sweep is running"):
        await second.run()
    gate.set()
    assert all(r.ok for r in await first)


async def test_a_damaged_manifest_is_reported(make_config, tmp_path):
    (tmp_path / "sweep.json").write_text("{not json")
    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=RecordingRunner())
    with pytest.raises(ConfigError, match="not valid JSON"):
        await sweep.run()


# ------------------------------------------------------------ construction


def test_invalid_configs_fail_when_the_sweep_is_built(make_config, tmp_path):
    with pytest.raises(ConfigError, match=r"Config\.temperature"):
        Sweep(base=make_config(), grid={"temperature": [0.7, -1.0]}, root=tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"parallel": 0}, "Sweep.parallel"),
        ({"parallel": True}, "Sweep.parallel"),
        ({"root": ""}, "Sweep.root"),
        ({"root": 3}, "Sweep.root"),
        ({"runner": "train"}, "Sweep.runner"),
        ({"base": {"model_name": "x"}}, "Sweep.base"),
    ],
)
def test_bad_sweep_arguments(make_config, tmp_path, kwargs, match):
    arguments = {"base": make_config(), "grid": GRID, "root": tmp_path, **kwargs}
    with pytest.raises(ConfigError, match=match):
        Sweep(**arguments)


def test_from_env(make_config, tmp_path):
    environ = {
        "MINT_RL_STEPS": "3",
        "MINT_RL_TEMPS": "0.9",
        "MINT_RL_GROUPS": "2",
        "MINT_RL_KL_COEFS": "0.0",
        "MINT_RL_BATCH": "8",
        "MINT_LOG_ROOT": str(tmp_path / "env-root"),
    }
    sweep = Sweep.from_env(make_config(), root="ignored", environ=environ, quiet=True)
    assert sweep.names == ["kl0p0-t0p9-g2"]
    config = sweep.points[0].config
    assert config.max_steps == 3 and config.dataset_builder.batch_size == 8
    assert config.log_path == os.path.join(str(tmp_path / "env-root"), "kl0p0-t0p9-g2")
    assert len(Sweep.from_env(make_config(), root=tmp_path, environ={}).points) == 8
    with pytest.raises(ConfigError, match="MINT_RL_GROUPS='2,x'"):
        Sweep.from_env(make_config(), root=tmp_path, environ={"MINT_RL_GROUPS": "2,x"})


# ----------------------------------------------------------------- progress


async def test_progress_lines_and_quiet(make_config, tmp_path, capsys):
    runner = RecordingRunner(fail={"t0p7-g4"})
    await Sweep(base=make_config(), grid=GRID, root=tmp_path / "loud", runner=runner).run()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[sweep] 4 configs in ")
    assert "[sweep] [1/4] start t0p7-g2" in out
    assert any(line.startswith("[sweep] [1/4] ok t0p7-g2 ") for line in out)
    assert any("(1/4 done, ETA " in line for line in out)  # progress with an ETA
    assert any(line.endswith("(4/4 done)") for line in out)
    assert any(
        line.startswith("[sweep] [2/4] failed t0p7-g4 ")
        and line.endswith(": RuntimeError: env exploded in t0p7-g4")
        for line in out
    )
    await Sweep(
        base=make_config(), grid=GRID, root=tmp_path / "quiet", runner=runner, quiet=True
    ).run()
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------ disk problems


async def test_a_sweep_root_that_cannot_be_written_fails_before_any_config(make_config, tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the sweep root should be")
    runner = RecordingRunner()
    sweep = Sweep(base=make_config(), grid=GRID, root=blocker / "sweep", runner=runner, quiet=True)
    with pytest.raises(ConfigError, match="sweep root") as info:
        await sweep.run()
    assert str(blocker / "sweep") in str(info.value)
    assert runner.ran == []


async def test_a_disk_that_fills_up_stops_the_sweep_with_a_clear_error(
    make_config, tmp_path, monkeypatch
):
    def no_space(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    async def fills_the_disk(config: Config) -> None:
        monkeypatch.setattr(os, "fsync", no_space)
        raise OSError(errno.ENOSPC, "No space left on device")

    sweep = Sweep(base=make_config(), grid=GRID, root=tmp_path, runner=fills_the_disk, quiet=True)
    with pytest.raises(MintEnvkitError, match="ENOSPC") as info:
        await sweep.run()
    monkeypatch.undo()
    assert str(tmp_path) in str(info.value) and "results.jsonl" in str(info.value)
    first = tmp_path / NAMES[0]
    assert not (first / "sweep_error.txt").exists()  # no empty error file
    assert [p.name for p in first.iterdir()] == []  # and no temporary one
    assert (tmp_path / "results.jsonl").read_text() == ""  # no torn line
