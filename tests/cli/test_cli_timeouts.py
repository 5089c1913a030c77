"""``check`` and ``rescore`` take ``--timeout`` and ``load_environment`` a ``load_timeout_s``
(issue 46: none had one, so an env that hangs at import or in its reward hung the
command for good). The CLI runs in a subprocess here: its watchdog ends the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from env_packages import fake_env_package
from mint_envkit import ConfigError, load_environment

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = json.dumps({"question": "What is 2 + 3?", "answer": "5"})
HANGS_AT_IMPORT = "import time\ntime.sleep(600)\n"
HANGS_IN_REWARD = (
    "import time\n"
    "from mint_envkit import SingleTurnEnv, component\n"
    "def slow(completion, answer):\n"
    "    time.sleep(600)\n"
    "    return 1.0\n"
    "class SlowEnv(SingleTurnEnv):\n"
    "    reward_fn = component(slow, bounds=(0.0, 1.0))\n"
)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "mint_envkit.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)


def test_check_gives_up_on_an_env_that_hangs_at_import_with_exit_2(tmp_path: Path):
    module = tmp_path / "hangs.py"
    module.write_text(HANGS_AT_IMPORT)
    done = _cli("check", f"{module}:Env", "--problem", PROBLEM, "--timeout", "3")
    assert done.returncode == 2, done.stderr
    assert f"gave up after 3 s (--timeout) while loading {module}:Env" in done.stderr


def test_check_gives_up_on_a_reward_that_hangs_with_exit_1(tmp_path: Path):
    module = tmp_path / "slow.py"
    module.write_text(HANGS_IN_REWARD)
    done = _cli(
        "check", f"{module}:SlowEnv", "--problem", PROBLEM, "--reply", "5", "--timeout", "8"
    )
    assert done.returncode == 1, done.stderr
    assert "gave up after 8 s (--timeout) while checking" in done.stderr


def test_rescore_gives_up_on_an_env_that_hangs_at_import(tmp_path: Path):
    module = tmp_path / "hangs.py"
    module.write_text(HANGS_AT_IMPORT)
    done = _cli("rescore", str(tmp_path), f"{module}:Env", "--timeout", "3")
    assert done.returncode == 2, done.stderr
    assert "gave up after 3 s (--timeout) while loading" in done.stderr


@pytest.mark.parametrize("flag", ["0", "-1", "inf", "nan"])
def test_a_bad_timeout_is_a_usage_error(flag: str, capsys):
    from mint_envkit.cli import main

    assert main(["check", "examples/arithmetic_env.py:ArithmeticEnv", f"--timeout={flag}"]) == 2
    assert "--timeout must be a positive number of seconds" in capsys.readouterr().err


def test_load_environment_takes_a_timeout_and_names_an_exit(monkeypatch, tmp_path: Path):
    fake_env_package(monkeypatch, tmp_path, "hangs", source=HANGS_AT_IMPORT)
    fake_env_package(monkeypatch, tmp_path, "exits", source="import sys\nsys.exit(7)\n")
    with pytest.raises(ConfigError, match=r"env 'hangs' .* did not load within 1 s"):
        load_environment("hangs", load_timeout_s=1.0)
    with pytest.raises(ConfigError, match=r"SystemExit: sys.exit\(7\)"):
        load_environment("exits")
    with pytest.raises(ConfigError, match="load_timeout_s must be a positive number"):
        load_environment("exits", load_timeout_s=0)
