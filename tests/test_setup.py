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

# A stand-in for .venv/bin/python: logs its arguments; pip from the CPU index fails
# (unreachable) when FAIL_CPU_INDEX is set; torch-build reports a CPU build.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
case "$*" in
  *--index-url*) [ -z "${FAIL_CPU_INDEX:-}" ] ;;
  *"setup_stamp.py torch-build"*) echo "torch 2.13.0+cpu (CPU build)" ;;
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


def test_setup_installs_cpu_torch_then_skips(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    first = run_setup(root, log)
    assert first.returncode == 0, first.stderr
    calls = log.read_text().splitlines()
    pip = [call for call in calls if call.startswith("-m pip install")]
    assert "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in pip[1]
    assert pip[2] == "-m pip install -q -e .[local,plot]"
    assert "setup: installed torch 2.13.0+cpu (CPU build), extras local,plot" in first.stdout
    log.unlink()
    second = run_setup(root, log)
    assert second.returncode == 0 and "up to date" in second.stdout
    assert not log.exists()  # nothing ran in the venv: no pip, so no index needed


def test_setup_falls_back_to_the_default_index(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    done = run_setup(root, log, FAIL_CPU_INDEX="1")
    assert done.returncode == 0, done.stderr
    assert "CPU index" in done.stderr and "unreachable" in done.stderr
    pip = [c for c in log.read_text().splitlines() if c.startswith("-m pip install")]
    assert pip[1].endswith("--index-url https://download.pytorch.org/whl/cpu torch==2.13.0")
    assert pip[2] == "-m pip install -q torch==2.13.0"
    assert pip[3].startswith("-m pip install -q -e ")


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
    assert "-m pip install -q -e .[dev,local,plot]" in log.read_text().splitlines()
