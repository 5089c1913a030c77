"""The ``mint-envkit`` command: ``check``, ``serve``, ``summary`` and ``--help``.

Most tests call :func:`mint_envkit.cli.main` in-process and read its output
with ``capsys``; one runs the installed ``mint-envkit`` console script in a
subprocess to prove the entry point (and its exit code) works. Only
``test_check_local_samples_one_group_on_the_embedded_backend`` starts a
server (a :class:`~mint_envkit.local.server.LocalServer`, in-process).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mint_envkit.cli import main
from mint_envkit.sweep import Sweep
from sdk_sessions import heartbeat_stopped, record_service_clients

REPO = Path(__file__).resolve().parents[1]
ARITHMETIC = "examples/arithmetic_env.py:ArithmeticEnv"
PROBLEM = json.dumps({"question": "What is 2 + 3?", "answer": "5"})
SMALL = "mint-envkit/tiny-qwen3-small"

# "  reply '5'        reward +1.000  parse ok             {'correct': 1.0, ...}"
REPLY_LINE = re.compile(
    r"^  reply (?P<reply>'[^']*')\s+reward (?P<reward>[+-]\d+\.\d{3})\s+parse (?P<status>\S+)",
    re.MULTILINE,
)

ENVS_MODULE = '''
"""Envs for the cli tests (a module loaded by `mint-envkit check path.py:NAME`)."""

import itertools

from mint_envkit import DatasetBuilder, SingleTurnEnv, exact, first_number


class CapitalEnv(SingleTurnEnv):
    system_prompt = "Answer with the city name only."
    parser = exact(normalize=str.lower)


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.5


builder = DatasetBuilder(
    env=CapitalEnv,
    problems=[
        {"question": "Capital of France?", "answer": "paris"},
        {"question": "Capital of Italy?", "answer": "rome"},
    ],
    batch_size=2,
    group_size=2,
    model_name="mint-envkit/tiny-qwen3",
)

_calls = itertools.count()


def drifting_env(question, answer):
    """A bad env factory: ignores the problem and draws a new question per call."""
    n = next(_calls)
    return AddEnv(question=f"What is {n} + 1?", answer=str(n + 1))


drifting_builder = DatasetBuilder(
    env=drifting_env,
    problems=[{"question": "unused", "answer": "unused"}],
    batch_size=1,
    group_size=3,
    model_name="mint-envkit/tiny-qwen3",
)


def not_an_env(n):
    """A callable that is not an env factory."""
    return list(range(n))


NOT_AN_ENV = 42
'''


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch, tmp_path):
    """Undo what loading ``path.py:NAME`` does to ``sys.path`` and ``sys.modules``.

    ``mint-envkit check`` prepends the file's directory to ``sys.path`` and
    registers the module under its file stem; both would leak into later tests.
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = dict(sys.modules)
    yield
    roots = (tmp_path.resolve(), (REPO / "examples").resolve())
    for name, module in list(sys.modules.items()):
        module_file = getattr(module, "__file__", None)
        if saved.get(name) is module or not module_file:
            continue
        if any(root in Path(module_file).resolve().parents for root in roots):
            if name in saved:  # e.g. tests/examples imported arithmetic_env first
                sys.modules[name] = saved[name]
            else:
                del sys.modules[name]


@pytest.fixture
def envs_module(tmp_path) -> Path:
    """A module of envs and builders, written to a unique file for this test."""
    path = tmp_path / "cli_test_envs.py"
    path.write_text(textwrap.dedent(ENVS_MODULE), encoding="utf-8")
    return path


def invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)`` in-process: (exit code, stdout, stderr); argparse exits count too."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def reply_rows(text: str) -> list[tuple[str, float, str]]:
    """(reply, reward, parse status) of every ``reply`` line, in order."""
    return [
        (ast.literal_eval(m["reply"]), float(m["reward"]), m["status"])
        for m in REPLY_LINE.finditer(text)
    ]


def _console_script() -> str:
    script = Path(sys.executable).parent / "mint-envkit"
    if script.is_file():
        return str(script)
    found = shutil.which("mint-envkit")
    assert found, "the mint-envkit console script is not installed (pip install -e .)"
    return found


# ---------------------------------------------------------------- check: env class


def test_check_env_class_prints_prompt_replies_rewards_and_parse_status(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = invoke(["check", ARITHMETIC, "--problem", PROBLEM], capsys)

    assert code == 0, err
    assert err == ""
    assert out.startswith("--- group 0\nrendered prompt:\n")
    prompt = out.split("rendered prompt:\n", 1)[1].split("  reply ", 1)[0]
    assert "<|im_start|>system" in prompt
    assert "You are a precise calculator. Reply with only the final number." in prompt
    assert "<|im_start|>user\n  What is 2 + 3?<|im_end|>" in prompt
    assert "<|im_start|>assistant" in prompt
    assert reply_rows(out) == [
        ("5", 1.0, "ok"),
        ("0", -0.25, "ok"),
        ("I am not sure.", -0.25, "no_match"),
    ]
    assert "reward +1.000" in out and out.count("reward -0.250") == 2
    assert "{'correct': 1.0, 'parsed': 1.0}" in out
    assert "ERROR" not in out


def test_check_accepts_an_absolute_path(capsys):
    target = f"{REPO / 'examples' / 'arithmetic_env.py'}:ArithmeticEnv"
    code, out, err = invoke(["check", target, "--problem", PROBLEM, "--group-size", "2"], capsys)

    assert code == 0, err
    assert reply_rows(out) == [("5", 1.0, "ok"), ("0", -0.25, "ok")]


def test_check_uses_the_given_replies(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = ["check", ARITHMETIC, "--problem", PROBLEM, "--reply", "7", "--reply", "5"]
    code, out, err = invoke(argv, capsys)

    assert code == 0, err
    # env i of the group gets replies[i % len(replies)]: 7, 5, 7
    assert reply_rows(out) == [("7", -0.25, "ok"), ("5", 1.0, "ok"), ("7", -0.25, "ok")]
    assert "'I am not sure.'" not in out


def test_check_runs_every_problem_given(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    second = json.dumps({"question": "What is 3 * 4?", "answer": "12"})
    argv = ["check", ARITHMETIC, "--problem", PROBLEM, "--problem", second, "--group-size", "1"]
    code, out, err = invoke(argv, capsys)

    assert code == 0, err
    assert out.count("--- group ") == 2
    assert "What is 2 + 3?" in out and "What is 3 * 4?" in out
    assert reply_rows(out) == [("5", 1.0, "ok"), ("12", 1.0, "ok")]


def test_check_env_class_without_problem_is_a_readable_error(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = invoke(["check", ARITHMETIC], capsys)

    assert code == 2
    assert out == ""
    assert err.startswith("mint-envkit check: checking an env class needs at least one --problem")


def test_check_problem_missing_a_field_is_a_readable_error(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = invoke(["check", ARITHMETIC, "--problem", '{"question": "2 + 3?"}'], capsys)

    assert code == 2
    assert out == ""
    assert err.startswith("mint-envkit check: problem 0: ")
    assert "'answer'" in err


# ----------------------------------------------------------- check: DatasetBuilder


def test_check_dataset_builder_attribute(envs_module, capsys):
    code, out, err = invoke(["check", f"{envs_module}:builder"], capsys)

    assert code == 0, err
    assert sorted(re.findall(r"^--- group (\d+)$", out, re.MULTILINE)) == ["0", "1"]
    assert "Answer with the city name only." in out
    assert "Capital of France?" in out and "Capital of Italy?" in out
    rows = reply_rows(out)
    # group_size 2: the oracle answer, then "0"
    assert sorted(rows) == [
        ("0", 0.0, "ok"),
        ("0", 0.0, "ok"),
        ("paris", 1.0, "ok"),
        ("rome", 1.0, "ok"),
    ]


def test_check_groups_limits_the_groups_shown(envs_module, capsys):
    code, out, err = invoke(["check", f"{envs_module}:builder", "--groups", "1"], capsys)

    assert code == 0, err
    assert out.count("--- group ") == 1
    assert len(reply_rows(out)) == 2


def test_check_relative_path_to_a_builder(envs_module, monkeypatch, capsys):
    monkeypatch.chdir(envs_module.parent.parent)
    target = f"{envs_module.parent.name}/{envs_module.name}:builder"
    code, out, err = invoke(["check", target, "--groups", "1"], capsys)

    assert code == 0, err
    assert out.count("--- group ") == 1


# ------------------------------------------------------ check: groups that differ


def test_check_flags_an_env_factory_whose_envs_differ(envs_module, capsys):
    code, out, err = invoke(["check", f"{envs_module}:drifting_env", "--problem", PROBLEM], capsys)

    assert code == 1
    assert err == ""
    assert "--- group 0\nERROR: group of problem 0 holds different problems" in out
    assert "What is 0 + 1?" in out and "What is 1 + 1?" in out
    assert reply_rows(out) == []


def test_check_flags_a_builder_whose_envs_differ(envs_module, capsys):
    code, out, _err = invoke(["check", f"{envs_module}:drifting_builder"], capsys)

    assert code == 1
    assert re.search(r"^ERROR: .*holds different problems", out, re.MULTILINE)


# ------------------------------------------------------------ check: bad targets


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("examples/arithmetic_env.py", "expected MODULE:NAME"),
        ("ArithmeticEnv", "expected MODULE:NAME"),
        ("examples/no_such_file.py:Env", "no such file: examples/no_such_file.py"),
        ("examples/arithmetic_env.py:NoSuchEnv", "has no attribute 'NoSuchEnv'"),
        ("mint_envkit.errors:NoSuchEnv", "mint_envkit.errors has no attribute 'NoSuchEnv'"),
        ("examples/arithmetic_env.py:random", "is neither an env class nor a DatasetBuilder"),
    ],
    ids=["no-colon-path", "no-colon-name", "missing-file", "missing-attr", "dotted-attr", "module"],
)
def test_check_bad_target_exits_2_with_a_message(target, message, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = invoke(["check", target, "--problem", PROBLEM], capsys)

    assert code == 2
    assert out == ""
    assert err.startswith("mint-envkit check: ")
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_check_missing_absolute_file(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "envs.py"
    code, out, err = invoke(["check", f"{missing}:Env"], capsys)

    assert code == 2
    assert out == ""
    assert err.strip() == f"mint-envkit check: no such file: {missing}"


def test_check_non_env_attribute(envs_module, capsys):
    code, out, err = invoke(["check", f"{envs_module}:NOT_AN_ENV"], capsys)

    assert code == 2
    assert out == ""
    assert err.strip() == (
        f"mint-envkit check: {envs_module}:NOT_AN_ENV is neither an env class nor a DatasetBuilder"
    )


def test_check_missing_dotted_module(capsys):
    code, out, err = invoke(["check", "no_such_pkg_for_cli_tests.envs:Env"], capsys)

    assert code == 2
    assert out == ""
    assert "no_such_pkg_for_cli_tests" in err


def test_check_invalid_problem_json(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = invoke(["check", ARITHMETIC, "--problem", "{question: 2 + 3}"], capsys)

    assert code == 2
    assert out == ""
    assert "--problem" in err


def test_check_callable_that_is_not_an_env(envs_module, capsys):
    code, out, err = invoke(["check", f"{envs_module}:not_an_env", "--problem", PROBLEM], capsys)

    assert code in (1, 2)
    assert "not_an_env" in out + err


def test_check_groups_zero_with_local(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = ["check", ARITHMETIC, "--problem", PROBLEM, "--groups", "0", "--local"]
    code, _out, _err = invoke(argv, capsys)

    assert code == 2


def test_check_env_file_named_like_a_loaded_module(tmp_path):
    # a subprocess: in-process, the replaced `math` would break imports for later tests
    env_file = tmp_path / "math.py"
    env_file.write_text(
        "from mint_envkit import SingleTurnEnv, first_number\n\n\n"
        "class AddEnv(SingleTurnEnv):\n"
        "    parser = first_number\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [_console_script(), "check", f"{env_file}:AddEnv", "--problem", PROBLEM],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TINKER_TELEMETRY": "0"},
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert reply_rows(result.stdout)[0] == ("5", 1.0, "ok")


# --------------------------------------------------------------- check --local


def test_check_local_samples_one_group_on_the_embedded_backend(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    made = record_service_clients(monkeypatch)
    argv = [
        *("check", ARITHMETIC, "--problem", PROBLEM),
        *("--model", SMALL, "--max-tokens", "4", "--local"),
    ]
    code, out, err = invoke(argv, capsys)

    assert code == 0, out + err
    # its SDK session is closed: no heartbeat warning every 10 s once the server is gone
    assert len(made) == 1 and heartbeat_stopped(made[0])
    scripted, marker, local = out.partition(
        f"--- one group through {SMALL} on the embedded backend\n"
    )
    assert marker, out
    assert reply_rows(scripted) == [
        ("5", 1.0, "ok"),
        ("0", -0.25, "ok"),
        ("I am not sure.", -0.25, "no_match"),
    ]
    assert local.startswith("--- group 0\n")
    assert "ERROR" not in local
    assert "rendered prompt" not in local
    lines = [line for line in local.splitlines() if line.startswith("  reply ")]
    assert len(lines) == 3  # --group-size defaults to 3
    assert all(re.search(r"reward [+-]\d+\.\d{3}  parse ", line) for line in lines)


# -------------------------------------------------------------------- summary


def _sweep_config(log_path: Path):
    from mint_envkit import DatasetBuilder
    from mint_envkit.rl.config import Config

    builder = DatasetBuilder(
        env=lambda **problem: None,  # never called: the runner below does not train
        problems=[{"question": "What is 2 + 3?", "answer": "5"}],
        batch_size=1,
        group_size=2,
        model_name="mint-envkit/tiny-qwen3",
    )
    return Config(
        dataset_builder=builder,
        model_name="mint-envkit/tiny-qwen3",
        log_path=str(log_path),
        max_steps=2,
    )


async def _metrics_runner(config) -> None:
    """The runner contract: write ``metrics.jsonl`` into ``config.log_path``; raise on failure."""
    if config.temperature > 0.9:
        raise RuntimeError("reward exploded")
    with open(Path(config.log_path) / "metrics.jsonl", "a", encoding="utf-8") as fh:
        for step in range(config.max_steps):
            metrics = {
                "step": step,
                "env/all/reward/total": round(-0.5 + 0.25 * step, 3),
                "env/all/correct": 0.25 * step,
            }
            fh.write(json.dumps(metrics) + "\n")


@pytest.fixture
def sweep_dir(tmp_path, monkeypatch) -> Path:
    """A finished sweep of two configs: t0p7 ok (2 steps), t1p0 failed."""
    import asyncio

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no summary.png: keeps it fast
    root = tmp_path / "sweep"
    sweep = Sweep(
        base=_sweep_config(root / "unused"),
        grid={"temperature": [0.7, 1.0]},
        root=root,
        runner=_metrics_runner,
        quiet=True,
    )
    results = asyncio.run(sweep.run())
    assert [(r.name, r.status) for r in results] == [("t0p7", "ok"), ("t1p0", "failed")]
    (root / "summary.csv").unlink()
    return root


def test_summary_prints_the_table_and_writes_the_csv(sweep_dir, capsys):
    code, out, err = invoke(["summary", str(sweep_dir)], capsys)

    assert code == 0, err
    lines = out.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "KL",
        "Temperature",
        "Group size",
        "Steps",
        "Mean reward",
        "Correct",
        "Eval before",
        "Eval after",
        "Datums",
        "KL to base",
        "Status",
        "Log path",
    ]
    assert re.split(r"\s{2,}", lines[1]) == [
        "0.00",
        "0.7",
        "2",
        "2",
        "-0.250",
        "0.25",
        "-",
        "-",
        "0",
        "-",
        "ok",
        str(sweep_dir / "t0p7"),
    ]
    assert re.split(r"\s{2,}", lines[2]) == [
        "0.00",
        "1.0",
        "2",
        "0",
        "-",
        "-",
        "-",
        "-",
        "0",
        "-",
        "failed",
        str(sweep_dir / "t1p0"),
    ]
    assert "failed t1p0: RuntimeError: reward exploded" in out
    assert f"wrote {sweep_dir / 'summary.csv'}" in out
    assert "summary.png skipped: matplotlib is not installed" in out

    rows = (sweep_dir / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith(
        "Name,KL,Temperature,Group size,Steps,Mean reward,Correct,Eval before,Eval after,Datums,"
        "KL to base,Status,"
    )
    assert rows[1].startswith("t0p7,0.0,0.7,2,2,-0.25,0.25,,,0,,ok,")
    assert rows[2].startswith("t1p0,0.0,1.0,2,0,,,,,0,,failed,")
    assert len(rows) == 3


def test_summary_of_a_missing_directory_fails_with_a_message(tmp_path, capsys):
    missing = tmp_path / "no-such-sweep"
    code, out, err = invoke(["summary", str(missing)], capsys)

    assert code != 0
    assert out == ""
    assert err.startswith("mint-envkit summary: ")
    assert str(missing / "sweep.json") in err
    assert not missing.exists()


def test_summary_without_a_directory_is_a_usage_error(capsys):
    code, _out, err = invoke(["summary"], capsys)

    assert code == 2
    assert "SWEEP_DIR" in err


# ---------------------------------------------------------------------- serve


@pytest.fixture
def restore_root_logger(monkeypatch):
    """serve_main calls logging.basicConfig; keep the root logger as it was."""
    monkeypatch.setattr(logging.root, "handlers", list(logging.root.handlers))
    monkeypatch.setattr(logging.root, "level", logging.root.level)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::"])
def test_serve_refuses_a_non_loopback_host_without_allow_remote(host, restore_root_logger, capsys):
    code, out, err = invoke(["serve", "--host", host, "--port", "0"], capsys)

    assert code == 2
    assert "listening on" not in out
    assert f"mint-envkit serve: refusing --host {host}" in err
    assert "loopback" in err
    assert "--allow-remote" in err


def test_serve_refuses_a_bad_port(restore_root_logger, capsys):
    code, _out, err = invoke(["serve", "--port", "70000"], capsys)

    assert code == 2
    assert "--port in 0..65535" in err


# ----------------------------------------------------------------------- help


def test_help_lists_the_subcommands(capsys):
    from mint_envkit.cli import COMMANDS

    code, out, _err = invoke(["--help"], capsys)

    assert code == 0
    assert out.startswith("usage: mint-envkit ")
    assert "{" + ",".join(COMMANDS) + "}" in "".join(out.split())
    assert {"serve", "summary", "checkpoints", "view", "install-model", "eval", "audit"} < set(
        COMMANDS
    )
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\s+\S", out, re.MULTILINE), command


def test_no_subcommand_is_a_usage_error(capsys):
    code, _out, err = invoke([], capsys)

    assert code == 2
    assert "usage: mint-envkit" in err


def test_installed_console_script(tmp_path):
    script = _console_script()
    env = {**os.environ, "TINKER_TELEMETRY": "0"}

    shown = subprocess.run(
        [script, "--help"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    for command in ("serve", "summary", "check"):
        assert command in shown.stdout

    # main()'s return value becomes the process exit code
    bad = subprocess.run(
        [script, "check", "no-colon"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.startswith("mint-envkit check: expected MODULE:NAME")
    assert "Traceback" not in bad.stderr


# ---------------------------------------------------------------- check: multi-turn and replies

BOXED_ENV = """
from mint_envkit import SingleTurnEnv, boxed


class BoxedEnv(SingleTurnEnv):
    parser = boxed
"""


def test_check_more_replies_than_the_group_size_is_an_error_naming_both(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = ["check", ARITHMETIC, "--problem", PROBLEM, "--group-size", "2"]
    code, _, err = invoke([*argv, "--reply", "1", "--reply", "2", "--reply", "5"], capsys)
    assert code == 2
    assert "3 --reply scripts but --group-size 2" in err


def test_check_without_group_size_runs_every_reply(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    replies = ["1", "2", "3", "5"]
    argv = ["check", ARITHMETIC, "--problem", PROBLEM]
    code, out, _ = invoke([*argv, *(x for r in replies for x in ("--reply", r))], capsys)
    assert code == 0
    assert [row[0] for row in reply_rows(out)] == replies


def test_check_reference_reply_is_one_the_env_scores_correct(tmp_path, capsys):
    path = tmp_path / "boxed_env.py"
    path.write_text(BOXED_ENV, encoding="utf-8")
    code, out, _ = invoke(["check", f"{path}:BoxedEnv", "--problem", PROBLEM], capsys)
    assert code == 0
    assert "reference reply (the env scores it correct): '\\\\boxed{5}'" in out
    assert reply_rows(out)[0] == ("\\boxed{5}", 1.0, "ok")


def test_check_says_when_there_is_no_reference_reply(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    problem = json.dumps({"secret": 40})
    code, out, _ = invoke(
        [
            "check",
            "examples/guess_the_number.py:GuessTheNumberEnv",
            "--problem",
            problem,
            "--reply",
            '["50", "40"]',
        ],
        capsys,
    )
    assert code == 0
    code, out, _ = invoke(
        ["check", "examples/guess_the_number.py:GuessTheNumberEnv", "--problem", problem],
        capsys,
    )
    assert "no reference reply: the problem has no 'answer'" in out


def test_check_multi_turn_prints_the_transcript_and_the_prefix_check(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    call = '<tool_call>{"name": "calculate", "arguments": {"expression": "2 + 3"}}</tool_call>'
    argv = [
        "check",
        "examples/calculator_tools.py:CalculatorEnv",
        "--problem",
        PROBLEM,
        "--reply",
        json.dumps([call, "5"]),
        "--reply",
        json.dumps(["<tool_call>{bad}</tool_call>", "4"]),
        "--renderer",
        "qwen3",
        "--renderer",
        "qwen3_disable_thinking",
    ]
    code, out, err = invoke(argv, capsys)
    assert code == 0, err
    assert "[turn 1] env: '\\n<|im_start|>user\\n<tool_response>\\n5\\n</tool_response>" in out
    assert "could not be read" in out
    for renderer in ("qwen3", "qwen3_disable_thinking"):
        for env in (0, 1, 2):
            assert f"prefix check [{renderer}] env {env}: ok (2 observation(s)" in out
    assert [row[:2] for row in reply_rows(out)] == [("5", 1.0), ("4", 0.0), ("5", 1.0)] * 2
