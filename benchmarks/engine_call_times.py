"""Time every ``Engine`` call of an example run in this process (issue 21).

Wraps the engine's public methods with timers, runs the example script with the
given arguments, and prints per method the number of calls and the seconds spent.
The embedded server runs in the example's process, so this sees all its engine work.

Example::

    python benchmarks/engine_call_times.py examples/learn_arithmetic.py --seed 0
"""

from __future__ import annotations

import atexit
import collections
import runpy
import sys
import time
from typing import Any

from mint_envkit.local.engine import core

METHODS = [
    "sample_many",
    "compute_logprobs",
    "forward",
    "optim_step",
    "save_for_sampler",
    "create_sampler",
    "ensure_base_model",
    "create_lora",
    "sample",
]
STATS: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
T0 = time.perf_counter()


def _timed(name: str) -> None:
    method = getattr(core.Engine, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            STATS[name][0] += 1
            STATS[name][1] += time.perf_counter() - t0

    setattr(core.Engine, name, wrapper)


@atexit.register
def _report() -> None:
    print(f"=== engine calls (wall {time.perf_counter() - T0:.1f} s)", file=sys.stderr)
    for name, (calls, seconds) in sorted(STATS.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:20s} calls {int(calls):5d}  {seconds:8.2f} s", file=sys.stderr)


if __name__ == "__main__":
    for method_name in METHODS:
        _timed(method_name)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
