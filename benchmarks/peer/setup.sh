#!/usr/bin/env bash
# Create benchmarks/peer/.venv (tinker-cookbook 0.3.0 + mint 0.2.0 + torch 2.13.0)
# when it is missing. Safe to run again: an existing, complete venv is kept.
# torch is installed first and pinned: an unpinned one pulls a multi-GB CUDA build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import tinker_cookbook, mint, torch" 2>/dev/null; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q torch==2.13.0
"$venv/bin/python" -m pip install -q -r "$here/requirements.txt"
"$venv/bin/python" -c "import tinker_cookbook, mint, torch; print('peer venv ready:', torch.__version__)"
