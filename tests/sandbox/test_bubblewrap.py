"""The bubblewrap sandbox against code that tries to get out: each attempt is contained,
scored, and the host is unharmed. Where it helps, the same code run without a sandbox
(UnsafeLocalExecutor) shows that the attempt itself works, so the test can fail."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from pathlib import Path

import pytest

from mint_envkit import SandboxError
from mint_envkit.sandbox import BubblewrapExecutor, Limits, UnsafeLocalExecutor, run_tests

LIMITS = Limits(wall_s=4, cpu_s=2, memory_mb=256, processes=8, output_bytes=1 << 16, file_mb=4)
SANDBOX = BubblewrapExecutor(max_concurrency=2)


def _sandbox_pids(executor: BubblewrapExecutor) -> list[int]:
    """Host processes running under ``executor``'s per-run user ids (not zombies: bwrap's
    first process is reaped by the host's init, within about a second here)."""
    ids = range(executor.uid_base, executor.uid_base + executor.uid_count)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) in ids and not fields["State"].strip().startswith("Z"):
            found.append(int(entry.name))
    return found


def test_bubblewrap_is_available_here():
    assert SANDBOX.unavailable_reason() is None


async def test_no_network_not_even_the_hosts_loopback():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = (
        "import socket\n"
        "def reach(host, port):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=1).close()\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
    )
    tests = [f"assert not reach('127.0.0.1', {port})", "assert not reach('1.1.1.1', 53)"]
    try:
        run = await run_tests(code, tests, executor=SANDBOX, limits=LIMITS)
        assert run.outcome == "pass", run
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing reached the host
        unsafe = await run_tests(code, tests[:1], executor=UnsafeLocalExecutor(), limits=LIMITS)
        assert unsafe.outcome == "fail"  # without the sandbox the same code gets through
    finally:
        listener.close()


async def test_writes_outside_the_scratch_directory_fail(tmp_path: Path):
    target = tmp_path / "escaped.txt"
    code = (
        "def write(path):\n"
        "    try:\n"
        "        with open(path, 'w') as f:\n"
        "            f.write('x')\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        "def read(path):\n"
        "    with open(path) as f:\n"
        "        return f.read()\n"
    )
    tests = [
        f"assert not write({str(target)!r})",
        "assert not write('/usr/escaped.txt')",
        "assert not write('/escaped.txt')",
        "assert not write('/proc/sys/kernel/hostname')",
        "assert write('/work/scratch.txt')",
        "assert read('/work/scratch.txt') == 'x'",
        "assert write('/tmp/scratch.txt')",
    ]
    run = await run_tests(code, tests, executor=SANDBOX, limits=LIMITS)
    assert [test.status for test in run.tests] == ["pass"] * len(tests), run
    assert not target.exists()
    unsafe = await run_tests(code, tests[:1], executor=UnsafeLocalExecutor(), limits=LIMITS)
    assert unsafe.outcome == "fail" and target.read_text() == "x"


async def test_the_host_filesystem_is_mostly_invisible():
    code = "import os\nTOP = sorted(os.listdir('/'))"
    tests = [
        "assert not os.path.exists('/etc/passwd')",
        "assert not os.path.exists('/root')",
        "assert not os.path.exists('/home')",
        "assert os.getcwd() == '/work'",
    ]
    run = await run_tests(code, tests, executor=SANDBOX, limits=LIMITS)
    assert run.outcome == "pass", run


async def test_the_scratch_directory_is_small():
    code = "def fill():\n    return open('/work/big', 'wb').write(b'x' * (64 << 20))\n"
    tests = [f"assert fill() == {64 << 20}"]
    run = await run_tests(code, tests, executor=SANDBOX, limits=LIMITS)
    assert run.tests[0].status == "error" and run.outcome == "fail", run


async def test_a_fork_bomb_is_contained_and_scored():
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    # user ids of its own: another test's sandbox running beside it (xdist) is not counted
    alone = BubblewrapExecutor(max_concurrency=1, uid_base=64100, uid_count=4)
    run = await run_tests(code, ["assert True"], executor=alone, limits=LIMITS)
    assert run.outcome in ("timeout", "error")
    assert run.tests[0].status == "not_run"
    assert _sandbox_pids(alone) == []  # nothing it started is left
    assert subprocess.run(["true"], check=False).returncode == 0  # the host still forks


async def test_a_fork_bomb_stops_at_the_process_limit():
    code = (
        "import os, time\n"
        "made = 0\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(2)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        break\n"
    )
    test = f"assert made in {list(range(8))}"
    alone = BubblewrapExecutor(max_concurrency=1, uid_base=64110, uid_count=4)
    run = await run_tests(code, [test], executor=alone, limits=LIMITS)
    assert run.outcome == "pass", run
    assert _sandbox_pids(alone) == []


async def test_allocating_10_gb_is_contained():
    code = "x = bytearray(10 * 2**30)"
    run = await run_tests(code, ["assert True"], executor=SANDBOX, limits=LIMITS)
    assert run.outcome == "error" and "MemoryError" in run.message, run


async def test_printing_1_gb_is_capped():
    code = "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * 2**20)\n"
    run = await run_tests(code, ["assert True"], executor=SANDBOX, limits=LIMITS)
    assert run.outcome == "error" and "output over" in run.message, run
    assert len(run.stdout) <= LIMITS.output_bytes


async def test_sleeping_forever_times_out():
    run = await run_tests(
        "import time\ntime.sleep(10**6)", ["assert True"], executor=SANDBOX, limits=LIMITS
    )
    assert run.outcome == "timeout" and "wall-clock" in run.message, run


async def test_a_busy_loop_hits_the_cpu_limit():
    limits = Limits(wall_s=8, cpu_s=1, memory_mb=256)
    run = await run_tests("while True:\n    pass", ["assert True"], executor=SANDBOX, limits=limits)
    assert run.outcome == "timeout", run


async def test_the_hosts_secrets_do_not_reach_the_code(monkeypatch: pytest.MonkeyPatch):
    secret = "hunter2-" + os.urandom(8).hex()
    monkeypatch.setenv("MINT_SANDBOX_TEST_SECRET", secret)
    code = (
        "import os\n"
        "SEEN = repr(dict(os.environ))\n"
        "for pid in os.listdir('/proc'):\n"
        "    try:\n"
        "        SEEN += repr(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError:\n"
        "        pass\n"
        "print(SEEN)\n"
        "def seen(word):\n"
        "    return word in SEEN\n"
    )
    tests = [f"assert not seen({secret!r})", "assert not seen('MINT_SANDBOX_TEST_SECRET')"]
    run = await run_tests(code, tests, executor=SANDBOX, limits=LIMITS)
    assert run.outcome == "pass", run
    assert secret not in run.stdout and "PATH" in run.stdout


async def test_a_missing_bubblewrap_refuses_to_run_and_names_the_fix(tmp_path: Path):
    missing = BubblewrapExecutor(bwrap=str(tmp_path / "bwrap"))
    assert not missing.available()
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        await run_tests("x = 1", ["assert x"], executor=missing, limits=LIMITS)


async def test_concurrent_runs_of_two_executors_never_share_a_user_id():
    first, second = (BubblewrapExecutor(max_concurrency=1, uid_base=62000) for _ in range(2))
    code = "import os, time\nUID = os.getuid()\nprint(UID)\ntime.sleep(0.3)"
    runs = await asyncio.gather(
        run_tests(code, ["assert UID in [62000, 62001]"], executor=first, limits=LIMITS),
        run_tests(code, ["assert UID in [62000, 62001]"], executor=second, limits=LIMITS),
    )
    assert [run.outcome for run in runs] == ["pass", "pass"]
    assert {run.stdout.strip() for run in runs} == {"62000", "62001"}


async def test_a_cancelled_run_leaves_nothing_running():
    code = "import os, time\nos.fork()\ntime.sleep(60)\ndef f():\n    return 1"
    alone = BubblewrapExecutor(max_concurrency=1, uid_base=64120, uid_count=4)
    task = asyncio.ensure_future(
        run_tests(code, ["assert f() == 1"], executor=alone, limits=LIMITS)
    )
    deadline = asyncio.get_running_loop().time() + 30
    while not _sandbox_pids(alone) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    assert _sandbox_pids(alone)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while _sandbox_pids(alone) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    assert _sandbox_pids(alone) == []
