"""How long one plain sandbox run takes: ``run_tests`` of a right ``add`` against one test.

Runs ``--runs`` (default 20) in a row in one process and prints the median, min and
max wall time, bwrap's start, the memory cgroup and the uid lease included. ``--src DIR``
runs the kit from another source tree (an export of an older commit, ``git archive
COMMIT src | tar -x -C /tmp/old``), to alternate the two.

Example::

    python benchmarks/sandbox_speed.py
    python benchmarks/sandbox_speed.py --src /tmp/old/src
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import asyncio, statistics, sys, time
from mint_envkit.sandbox import BubblewrapExecutor, run_tests

async def main(runs):
    executor = BubblewrapExecutor(max_concurrency=1)
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        run = await run_tests("def add(a, b):\\n    return a + b", ["assert add(2, 3) == 5"],
                              executor=executor)
        seconds.append(time.perf_counter() - started)
        assert run.outcome == "pass", run
    print(f"median {statistics.median(seconds):.3f} s, min {min(seconds):.3f}, "
          f"max {max(seconds):.3f} ({runs} runs)")

asyncio.run(main(int(sys.argv[1])))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": args.src}
    subprocess.run([sys.executable, "-c", CHILD, str(args.runs)], env=env, check=True)
    print(f"load average {os.getloadavg()[0]:.1f}, sources {args.src}")


if __name__ == "__main__":
    main()
