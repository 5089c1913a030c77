#!/usr/bin/env bash
# Set up (scripts/setup.sh with the dev extra) and run the whole test suite.
# The tests run in parallel (pytest-xdist), one worker more than the CPUs, at most 5: about
# a fifth of a worker's time is spent waiting on subprocesses and servers, and the extra
# worker fills it (2 cores: 3 workers 432 s, 2 workers 508 s; docs/benchmarks.md).
# MINT_ENVKIT_TEST_WORKERS=N sets the number (0: in this process, one after another).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local,plot,gguf,math,datasets,mcp,tensorboard,wandb,mlflow,reasoning-gym,cookbook,trl,verifiers,textarena,dev
.venv/bin/python -m ruff check src tests examples benchmarks scripts
.venv/bin/python -m ruff format --check src tests examples benchmarks scripts
cpus=$(nproc 2>/dev/null || echo 2)
workers=${MINT_ENVKIT_TEST_WORKERS:-$((cpus < 4 ? cpus + 1 : 5))}
.venv/bin/python -m pytest -q -n "$workers" --durations=15 "$@"
