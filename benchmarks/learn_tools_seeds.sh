#!/usr/bin/env bash
# Tool use that learns locally (issue 18, item 2) over 3 seeds, then a summary table.
#
#   bash benchmarks/learn_tools_seeds.sh [OUT_DIR] [STEPS] [EXTRA ARGS...]   # defaults: runs/learn_tools_seeds 4
#
# Each seed runs examples/learn_tools.py (SmolLM2 learns to call a `multiply` tool, through
# run_training on the embedded server; needs `mint-envkit install-model smollm2`) under
# `flock /tmp/mint-heavy.lock` (one heavy job at a time on a shared machine; with
# LOCK=/dev/null and the whole script under one outer flock, the three seeds run in one
# hold of the lock) and writes OUT_DIR/seed<N>/curve.json. The summary
# (OUT_DIR/summary.md, also printed) gives per seed, on the held-out problems (greedy):
# correctness, tool-call rate and all-calls-ran rate before and after, the best
# constant-answer baseline, and the wall time; then the means.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/learn_tools_seeds}
STEPS=${2:-4}
shift $(( $# > 2 ? 2 : $# ))
PY=${PYTHON:-python}
LOCK=${LOCK:-/tmp/mint-heavy.lock}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
for seed in 0 1 2; do
  echo "=== seed $seed ($(date -u +%H:%M:%S))"
  flock "$LOCK" "$PY" examples/learn_tools.py --seed "$seed" --steps "$STEPS" \
    --out "$OUT/seed$seed" "$@"
done
"$PY" - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
curves = [json.loads((out / f"seed{s}" / "curve.json").read_text()) for s in (0, 1, 2)]
c0 = curves[0]
print(f"model {c0['model']}, {len(c0['steps'])} steps, held-out n={c0['held_out']['n']} (greedy)")
print("| seed | correct before | correct after | tool-call rate before | after "
      "| all calls ran before | after | constant baseline | wall (s) |")
print("|---|---|---|---|---|---|---|---|---|")
rows = []
for c in curves:
    b, a = c["held_out"]["before"], c["held_out"]["after"]
    base = max(b.get("answers/baseline_correct") or 0.0, a.get("answers/baseline_correct") or 0.0)
    rows.append((b, a))
    print(f"| {c['seed']} | {b['correct']:.1%} | {a['correct']:.1%} | {b['tool_call_rate']:.1%} "
          f"| {a['tool_call_rate']:.1%} | {b['tool_ok_rate']:.1%} | {a['tool_ok_rate']:.1%} "
          f"| {base:.1%} | {c['wall_s']:.0f} |")
def mean(key, when):
    return statistics.mean(r[when][key] for r in rows)
for key in ("correct", "tool_call_rate", "tool_ok_rate"):
    print(f"{key}: mean before {mean(key, 0):.1%}, after {mean(key, 1):.1%} "
          f"({100 * (mean(key, 1) - mean(key, 0)):+.1f} points)")
PYEOF
