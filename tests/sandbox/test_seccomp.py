"""The seccomp filter (used where a run has no memory cgroup) refuses the calls whose memory
no rlimit counts, and leaves the rest alone."""

from __future__ import annotations

import pytest

from mint_envkit import SandboxError, run_tests
from mint_envkit.sandbox import BubblewrapExecutor, Limits
from mint_envkit.sandbox.seccomp import DENIED, deny_filter

LIMITS = Limits(wall_s=10, cpu_s=5, memory_mb=256, processes=8)
SECCOMP = BubblewrapExecutor(max_concurrency=2, memory_cgroup=False)

CODE = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)

def errno_of(call):
    try:
        call()
    except OSError as err:
        return err.errno
    return 0

def raw(number, *args):
    result = libc.syscall(number, *args)
    return ctypes.get_errno() if result == -1 else 0

def add(a, b):
    return a + b
"""

REFUSED = [
    "errno_of(lambda: os.memfd_create('m'))",
    "errno_of(socket.socketpair)",
    "errno_of(socket.socket)",
    "raw(29, 0, 4096, 0o1600)",  # shmget
    "raw(68, 0, 0o1600)",  # msgget
    "raw(425, 8, 0)",  # io_uring_setup
    "raw(253)",  # inotify_init
    "raw(0x40000000 | 39)",  # getpid through the x32 ABI
]


@pytest.mark.parametrize("call", REFUSED)
async def test_calls_whose_memory_no_limit_counts_are_refused(call: str):
    run = await run_tests(CODE, [f"assert {call} == 1"], executor=SECCOMP, limits=LIMITS)
    assert run.outcome == "pass", run  # 1 is EPERM


async def test_everything_else_still_works():
    tests = [
        "assert add(2, 3) == 5",
        "assert errno_of(os.pipe) == 0",
        "assert errno_of(lambda: open('/tmp/x', 'w').write('x')) == 0",
        "assert raw(39) == 0",  # getpid
    ]
    run = await run_tests(CODE, tests, executor=SECCOMP, limits=LIMITS)
    assert run.outcome == "pass", run


def test_the_filter_names_what_it_refuses_and_refuses_an_unknown_machine():
    assert {"memfd_create", "shmget", "socketpair", "io_uring_setup"} <= set(DENIED)
    assert len(deny_filter("x86_64")) % 8 == 0
    with pytest.raises(SandboxError, match="no seccomp table for 'sparc64'"):
        deny_filter("sparc64")
