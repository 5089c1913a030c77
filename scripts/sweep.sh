#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: the arithmetic RL sweep.
# With no MINT_API_KEY it trains SmolLM2-135M-Instruct on the embedded local backend
# (offline); with MINT_API_KEY set, Qwen/Qwen3-0.6B on MinT. Arguments go to the example:
# --fresh deletes the earlier results and the checkpoints they saved first (a rerun without
# it trains nothing and says so), --tiny is the smoke run on the random tiny model (in its
# own results folder), --loop cookbook trains each config with tinker-cookbook's
# rl.train.main instead of ours.
set -euo pipefail
cd "$(dirname "$0")/.."
# --loop cookbook trains each config with tinker-cookbook's own loop: the cookbook extra too.
extras=local,plot
case " $* " in *" --loop cookbook "* | *" --loop=cookbook "*) extras=local,plot,cookbook ;; esac
bash scripts/setup.sh "$extras"
.venv/bin/python examples/rl_hyperparameters.py "$@"
