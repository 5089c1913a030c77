#!/usr/bin/env bash
# Create .venv and install mint_envkit with the embedded backend.
# torch is pinned and installed first: the CPU build of 2.13.0 is what this
# project is tested with; an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local,plot}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e ".[${extras}]"
