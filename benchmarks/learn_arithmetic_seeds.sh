#!/usr/bin/env bash
# The learning demo over 3 seeds, one after another, then a summary table.
#
#   bash benchmarks/learn_arithmetic_seeds.sh [OUT_DIR] [STEPS]    # defaults: runs/learn_seeds 8
#
# Each seed runs examples/learn_arithmetic.py (SmolLM2 through run_training on the
# embedded server; needs `mint-envkit install-model smollm2`) and writes
# OUT_DIR/seed<N>/curve.json and curve.png. The summary (OUT_DIR/summary.md, also
# printed) gives per seed the held-out greedy correctness before and after and the
# wall time, then the mean and spread (min-max, population std) of the rise.
# Target (issue 13): a rise of >= 40 points within 10 minutes wall, over 3 seeds.
# Run it on a quiet machine: the wall times are what it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/learn_seeds}
STEPS=${2:-8}
PY=${PYTHON:-python}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
for seed in 0 1 2; do
  echo "=== seed $seed ($(date -u +%H:%M:%S))"
  "$PY" examples/learn_arithmetic.py --seed "$seed" --steps "$STEPS" --out "$OUT/seed$seed"
done
"$PY" - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
curves = [json.loads((out / f"seed{s}" / "curve.json").read_text()) for s in (0, 1, 2)]
print(f"model {curves[0]['model']}, {len(curves[0]['steps'])} steps, "
      f"held-out n={curves[0]['held_out']['n']} (greedy)")
print("| seed | before | after | rise (points) | wall (s) |")
print("|---|---|---|---|---|")
rises, walls = [], []
for c in curves:
    before, after = c["held_out"]["before"]["correct"], c["held_out"]["after"]["correct"]
    rises.append(100 * (after - before))
    walls.append(c["wall_s"])
    print(f"| {c['seed']} | {before:.1%} | {after:.1%} | {rises[-1]:+.1f} | {c['wall_s']:.0f} |")
print(f"rise: mean {statistics.mean(rises):+.1f} points, min {min(rises):+.1f}, "
      f"max {max(rises):+.1f}, std {statistics.pstdev(rises):.1f}")
print(f"wall: mean {statistics.mean(walls):.0f} s, max {max(walls):.0f} s")
ok = min(rises) >= 40 and max(walls) <= 600
print("target (>= 40 points within 600 s on every seed):", "met" if ok else "NOT met")
PYEOF
