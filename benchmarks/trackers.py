"""What each experiment tracker of ``Config.loggers`` costs: opening it, one row, closing.

Each tracker in its own fresh process (its imports counted in the opening), in a fresh
temporary run directory, offline (no W&B key, no MLflow server): open, ``--rows`` rows of
``--numbers`` numbers each, close. Numbers in docs/tracking.md.

    python benchmarks/trackers.py [--rows 50] [--numbers 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ONE = r"""
import sys, time
from mint_envkit.runs.trackers import open_trackers
name, folder, rows, numbers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = time.perf_counter()
trackers = open_trackers((name,), folder, {"learning_rate": 1e-4})
opened = time.perf_counter() - t
row = {f"env/all/m{i}": i * 0.5 for i in range(numbers)}
t = time.perf_counter()
for step in range(rows):
    trackers.log({"step": step, **row}, step=step)
per_row = (time.perf_counter() - t) / rows
t = time.perf_counter()
trackers.close()
closed = time.perf_counter() - t
print(f"{name:<12} open {opened:6.2f} s   log {per_row * 1000:6.1f} ms/row   close {closed:5.2f} s")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--numbers", type=int, default=100)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "MLFLOW_"))}
    print(f"{args.rows} rows of {args.numbers} numbers; load average {os.getloadavg()[0]:.1f}")
    for name in ("tensorboard", "wandb", "mlflow"):
        with tempfile.TemporaryDirectory() as folder:
            env["WANDB_CONFIG_DIR"] = os.path.join(folder, "wandb-config")
            command = [sys.executable, "-c", ONE, name, folder, str(args.rows), str(args.numbers)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
            print(done.stdout.strip() or f"{name}: failed\n{done.stderr[-2000:]}")


if __name__ == "__main__":
    main()
