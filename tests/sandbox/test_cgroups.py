"""A run's memory cgroup: made with the run's whole budget as its limit, joined before the
run starts, its OOM kills counted, and emptied and removed after."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mint_envkit import SandboxError
from mint_envkit.sandbox.cgroups import RunCgroup, memory_parent

PARENT = memory_parent()


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
