#!/usr/bin/env bash
# One-shot GPU check of the engine (issues #11, #21): run once on a machine with a CUDA GPU.
#
# Assumes the repository's venv (bash scripts/setup.sh, with a CUDA build of torch) at
# .venv or $VENV; installs nothing. Runs the engine tests that have CUDA variants (they
# skip on CPU-only machines); checks bf16 sampler fidelity after real LoRA updates on
# CUDA (sampled vs learner logprobs after 3, 6 and 9 SFT steps, at lr 1e-4 and 1e-3:
# the gap must stay under 0.03 max / 0.004 mean and not grow); then
# benchmarks/engine_speed.py --device cuda (sampling tokens/s at batch 1, 8, 64 x 128
# new tokens and training tokens/s, for the tiny model and the Qwen3-0.6B shape), and
# prints a summary. Results: benchmarks/results/engine_speed_cuda.json and gpu_check_*.log under
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
    tests/local/engine/test_engine_bf16_training.py \
    tests/local/engine/test_engine_decode.py \
    tests/local/engine/test_engine_kvcache.py \
    tests/local/engine/test_engine_numerics.py \
    tests/local/engine/test_engine_sampling.py 2>&1 | tee "$OUT_DIR/gpu_check_tests.log"
tests_rc=${PIPESTATUS[0]}
[ "$tests_rc" -eq 0 ] || status=1

"$PY" - <<'PY' 2>&1 | tee "$OUT_DIR/gpu_check_bf16_fidelity.log"
# bf16 (the engine's CUDA default) sampler vs learner after real updates (issue #21)
import sys
import torch
from mint_envkit.local import Engine

SMALL, PROMPT = "mint-envkit/tiny-qwen3-small", [2044] + [(37 * i + 11) % 2000 for i in range(15)]
engine = Engine(state_dir="/tmp/gpu_check_state", device="cuda")
bad = False
for lr in (1e-4, 1e-3):
    mid = engine.create_lora(SMALL, rank=8, seed=0)
    dtype = next(engine.registry.bases[SMALL].loaded.model.parameters()).dtype
    for k in range(1, 10):
        data = []
        for i in range(4):
            toks = [2044] + [(13 * i + 7 * j) % 2000 for j in range(12)]
            data.append({"model_input": toks[:-1],
                         "loss_fn_inputs": {"target_tokens": toks[1:], "weights": [1.0] * 12}})
        engine.forward(mid, data, "cross_entropy", None, backward=True)
        engine.optim_step(mid, learning_rate=lr)
        if k % 3:
            continue
        sid, _ = engine.save_for_sampler(mid, None)
        seqs = engine.sample(sid, PROMPT, num_samples=8, max_tokens=16, seed=1)
        data = [{"model_input": PROMPT + s.tokens[:-1],
                 "loss_fn_inputs": {"target_tokens": PROMPT[1:] + s.tokens,
                                    "weights": [1.0] * (len(PROMPT) - 1 + len(s.tokens))}}
                for s in seqs]
        out = engine.forward(mid, data, "cross_entropy", None, backward=False)
        gaps = [abs(a - b) for s, lp in zip(seqs, out.logprobs)
                for a, b in zip(list(lp)[-len(s.tokens):], s.logprobs)]
        worst, mean = max(gaps), sum(gaps) / len(gaps)
        bad |= worst >= 0.03 or mean >= 0.004
        print(f"bf16 fidelity {dtype} lr {lr:g} after {k} updates: max {worst:.4f} mean {mean:.5f}")
        engine.release_sampler(sid)
    engine.unload(mid)
sys.exit(1 if bad else 0)
PY
fidelity_rc=${PIPESTATUS[0]}
[ "$fidelity_rc" -eq 0 ] || status=1

"$PY" benchmarks/engine_speed.py --device cuda --shape both --batches 1,8,64 --repeats 3 2>&1 | tee "$OUT_DIR/gpu_check_speed.log"
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
echo "bf16 fidelity after updates: rc=$fidelity_rc"
grep -E '^bf16 fidelity' "$OUT_DIR/gpu_check_bf16_fidelity.log" || true
echo "engine_speed --device cuda: rc=$speed_rc"
grep -E '^\| (tiny|0\.6b) ' "$OUT_DIR/gpu_check_speed.log" || true
echo "aim (issue #11): 0.6b sampling >= 20,000 tokens/s at batch 64 x 128"
exit $status
