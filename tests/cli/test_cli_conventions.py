"""One convention in every ``mint-envkit`` command, walked command by command.

``--json`` is a flag that prints JSON on stdout (``--out`` writes files); the exit codes
are those of ``EXIT_CODES`` (0 ok, 1 findings, 2 usage or setup error, 3 internal error);
a command that takes an ENV_SPEC takes ``--env-args``, and an env file that does not
import is one line naming the file, the line and the error; errors name flags, not
Python parameters; ``--version``; a top-level ``--help`` for users.
"""

from __future__ import annotations

import argparse
import importlib
import json
import textwrap

import pytest

from env_packages import fake_env_package
from mint_envkit.cli import COMMANDS, EPILOG, main, parser
from mint_envkit.cli.command import EXIT_CODES, flag_names
from mint_envkit.runs.files import RunFiles

NAMES = sorted(COMMANDS)
NO_JSON = {
    "serve": "it runs a server until stopped; its URL is its output",
    "install-model": "it runs pip; pip's output is its output",
    "check": "it prints transcripts for a person; --record writes them as JSON lines",
}
"""The commands without ``--json``, and why."""


def command_parser(name: str) -> argparse.ArgumentParser:
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices[name]
    command.format_help()  # adds the command's options (they are added on first use)
    return command


def options(name: str) -> dict[str, argparse.Action]:
    return {
        flag: action for action in command_parser(name)._actions for flag in action.option_strings
    }


def takes_an_env(name: str) -> bool:
    return any(a.dest == "target" for a in command_parser(name)._actions)


ENV_COMMANDS = [name for name in NAMES if takes_an_env(name)]


def test_the_commands_that_take_an_env_are_known():
    assert ENV_COMMANDS == ["audit", "check", "eval", "interpolate", "rescore"]


@pytest.mark.parametrize("name", NAMES)
def test_help_is_0_and_an_unknown_flag_is_a_usage_error_2(name, capsys):
    assert main([name, "--help"]) == 0
    capsys.readouterr()
    assert main([name, "--no-such-flag"]) == 2
    assert "error: " in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_json_is_a_flag_that_prints_and_out_writes(name):
    found = options(name)
    if name == "checkpoints":  # its subcommand list prints
        found = {**found, **_sub_options("checkpoints", "list")}
    if name in NO_JSON:
        assert "--json" not in found, f"{name} has --json: take it out of NO_JSON"
        return
    assert "--json" in found, f"mint-envkit {name} has no --json"
    assert found["--json"].nargs == 0, f"{name}: --json takes no value (--out writes files)"


def _sub_options(name: str, sub: str) -> dict[str, argparse.Action]:
    command = command_parser(name)
    subs = next(a for a in command._actions if isinstance(a, argparse._SubParsersAction))
    return {f: a for a in subs.choices[sub]._actions for f in a.option_strings}


@pytest.mark.parametrize("name", ENV_COMMANDS)
def test_every_command_taking_an_env_takes_env_args(name, capsys):
    assert "--env-args" in options(name)
    argv = [*_argv(name, "x.py:Env"), "--env-args", "[1, 2]"]
    assert main(argv) == 2
    assert "argument --env-args: a JSON object ({...}), got '[1, 2]'" in capsys.readouterr().err


def _argv(name: str, spec: str, tmp_path=None) -> list[str]:
    where = str(tmp_path or ".")
    return {
        "audit": ["audit", spec, "--sample-model", "none"],
        "check": ["check", spec],
        "eval": ["eval", spec, "--out", where],
        "interpolate": ["interpolate", spec, "--model", "m", "--checkpoint", "a", "--out", where],
        "rescore": ["rescore", where, spec],
    }[name]


@pytest.mark.parametrize("name", ENV_COMMANDS)
def test_an_env_file_that_does_not_import_is_one_line_exit_2(name, tmp_path, capsys):
    bad = tmp_path / "broken_env.py"
    bad.write_text("import mint_envkit\n\nWORDS = ['a']\nN = len(WORD)\n")
    (tmp_path / "rollouts.jsonl").write_text("")

    assert main(_argv(name, f"{bad}:Env", tmp_path)) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line, no traceback
    assert f"{bad}:4: NameError: name 'WORD' is not defined" in err


@pytest.mark.parametrize("name", ENV_COMMANDS)
def test_did_you_mean_an_installed_env(name, monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "units-demo")
    (tmp_path / "rollouts.jsonl").write_text("")
    assert main(_argv(name, "units_demo", tmp_path)) == 2
    assert "did you mean 'units-demo'?" in capsys.readouterr().err


def test_env_args_reach_load_environment(monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")
    argv = ["check", "sums", "--reply", "4", "--groups", "1"]
    assert main([*argv, "--env-args", '{"group_size": 3}']) == 0
    assert "--- group" in capsys.readouterr().out
    assert main([*argv, "--env-args", '{"no_such_option": 3}']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "{'no_such_option': 3}" in err
    # an env class takes no load_environment arguments: said with the flag
    spec = "examples/arithmetic_env.py:ArithmeticEnv"
    assert main(["check", spec, "--env-args", "{}"]) == 2
    err = capsys.readouterr().err
    assert "--env-args are keyword arguments for a load_environment" in err
    assert "names a class" in err and "or no --env-args" in err


@pytest.mark.parametrize("name", ["summary", "view", "rescore", "list"])
def test_an_internal_error_is_3_with_its_traceback(name, monkeypatch, capsys):
    module = importlib.import_module(f"mint_envkit.cli.{COMMANDS[name][0]}")

    def broken(args, parser):
        raise RuntimeError("a bug")

    monkeypatch.setattr(module, "run", broken)
    argv = {"summary": ["x"], "view": ["x"], "rescore": ["x", "y:Z"], "list": []}[name]
    assert main([name, *argv]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug" in err
    assert f"mint-envkit {name}: internal error (RuntimeError: a bug)" in err


def test_a_library_error_names_the_flag_not_the_parameter(capsys):
    argv = ["audit", "examples/arithmetic_env.py:ArithmeticEnv", "--sample-model", "none"]
    argv += ["--problem", '{"question": "What is 2 + 3?", "answer": "5"}', "--learn", "1"]
    argv += ["--model", "mint-envkit/tiny-qwen3", "--limit", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--learn needs a DatasetBuilder target and --sample-model" in err
    assert "learn_steps" not in err and "sample_model" not in err


def test_flag_names_rewrites_only_whole_parameter_names():
    command = argparse.ArgumentParser()
    command.add_argument("--max-tokens", type=int)
    command.add_argument("--limit", type=int)
    text = "max_tokens must be >= 1 (Config.max_tokens, max_tokens_total); limit 0"
    assert flag_names(text, command) == (
        "--max-tokens must be >= 1 (Config.max_tokens, max_tokens_total); limit 0"
    )


def test_version_and_a_top_level_help_for_users(capsys):
    with pytest.raises(SystemExit) as version:
        parser().parse_args(["--version"])
    assert version.value.code == 0
    assert capsys.readouterr().out.startswith("mint-envkit ")
    assert main(["--version"]) == 0
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "argparse" not in out and "one module of this package" not in out
    assert EPILOG.splitlines()[0] in out
    for code in EXIT_CODES:
        assert f"{code} " in out.split("exit codes:", 1)[1]


def test_json_prints_json_on_stdout(tmp_path, monkeypatch, capsys):
    run = RunFiles(tmp_path / "run")
    run.ensure()
    run.append_metrics({"step": 0, "env/all/reward/total": 0.5})
    fake_env_package(monkeypatch, tmp_path, "sums")
    for argv in (["view", str(run.root)], ["list"], ["init", "units-demo", str(tmp_path / "pkg")]):
        assert main([*argv, "--json"]) == 0, argv
        printed = json.loads(capsys.readouterr().out)
        assert printed, argv
    sweep = tmp_path / "sweep"
    (sweep / "a").mkdir(parents=True)
    configs = [{"name": "a", "params": {}, "settings": {}}]
    (sweep / "sweep.json").write_text(json.dumps({"format": 1, "grid": {}, "configs": configs}))
    (sweep / "a" / "metrics.jsonl").write_text(
        textwrap.dedent('{"step": 0, "env/all/reward/total": 0.25}\n')
    )
    assert main(["summary", str(sweep), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["Name"] == "a"
