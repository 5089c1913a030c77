#!/usr/bin/env bash
# The learning demo (examples/learn_arithmetic.py --seed 0), alternating: a base commit's
# tree vs this one, with 1 and 2 torch threads (docs/benchmarks.md 9b). Each run under
# /tmp/mint-heavy.lock and /usr/bin/time -v; wall, peak RSS and held-out lines go to $OUT/log.
#   git worktree add /tmp/base_e52 e52fcb1
#   BASE=/tmp/base_e52 bash benchmarks/learn_arithmetic_vs_base.sh
# TWO_THREADS=0 skips the 2-thread runs; ROUNDS="1 2 3" runs three rounds (default two).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
base=${BASE:-/tmp/base_e52}
out=${OUT:-/tmp/demo_bench}
python="$here/.venv/bin/python"
mkdir -p "$out"
run() { # label tree [VAR=value ...]
  local label=$1 tree=$2
  shift 2
  echo "== $label $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/log"
  (cd "$tree" && flock /tmp/mint-heavy.lock /usr/bin/time -v env PYTHONPATH="$tree/src" "$@" \
    "$python" examples/learn_arithmetic.py --seed 0 --out "$out/$label") >"$out/$label.txt" 2>&1
  grep -E "Elapsed|Maximum resident|held-out greedy|step ./8" "$out/$label.txt" >>"$out/log"
}
for round in ${ROUNDS:-1 2}; do
  run "before$round" "$base"
  run "after$round" "$here"
  if [ "${TWO_THREADS:-1}" != 0 ]; then
    run "after${round}_t2" "$here" MINT_ENVKIT_NUM_THREADS=2
  fi
done
echo done >>"$out/log"
