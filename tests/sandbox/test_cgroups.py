"""A run's memory cgroup: made with the run's whole budget as its limit, joined before the
run starts, its OOM kills counted, and emptied and removed after."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mint_envkit import SandboxError
from mint_envkit.sandbox.cgroups import CgroupLease, RunCgroup, memory_parent, sweep

PARENT = memory_parent()
ROOT = Path(__file__).resolve().parents[2]


def test_this_machine_has_a_writable_memory_cgroup():
    assert PARENT is not None and (PARENT / "memory.limit_in_bytes").exists()


async def test_a_cgroup_holds_its_limit_and_its_processes_and_is_removed():
    assert PARENT is not None
    cgroup = RunCgroup.create(PARENT, 64 << 20)
    try:
        assert cgroup.limit_bytes() == 64 << 20
        assert int((cgroup.path / "memory.memsw.limit_in_bytes").read_text()) == 64 << 20
        child = subprocess.Popen(["sleep", "60"], preexec_fn=cgroup.joiner())
        assert cgroup.pids() == [child.pid]
    finally:
        await cgroup.close()
    assert child.wait(timeout=30) == -9 and not cgroup.path.exists()


async def test_going_over_the_limit_is_an_oom_kill_it_counts():
    assert PARENT is not None
    cgroup = RunCgroup.create(PARENT, 64 << 20)
    try:
        code = "x = bytearray(200 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1"
        done = subprocess.run(
            [sys.executable, "-c", code], preexec_fn=cgroup.joiner(), timeout=60, check=False
        )
        assert done.returncode == -9 and cgroup.oom_kills() == 1
        assert cgroup.peak_bytes() <= 64 << 20
    finally:
        await cgroup.close()


def test_a_cgroup_that_cannot_be_made_is_a_sandbox_error(tmp_path):
    with pytest.raises(SandboxError, match="memory_cgroup=False"):
        RunCgroup.create(tmp_path / "missing", 1 << 20)


def test_a_lease_swept_by_another_process_before_it_was_opened_is_made_again(tmp_path, monkeypatch):
    """The race a CI run hit: another process's sweep removed this one's new lease
    between its mkdir and its open, and the run failed with a SandboxError."""
    opened = os.open
    swept: list[str] = []

    def open_after_a_sweep(path, flags, *args):
        name = os.fspath(path)
        if not swept and os.path.basename(name).startswith("mint-envkit-"):
            os.rmdir(name)  # the other process's sweep, just before this open
            swept.append(name)
        return opened(path, flags, *args)

    monkeypatch.setattr(os, "open", open_after_a_sweep)
    lease = CgroupLease.take(tmp_path)
    monkeypatch.setattr(os, "open", opened)
    try:
        assert swept and lease.path.is_dir() and str(lease.path) != swept[0]
    finally:
        lease.release()


TRAINER = """
import asyncio, sys
from mint_envkit.sandbox import BubblewrapExecutor, Limits, run_tests

async def main():
    executor = BubblewrapExecutor(  # ids of its own: other tests count the default ones
        max_concurrency=6, memory_cgroup=sys.argv[1], uid_base=61700, uid_count=32
    )
    code = "import time\\ntime.sleep(float(%r))\\ndef add(a, b):\\n    return a + b" % sys.argv[2]
    print("ready", flush=True)
    sys.stdin.readline()  # go
    runs = await asyncio.gather(*(
        run_tests(code, ["assert add(2, 3) == 5"], executor=executor,
                  limits=Limits(wall_s=60, cpu_s=5, memory_mb=128))
        for _ in range(int(sys.argv[3]))
    ), return_exceptions=True)
    print("runs", [getattr(run, "outcome", repr(run)) for run in runs], flush=True)

asyncio.run(main())
"""


def _trainer(parent: Path, sleep_s: float, runs: int, *prefix: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [*prefix, sys.executable, "-c", TRAINER, str(parent), str(sleep_s), str(runs)]
    trainer = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert trainer.stdout is not None and trainer.stdout.readline().strip() == "ready"
    return trainer


@pytest.fixture
def parent() -> Iterator[Path]:
    """A memory cgroup of this test's own, so no other worker's runs are in it."""
    assert PARENT is not None
    path = PARENT / f"test-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    yield path
    lease = CgroupLease.held(path)
    if lease is not None:
        lease.release()
    sweep(path)
    for child in sorted(path.glob("*/*"), reverse=True) + sorted(path.glob("*")):
        if child.is_dir():
            child.rmdir()
    path.rmdir()


def _subcgroups(parent: Path) -> list[Path]:
    return sorted(p for p in parent.rglob("*") if p.is_dir())


@pytest.mark.timeout(120)
def test_a_trainer_killed_with_sigkill_leaves_no_cgroup_after_the_next_start(parent: Path):
    """issue 46: a trainer killed with -9 leaked its run cgroups for good; now the next
    process that runs sandboxes under the same parent sweeps them at its start."""
    trainer = _trainer(parent, 60, 2)
    assert trainer.stdin is not None
    trainer.stdin.write("go\n")
    trainer.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both runs started: their cgroups hold processes
        busy = [p for p in parent.rglob("cgroup.procs") if p.parent != parent and p.read_text()]
        if len(busy) >= 2:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the trainer's runs never started")
    trainer.kill()
    trainer.communicate(timeout=30)
    assert _subcgroups(parent), "the killed trainer's cgroups are there until a sweep"
    second = _trainer(parent, 0, 1)
    out, err = second.communicate("go\n", timeout=60)
    assert second.returncode == 0 and "runs ['pass']" in out, err
    assert _subcgroups(parent) == []  # the dead lease swept at its start, its own at exit


@pytest.mark.timeout(120)
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_two_trainers_that_are_both_pid_1_do_not_clash(parent: Path):
    """issue 46: run cgroups were named by pid (mint-envkit-<pid>-<n>), so two trainers
    that are pid 1 of their namespaces (containers) made the same names and 12 of 24
    runs raised SandboxError; the lease's name is random."""
    pid_1 = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")  # a container
    trainers = [_trainer(parent, 1.0, 6, *pid_1) for _ in range(2)]
    for trainer in trainers:  # both go at once: their runs overlap
        assert trainer.stdin is not None
        trainer.stdin.write("go\n")
        trainer.stdin.flush()
    outputs = [trainer.communicate(timeout=90) for trainer in trainers]
    for trainer, (out, err) in zip(trainers, outputs, strict=True):
        assert trainer.returncode == 0, err
        assert "runs ['pass', 'pass', 'pass', 'pass', 'pass', 'pass']" in out, out + err
    assert _subcgroups(parent) == []


def test_a_lease_held_by_a_live_process_is_not_swept(parent: Path):
    lease = CgroupLease.take(parent)
    assert sweep(parent) == [] and lease.path.is_dir()
    dead = parent / "mint-envkit-0123456789abcdef"  # no process holds its lock
    (dead / "run-0").mkdir(parents=True)
    older = parent / "mint-envkit-4242-0"  # an older kit's name: not ours to judge
    older.mkdir()
    assert sweep(parent) == [dead] and not dead.exists() and older.is_dir()
    older.rmdir()
