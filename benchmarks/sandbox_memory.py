"""How much host memory one hostile sandbox run can pin (issues 33 and 46).

Each attack runs once in ``BubblewrapExecutor`` with ``Limits(memory_mb=256,
file_mb=16, processes=--processes)`` and tries to pin ``--pin-mb`` MiB (default 1024) in
pieces of 15 MiB that no rlimit counts: files in ``/dev/shm``, files in ``/tmp``,
``memfd`` written with ``write()``, System V shared memory filled then detached, unix
socket buffers, user extended attributes on files in ``/tmp`` and ``/work`` (240 of
64 KiB a piece), and empty files and directories with 200-char names in ``/tmp`` and
``/work`` (20,000 a piece: inodes and dentries; "pinned" counts them as 15 MiB a piece
whatever they hold, the drop says what they held). A
thread samples the host's ``MemAvailable`` every 10 ms; the table gives the drop from
before the run to the lowest sample during it, what the code says it pinned, the most
the run's memory cgroup held (the kernel's own count, ``memory.max_usage_in_bytes``),
and how the run ended. The bound is ``memory_mb + 2 x file_mb`` = 288 MiB.

``--memory-cgroup off`` uses the seccomp filter instead of the run's memory cgroup.
``--src DIR`` runs the kit from another source tree (an export of an older commit:
``git archive COMMIT src | tar -x -C /tmp/old``), whose executor may not take the
new options; MemAvailable moves with everything else on the machine, so run it when
the machine is quiet and read the drop with that in mind.

Example::

    python benchmarks/sandbox_memory.py
    python benchmarks/sandbox_memory.py --memory-cgroup off
    python benchmarks/sandbox_memory.py --src /tmp/old/src
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine_info, table, write_result

PIN = """
PINNED = 0
def pin(make, total):
    global PINNED
    keep = []
    try:
        while PINNED < total:
            keep.append(make(len(keep)))
            PINNED += 15
            print("pinned", PINNED, flush=True)
    except OSError as err:
        print("stopped", err, flush=True)
    import time
    time.sleep(0.5)
"""

ATTACKS = {
    "files in /dev/shm": "def make(i):\n    with open(f'/dev/shm/f{i}', 'wb') as f:\n        f.write(b'x' * (15 << 20))",
    "files in /tmp": "def make(i):\n    with open(f'/tmp/f{i}', 'wb') as f:\n        f.write(b'x' * (15 << 20))",
    "memfd": "import os\ndef make(i):\n    fd = os.memfd_create('m')\n    os.write(fd, b'x' * (15 << 20))\n    return fd",
    "System V shm": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\n"
        "def make(i):\n    segment = libc.shmget(0, 15 << 20, 0o1600)\n"
        "    if segment < 0:\n        raise OSError(ctypes.get_errno(), 'shmget')\n"
        "    address = libc.shmat(segment, None, 0)\n    ctypes.memset(address, 1, 15 << 20)\n"
        "    libc.shmdt(ctypes.c_void_p(address))"
    ),
    "xattrs in /tmp and /work": (
        "import os\ndef make(i):\n    path = ('/tmp', '/work')[i % 2] + f'/x{i}'\n"
        "    open(path, 'w').close()\n"
        "    for k in range(240):\n        os.setxattr(path, f'user.k{k}', b'x' * (64 << 10))"
    ),
    "empty files in /tmp and /work": (
        "import os\ndef make(i):\n    top = ('/tmp', '/work')[i % 2] + f'/d{i}'\n    os.mkdir(top)\n"
        "    for k in range(20000):\n        open(f'{top}/{k:0200d}', 'w').close()"
    ),
    "unix socket buffers": (
        "import socket\ndef make(i):\n    pairs = []\n    while len(pairs) < 2:\n"
        "        a, b = socket.socketpair()\n        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)\n"
        "        a.setblocking(False)\n        try:\n            while True:\n                a.send(b'x' * 65536)\n"
        "        except BlockingIOError:\n            pairs.append((a, b))\n    return pairs"
    ),
}  # fmt: skip
"""Each ``make`` pins about 15 MiB (the socket one: two pairs' buffers, about 15 MiB here)."""

CHILD = r"""
import asyncio, json, sys, threading, time
from mint_envkit.sandbox import BubblewrapExecutor, Limits

def available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable"):
                return int(line.split()[1]) >> 10

PEAKS = []
try:  # the new executor: record each run cgroup's peak (the kernel's count) before it goes
    from mint_envkit.sandbox.cgroups import RunCgroup
    _close = RunCgroup.close
    async def _closing(self):
        PEAKS.append(self.peak_bytes() >> 20)
        await _close(self)
    RunCgroup.close = _closing
except ImportError:
    pass

async def main(mode, pin_mb, attacks, pin, processes):
    try:
        executor = BubblewrapExecutor(max_concurrency=1, memory_cgroup=("auto" if mode == "auto" else False))
        bound = executor.memory_bound
    except TypeError:  # an older executor without the option
        executor, bound = BubblewrapExecutor(max_concurrency=1), "rlimits only"
    limits = Limits(wall_s=60, cpu_s=30, memory_mb=256, file_mb=16, processes=processes)
    rows = []
    for name, code in attacks.items():
        before = sorted(available() for _ in range(5))[2]
        lowest, stop = [before], threading.Event()
        def watch():
            while not stop.is_set():
                lowest[0] = min(lowest[0], available())
                time.sleep(0.01)
        watcher = threading.Thread(target=watch)
        watcher.start()
        del PEAKS[:]
        result = await executor.run(pin + code + f"\npin(make, {pin_mb})", "", limits)
        stop.set()
        watcher.join()
        pinned = [int(l.split()[1]) for l in result.stdout.splitlines() if l.startswith("pinned ")]
        last = [l for l in result.stdout.splitlines() if l.startswith("stopped")][-1:]
        rows.append({
            "attack": name, "drop_mb": before - lowest[0], "pinned_mb": max(pinned, default=0),
            "cgroup_peak_mb": PEAKS[0] if PEAKS else None,
            "exit_code": result.exit_code, "status": result.status,
            "end": (result.message or (last[0] if last else ""))[:90],
        })
    scratch = getattr(executor, "scratch", "bwrap")
    print(json.dumps({"bound": bound, "scratch": scratch, "rows": rows}))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
"""


def main() -> None:
    import json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory-cgroup", choices=("auto", "off"), default="auto")
    parser.add_argument("--pin-mb", type=int, default=1024)
    parser.add_argument("--processes", type=int, default=16, help="Limits.processes")
    parser.add_argument("--attack", action="append", choices=sorted(ATTACKS), help="only these")
    parser.add_argument(
        "--as-user", type=int, default=None,
        help="run the sandbox as this uid (from root, with setpriv): the seccomp mode a non-root user gets",
    )  # fmt: skip
    parser.add_argument("--src", default=str(ROOT / "src"), help="the kit's source tree")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    attacks = {name: ATTACKS[name] for name in (args.attack or ATTACKS)}
    env = {**os.environ, "PYTHONPATH": args.src}
    python = [sys.executable]
    if args.as_user is not None:  # the system interpreter, with the venv's packages
        site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{args.src}:{site}"}
        user = str(args.as_user)
        python = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups", "/usr/bin/python3"]
    argv = [*python, "-c", CHILD, args.memory_cgroup, str(args.pin_mb)]
    done = subprocess.run(
        [*argv, json.dumps(attacks), PIN, str(args.processes)],
        env=env, capture_output=True, text=True, check=True, cwd="/",
    )  # fmt: skip
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"memory bound: {report['bound']} (scratch mounts: {report['scratch']}); "
        f"Limits(memory_mb=256, file_mb=16, processes={args.processes})"
    )
    headers = ("attack", "MemAvailable drop MB", "pinned MB", "cgroup peak MB", "exit", "ended")
    rows = [
        (r["attack"], r["drop_mb"], r["pinned_mb"], r["cgroup_peak_mb"], r["exit_code"], r["end"])
        for r in report["rows"]
    ]
    print(table(headers, rows))
    data = {"machine": machine_info(), "src": args.src, **vars(args), **report}
    print("wrote", write_result("sandbox_memory", data, args.out))


if __name__ == "__main__":
    main()
