"""The ``mint-envkit`` tree: one parser, each command a module of ``mint_envkit.cli``."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

from mint_envkit.cli import COMMANDS, main, parser


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_is_a_module_of_the_cli_package(name, capsys):
    module = importlib.import_module(f"mint_envkit.cli.{COMMANDS[name][0]}")
    assert callable(module.configure) and callable(module.run)
    assert main([name, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: mint-envkit {name} ")


def test_the_chosen_command_runs_its_module():
    args = parser().parse_args(["view", "runs/x"])
    assert args.command == "view" and args.run_dir == "runs/x"


def test_usage_errors_exit_2_naming_the_command(capsys):
    assert main(["view"]) == 2
    assert "mint-envkit view: error: the following arguments are required: RUN_DIR" in (
        capsys.readouterr().err
    )
    assert main(["nope"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    assert main(["summary", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: mint-envkit summary [-h] [--json] SWEEP_DIR")


def test_the_light_commands_never_import_torch():
    """Only the chosen command's module is imported: view, summary and help stay light."""
    code = textwrap.dedent(
        """
        import contextlib, io, sys
        from mint_envkit.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for argv in (["--help"], ["view", "--help"], ["summary", "/nowhere"],
                         ["checkpoints", "--help"], ["eval", "--help"], ["install-model", "-h"]):
                main(argv)
        print(sorted(m for m in ("torch", "mint_envkit.local.http") if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TINKER_TELEMETRY": "0"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
