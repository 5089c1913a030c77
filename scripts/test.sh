#!/usr/bin/env bash
# Set up (scripts/setup.sh with the dev extra) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local,plot,gguf,math,datasets,mcp,tensorboard,wandb,mlflow,reasoning-gym,dev
.venv/bin/python -m ruff check src tests examples benchmarks scripts
.venv/bin/python -m ruff format --check src tests examples benchmarks scripts
.venv/bin/python -m pytest -q --durations=15 "$@"
