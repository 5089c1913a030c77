"""The suite's own rules (tests/conftest.py): pinned numerics, skips by decision only,
a time limit on every test. Each runs pytest on a scratch project with our conftest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")


def run_scratch(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    """pytest on one test file beside a copy of our conftest; the result with its output."""
    project = tmp_path / "tests"
    (project / "local" / "engine").mkdir(parents=True)
    shutil.copy(CONFTEST, project / "conftest.py")
    (project / "local" / "engine" / "test_engine_cuda.py").write_text(
        "import pytest\n\n@pytest.mark.skipif(True, reason='needs a CUDA device (none)')\n"
        "def test_gpu():\n    pass\n"
    )
    (project / "test_scratch.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    # only the plugins these rules use (xdist, timeout): loading every installed one
    # (hypothesis, asyncio, anyio...) in each process was most of a scratch run's time
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    plugins = ["-p", "xdist.plugin", "-p", "pytest_timeout", "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins, str(project), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_suite_pins_mkl_before_torch_is_loaded():
    assert os.environ["MKL_CBWR"]  # set by tests/conftest.py (or by hand, kept)


def test_only_allowed_skips_pass(tmp_path: Path):
    allowed = run_scratch(tmp_path, "def test_ok():\n    assert 1\n")
    assert allowed.returncode == 0, allowed.stdout
    assert "1 passed, 1 skipped" in allowed.stdout


def test_a_skip_that_is_not_allowed_fails_the_session(tmp_path: Path):
    body = "import pytest\n\ndef test_browser():\n    pytest.skip('no Chromium here')\n"
    done = run_scratch(tmp_path, body)
    assert done.returncode == 1, done.stdout
    assert "test_scratch.py::test_browser: Skipped: no Chromium here" in done.stdout
    assert "ALLOWED_SKIPS" in done.stdout


def test_a_skip_that_is_not_allowed_fails_a_parallel_session_too(tmp_path: Path):
    # scripts/test.sh runs pytest-xdist workers: the rule holds in the controller
    body = "import pytest\n\ndef test_browser():\n    pytest.skip('no Chromium here')\n"
    done = run_scratch(tmp_path, body, "-n", "2")
    assert done.returncode == 1, done.stdout
    assert "test_scratch.py::test_browser: Skipped: no Chromium here" in done.stdout
    allowed = run_scratch(tmp_path / "ok", "def test_ok():\n    assert 1\n", "-n", "2")
    assert allowed.returncode == 0, allowed.stdout


def test_the_scratch_sees_mkl_pinned(tmp_path: Path):
    body = "import os\n\ndef test_pin():\n    assert os.environ['MKL_CBWR'] == 'AVX2,STRICT'\n"
    assert run_scratch(tmp_path, body).returncode == 0


@pytest.mark.timeout(60)
def test_a_test_that_hangs_fails_at_its_timeout(tmp_path: Path):
    body = "import time, pytest\n\n@pytest.mark.timeout(1)\ndef test_hang():\n    time.sleep(30)\n"
    done = run_scratch(tmp_path, body, "-o", "timeout=1")
    assert done.returncode == 1 and "Timeout" in done.stdout, done.stdout
