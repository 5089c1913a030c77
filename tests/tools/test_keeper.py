"""The keeper on its own: it runs a command, ends its whole tree, and mirrors its exit status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mint_envkit.tools.keeper import GRACE_S, descendants, guarded, supported

TREE = """
import os, signal, subprocess, sys, time
if sys.argv[1] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
kids = [subprocess.Popen(["sleep", "300"]),
        subprocess.Popen(["sleep", "300"], start_new_session=True)]
print(os.getpid(), *(kid.pid for kid in kids), flush=True)
if sys.argv[1] == "exit":  # once told (a line on stdin): the tree is checked by then
    sys.stdin.readline()
    sys.exit(7)
time.sleep(300)
"""


def running(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def gone(pids: list[int], within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def keep(mode: str) -> tuple[subprocess.Popen, list[int]]:
    process = subprocess.Popen(
        guarded([sys.executable, "-c", TREE, mode]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    pids = [int(pid) for pid in process.stdout.readline().split()]
    assert len(pids) == 3 and set(pids) <= set(descendants(process.pid))
    return process, pids


def test_the_keeper_runs_here():
    assert supported()
    command = guarded(["node", "server.js"])
    assert command[:3] == [sys.executable, "-I", "-S"] and command[-3:] == [
        "--",
        "node",
        "server.js",
    ]
    assert command[4:6] == [str(os.getpid()), repr(GRACE_S)]


def test_when_the_command_exits_its_tree_ends_and_its_status_comes_back():
    process, pids = keep("exit")
    process.stdin.write("exit now\n")
    process.stdin.flush()
    assert process.wait(timeout=30) == 7
    assert gone(pids)


def test_a_sigterm_is_passed_on_and_one_ignored_ends_in_a_kill_after_the_grace():
    for mode, status in (("stay", 128 + signal.SIGTERM), ("ignore-term", 128 + signal.SIGTERM)):
        process, pids = keep(mode)
        os.kill(process.pid, signal.SIGTERM)  # the keeper alone, not its group
        assert process.wait(timeout=30) == status
        assert gone(pids), mode


def test_a_command_that_cannot_start_is_exit_code_127_and_says_why():
    done = subprocess.run(
        guarded(["/nonexistent/server"]), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 127
    assert "cannot start '/nonexistent/server'" in done.stderr
