"""Sandbox user ids are leased under per-uid lock files: two processes never hold one id at
once, an id something else uses is left alone, and a run killed from outside is an error
of the sandbox, never a score."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mint_envkit import SandboxError, run_tests
from mint_envkit.sandbox import BubblewrapExecutor, Limits
from mint_envkit.sandbox.uids import lease_uid, live_pids

ROOT = Path(__file__).resolve().parents[2]
LIMITS = Limits(wall_s=30, cpu_s=5, memory_mb=256)
DEADLINE_S = 60.0

WORKER = """
import asyncio, json, sys
from mint_envkit.sandbox import BubblewrapExecutor, Limits, run_tests

async def main():
    executor = BubblewrapExecutor(
        max_concurrency=3, uid_base={base}, uid_count=16, uid_lock_dir=sys.argv[1]
    )
    code = "import os, time\\nUID = os.getuid()\\ntime.sleep(0.3)\\ndef add(a, b):\\n    return a + b"
    tests = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]
    runs = await asyncio.gather(
        *(run_tests(code, tests, executor=executor, limits=Limits(wall_s=30, cpu_s=5))
          for _ in range(9))
    )
    print(json.dumps([[run.outcome, run.message] for run in runs]))

asyncio.run(main())
"""


def _worker(base: int, lock_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER.format(base=base), str(lock_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )


@pytest.mark.timeout(150)
def test_two_processes_with_one_uid_base_never_kill_each_others_runs(tmp_path: Path):
    workers = [_worker(61300, tmp_path) for _ in range(2)]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    for worker, (stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        runs = json.loads(stdout)
        assert runs == [["pass", ""]] * 9, runs  # every correct run passed, in both
    assert all(not live_pids(uid) for uid in range(61300, 61316))


def _wait_for(found, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {DEADLINE_S} s")


async def _poll(found, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {what} within {DEADLINE_S} s")


def _bwraps(uid: int) -> list[int]:
    return [
        pid for pid in live_pids(uid) if Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap"
    ]


async def test_a_run_holds_its_uid_against_another_process_and_is_not_disturbed(tmp_path: Path):
    executor = BubblewrapExecutor(
        max_concurrency=1, uid_base=61400, uid_count=4, uid_lock_dir=str(tmp_path)
    )
    code = "import os, time\nUID = os.getuid()\ntime.sleep(2)\ndef add(a, b):\n    return a + b"
    held = asyncio.ensure_future(
        run_tests(code, ["assert add(2, 3) == 5"], executor=executor, limits=LIMITS)
    )
    await _poll(lambda: _bwraps(61400), "sandbox under uid 61400")
    other = _worker(61400, tmp_path)  # another process, the same base and lock directory
    stdout, stderr = await asyncio.to_thread(other.communicate, timeout=120)
    assert other.returncode == 0, stderr
    assert json.loads(stdout) == [["pass", ""]] * 9
    run = await held
    assert run.outcome == "pass", run


async def test_a_run_killed_from_outside_raises_instead_of_scoring(tmp_path: Path):
    executor = BubblewrapExecutor(
        max_concurrency=1, uid_base=61450, uid_count=2, uid_lock_dir=str(tmp_path)
    )
    code = "import time\ntime.sleep(20)\ndef add(a, b):\n    return a + b"
    task = asyncio.ensure_future(
        run_tests(code, ["assert add(2, 3) == 5"], executor=executor, limits=LIMITS)
    )
    (bwrap, *_) = await _poll(lambda: _bwraps(61450), "sandbox under uid 61450")
    os.kill(bwrap, signal.SIGKILL)  # what another process's cleanup did to it before
    with pytest.raises(SandboxError, match="killed from outside"):
        await task


async def test_an_id_used_without_the_lock_is_skipped_and_left_alone(tmp_path: Path):
    foreign = subprocess.Popen(["sleep", "60"], user=61500, group=61500, extra_groups=[])
    try:
        _wait_for(lambda: live_pids(61500), "process under uid 61500")
        lease = lease_uid(61500, 2, lock_dir=str(tmp_path))
        assert lease.uid == 61501
        with pytest.raises(SandboxError, match=r"no free sandbox user id in 61500\.\.61500"):
            lease_uid(61500, 1, lock_dir=str(tmp_path))
        await lease.release()
        assert foreign.poll() is None  # never touched
    finally:
        foreign.kill()
        foreign.wait()


async def test_a_lease_is_exclusive_until_released(tmp_path: Path):
    first = lease_uid(61520, 2, lock_dir=str(tmp_path))
    second = lease_uid(61520, 2, lock_dir=str(tmp_path))
    assert (first.uid, second.uid) == (61520, 61521)
    with pytest.raises(SandboxError, match="held by a run"):
        lease_uid(61520, 2, lock_dir=str(tmp_path))
    await first.release()
    again = lease_uid(61520, 2, lock_dir=str(tmp_path))
    assert again.uid == 61520
    await again.release()
    await second.release()


def test_a_lock_directory_that_cannot_be_made_is_a_sandbox_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SandboxError, match="uid_lock_dir"):
        lease_uid(61530, 1, lock_dir=str(blocker / "locks"))


HOLDER = """
import fcntl, os, sys, time
held = []
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(fd)
    except OSError as err:
        print("refused", path, err.errno, flush=True)
print("holding", len(held), flush=True)
time.sleep(60)
"""


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may pass through, as /run/lock is."""
    top = Path(tempfile.mkdtemp(prefix="mint-envkit-uidtest-", dir="/tmp"))
    top.chmod(0o755)
    yield top
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: leases and another user")
async def test_another_user_cannot_hold_the_lock_files_and_block_every_run(open_dir: Path):
    """issue 46: the lock files were 0644 in a 0755 directory, so an unprivileged user
    could open each read-only, flock it, and make every sandbox run a SandboxError."""
    locks = open_dir / "locks"
    first = lease_uid(61540, 3, lock_dir=str(locks))  # makes the directory and a lock file
    await first.release()
    for uid in (61541, 61542):  # every lock file of the range exists
        await lease_uid(uid, 1, lock_dir=str(locks)).release()
    holder = subprocess.Popen(
        ["/usr/bin/python3", "-c", HOLDER, *(str(locks / f"{u}.lock") for u in range(61540, 61543))], user=65534, group=65534, extra_groups=[],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        while line.startswith("refused"):
            line = holder.stdout.readline()
        assert line.strip() == "holding 0", line  # it could not even list or open them
        lease = lease_uid(61540, 3, lock_dir=str(locks))
        assert lease.uid == 61540
        await lease.release()
        mode = locks.stat().st_mode & 0o777
        assert mode == 0o700 and all(
            (locks / f"{u}.lock").stat().st_mode & 0o077 == 0 for u in (61540, 61541, 61542)
        )
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the directory away")
def test_a_lock_directory_of_another_user_is_refused(open_dir: Path):
    theirs = open_dir / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(SandboxError, match="owned by uid 65534"):
        lease_uid(61560, 1, lock_dir=str(theirs))


def test_a_lock_directory_of_an_older_kit_is_made_private(tmp_path: Path):
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o755)
    (locks / "61570.lock").touch(mode=0o644)
    lease = lease_uid(61570, 1, lock_dir=str(locks))
    assert locks.stat().st_mode & 0o777 == 0o700
    assert (locks / "61570.lock").stat().st_mode & 0o777 == 0o600
    asyncio.run(lease.release())
