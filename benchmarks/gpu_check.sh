#!/usr/bin/env bash
# One-shot GPU check of the engine (issue #11): run once on a machine with a CUDA GPU.
#
# Assumes the repository's venv (bash scripts/setup.sh, with a CUDA build of torch) at
# .venv or $VENV; installs nothing. Runs the engine tests that have CUDA variants (they
# skip on CPU-only machines), then benchmarks/engine_speed.py --device cuda, and prints a
# summary. Results: benchmarks/results/engine_speed_cuda.json and gpu_check_*.log under
# $OUT_DIR (default benchmarks/results). Put the figures in docs/benchmarks.md with the
# date and the machine.
#
#   bash benchmarks/gpu_check.sh            # about 5 minutes on an H200
#   COMPILE=1 bash benchmarks/gpu_check.sh  # also the torch.compile (CUDA graphs) step
set -u
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
OUT_DIR="${OUT_DIR:-benchmarks/results}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

"$PY" - <<'PY' || { echo "gpu_check: no CUDA device visible to torch; nothing to check"; exit 2; }
import torch, sys
ok = torch.cuda.is_available()
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "device", torch.cuda.get_device_name(0) if ok else None)
sys.exit(0 if ok else 1)
PY

status=0
"$PY" -m pytest -q -p no:cacheprovider -rs \
    tests/local/engine/test_engine_cuda.py \
    tests/local/engine/test_engine_decode.py \
    tests/local/engine/test_engine_kvcache.py \
    tests/local/engine/test_engine_numerics.py \
    tests/local/engine/test_engine_sampling.py 2>&1 | tee "$OUT_DIR/gpu_check_tests.log"
tests_rc=${PIPESTATUS[0]}
[ "$tests_rc" -eq 0 ] || status=1

"$PY" benchmarks/engine_speed.py --device cuda --repeats 3 2>&1 | tee "$OUT_DIR/gpu_check_speed.log"
speed_rc=${PIPESTATUS[0]}
[ "$speed_rc" -eq 0 ] || status=1

if [ "${COMPILE:-0}" = "1" ]; then
    MINT_ENVKIT_COMPILE=1 "$PY" benchmarks/engine_speed.py --device cuda --shape 0.6b \
        --repeats 3 --out "$OUT_DIR/engine_speed_cuda_compiled.json" 2>&1 \
        | tee "$OUT_DIR/gpu_check_speed_compiled.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

echo
echo "== gpu_check summary =="
echo "tests: rc=$tests_rc ($(tail -n 1 "$OUT_DIR/gpu_check_tests.log"))"
echo "engine_speed --device cuda: rc=$speed_rc"
grep -E '^\| (tiny|0\.6b) ' "$OUT_DIR/gpu_check_speed.log" || true
echo "aim (issue #11): 0.6b sampling >= 20,000 tokens/s at batch 64 x 128"
exit $status
