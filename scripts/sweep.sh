#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: the arithmetic RL sweep.
# With no MINT_API_KEY it trains on the embedded local backend (offline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local,plot
.venv/bin/python examples/rl_hyperparameters.py "$@"
