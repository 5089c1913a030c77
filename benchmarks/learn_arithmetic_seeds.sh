#!/usr/bin/env bash
# The learning demo over 3 seeds, one after another, then a summary table.
#
#   bash benchmarks/learn_arithmetic_seeds.sh [OUT_DIR] [STEPS]    # defaults: runs/learn_seeds 8
#
# Each seed runs examples/learn_arithmetic.py (SmolLM2 through run_training on the
# embedded server; needs `mint-envkit install-model smollm2`) and writes
# OUT_DIR/seed<N>/curve.json and curve.png. The summary (OUT_DIR/summary.md, also
# printed) gives per seed the held-out greedy correctness before and after where the base
# model is not cut off (the run's claim: the loop re-measures at a larger reply limit
# when the first eval cuts off more than 5%), split into format (parse rate) and content
# (correct among parsed), beside the best trivial baseline, with the base model's
# truncation, and the wall time and peak RSS.
# Run it on a quiet machine: the wall times are what it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/learn_seeds}
STEPS=${2:-8}
PY=${PYTHON:-python}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
for seed in 0 1 2; do
  echo "=== seed $seed ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
  mkdir -p "$OUT/seed$seed"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$OUT/seed$seed/time.txt" \
      "$PY" examples/learn_arithmetic.py --seed "$seed" --steps "$STEPS" --out "$OUT/seed$seed"
  else
    "$PY" examples/learn_arithmetic.py --seed "$seed" --steps "$STEPS" --out "$OUT/seed$seed"
  fi
done
"$PY" - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
curves = [json.loads((out / f"seed{s}" / "curve.json").read_text()) for s in (0, 1, 2)]


def rss(seed):
    path = out / f"seed{seed}" / "time.txt"
    if not path.is_file():
        return None
    for line in path.read_text().splitlines():
        if "Maximum resident set size" in line:
            return int(line.split(":")[-1]) / 1024**2  # KiB -> GiB
    return None


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


print(f"model {curves[0]['model']}, {len(curves[0]['steps'])} steps, training reply limit "
      f"{curves[0]['max_tokens']} tokens, held-out n={curves[0]['held_out']['n']} (greedy)")
print("| seed | at | base truncated | before | after | gain | format (parsed) | "
      "content (correct among parsed) | best trivial baseline | wall (s) | peak RSS (GiB) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
gains, walls = [], []
for c in curves:
    claim = c["held_out"]["claim"]
    rows = [("eval limit", claim["before"], claim["after"])]
    if claim["uncut_before"] is not None:
        rows.append(("re-measured", claim["uncut_before"], claim["uncut_after"]))
    for where, b, a in rows:
        gain = None if b["correct"] is None or a["correct"] is None else a["correct"] - b["correct"]
        fmt = f"{pct(b['parsed'])} -> {pct(a['parsed'])}"
        cb = None if not b["parsed"] else b["correct"] / b["parsed"]
        ca = None if not a["parsed"] else a["correct"] / a["parsed"]
        base = f"{pct(a['answers/baseline_correct'])} ({a['baseline_name']})"
        peak = rss(c["seed"])
        peak_text = "n/a" if peak is None else f"{peak:.2f}"
        gain_text = "n/a" if gain is None else f"{100 * gain:+.1f}"
        print(f"| {c['seed']} | {where}: {b['max_tokens']} tokens | {pct(b['truncated_rate'])} | "
              f"{pct(b['correct'])} | {pct(a['correct'])} | "
              f"{gain_text} | {fmt} | {pct(cb)} -> {pct(ca)} | {base} | {c['wall_s']:.0f} | "
              f"{peak_text} |")
    if claim["gain"] is not None:
        gains.append(100 * claim["gain"])
    walls.append(c["wall_s"])
if gains:
    print(f"gain where the base is not cut off: mean {statistics.mean(gains):+.1f} points, "
          f"min {min(gains):+.1f}, max {max(gains):+.1f}, std {statistics.pstdev(gains):.1f}")
print(f"wall: mean {statistics.mean(walls):.0f} s, max {max(walls):.0f} s")
PYEOF
