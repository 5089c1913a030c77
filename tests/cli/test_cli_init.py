"""``mint-envkit init``: the scaffold, its refusals, and the package installed and audited."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from env_packages import fake_env_package
from mint_envkit.builders.packages import ENTRY_POINT_GROUP, installed_environments
from mint_envkit.cli import main

FILES = [
    "README.md",
    "pyproject.toml",
    "src/units_demo/__init__.py",
    "src/units_demo/env.py",
    "tests/golden.jsonl",
    "tests/test_env.py",
]


def _written(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_init_writes_an_installable_package_with_golden_transcripts(tmp_path, capsys):
    folder = tmp_path / "units"

    assert main(["init", "units-demo", str(folder)]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"created {folder}: the env package units-demo (module units_demo)")
    assert f"pip install -e {folder}" in out and "mint-envkit audit units-demo" in out
    assert _written(folder) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["units"]  # no scratch folder left
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["project"]["name"] == "units-demo"
    assert project["project"]["dependencies"][0].startswith("mint-envkit")
    assert project["project"]["entry-points"][ENTRY_POINT_GROUP] == {
        "units-demo": "units_demo.env:load_environment"
    }
    for path in ("src/units_demo/env.py", "tests/test_env.py"):
        ast.parse((folder / path).read_text())
    header, *records = [json.loads(line) for line in (folder / "tests/golden.jsonl").open()]
    assert (header["builder"], header["transcripts"], len(records)) == ("units-demo", 12, 12)
    assert {r["env_class"] for r in records} == {"units_demo.env:UnitsDemoEnv"}
    # each group: the answer (correct), a wrong one and no answer, as check gives them
    for group in range(3):
        first = records[4 * group : 4 * group + 4]
        assert [r["replies"][0] for r in first][1:] == [
            "0",
            "I am not sure.",
            first[0]["replies"][0],
        ]
        assert [r["correct"] for r in first] == [1.0, 0.0, 0.0, 1.0]
        assert [r["parse_status"] for r in first] == ["ok", "ok", "no_match", "ok"]
    assert not any(name.startswith("units_demo") for name in sys.modules)


def test_the_default_folder_is_the_name_and_an_empty_folder_is_filled(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "units-demo"]) == 0
    assert _written(tmp_path / "units-demo") == FILES
    (tmp_path / "empty").mkdir()
    assert main(["init", "other_env", "empty"]) == 0
    assert "src/other_env/env.py" in _written(tmp_path / "empty")
    assert "class OtherEnv(SingleTurnEnv)" in (tmp_path / "empty/src/other_env/env.py").read_text()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("2fast", "use letters and digits in words joined by '-' or '_'"),
        ("my env", "use letters and digits"),
        ("my--env", "use letters and digits"),
        ("class", "its module 'class' is a Python keyword"),
        ("json", "a module named 'json' already exists in this Python"),
        ("mint-envkit", "a module named 'mint_envkit' already exists"),
    ],
)
def test_a_bad_name_exits_2_and_writes_nothing(name, message, tmp_path, capsys):
    assert main(["init", name, str(tmp_path / "out")]) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"mint-envkit init: env name {name!r}") and message in err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_holds_files_is_left_alone(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")

    assert main(["init", "units-demo", str(tmp_path)]) == 2

    assert f"{tmp_path} already exists and is not an empty folder" in capsys.readouterr().err
    assert _written(tmp_path) == ["keep.txt"]


def test_an_installed_envs_name_is_refused(tmp_path, monkeypatch, capsys):
    fake_env_package(monkeypatch, tmp_path, "taken-env", package="taken-pkg")

    assert main(["init", "taken-env", str(tmp_path / "new")]) == 2

    err = capsys.readouterr().err
    assert "env name 'taken-env' is already installed (package taken-pkg 1.2.3)" in err
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------ installed with pip


def _venv_linked_to_this_one(folder: Path) -> Path:
    """A fresh venv whose Python also sees this venv's packages; its python.

    ``python -m venv --system-site-packages`` run from inside a venv gives the base
    interpreter's site-packages, not this venv's, so one .pth line adds this venv's
    (site.addsitedir, which also reads its .pth files: the editable mint-envkit).
    """
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60
    )
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "_mint_envkit_parent.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


def _run(python: Path, *argv: str, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TINKER_TELEMETRY"] = "0"
    return subprocess.run(
        [str(python), *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def test_init_then_pip_install_then_list_check_audit_and_its_own_tests(tmp_path, capsys):
    # the "done when": init, pip install into a fresh venv (the project's .venv is
    # never touched), then the commands by name. Measured 26.5 s on the 2-core machine
    # (pytest --durations=5), within the suite's 120 s bound; by hand, the pip install
    # took 5.0 s and the package's own pytest 13.2 s.
    package = tmp_path / "units-demo"
    assert main(["init", "units-demo", str(package)]) == 0
    python = _venv_linked_to_this_one(tmp_path / "venv")
    cli = ["-m", "mint_envkit.cli"]

    pip = ["-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-e"]
    done = _run(python, *pip, str(package), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    listed = _run(python, *cli, "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1].split()
    assert row[:4] == ["units-demo", "units-demo", "0.1.0", "units_demo.env:load_environment"]
    assert "Unit conversions answered with a number alone" in listed.stdout

    checked = _run(python, *cli, "check", "units-demo", "--record", "again.jsonl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = (tmp_path / "again.jsonl").read_text().splitlines()
    golden = (package / "tests/golden.jsonl").read_text().splitlines()
    assert again[1:] == golden[1:]  # init recorded what check records

    audited = _run(python, *cli, "audit", "units-demo", "--sample-model", "none", cwd=tmp_path)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert audited.stdout.startswith("audit of units-demo: 9 problem(s)")
    assert "PASS: no exploit, no collapse" in audited.stdout

    tested = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=package)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 passed" in tested.stdout

    # issue 48: every problem replaced, the golden transcripts (which carry their own
    # problems and still score as recorded) are stale: the package's golden test fails
    env_py = package / "src" / "units_demo" / "env.py"
    env_py.write_text(env_py.read_text().replace("3 hours?", "4 hours?"), encoding="utf-8")
    stale = _run(python, *cli, "check", "--replay", "tests/golden.jsonl", cwd=package)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "stale: re-record (mint-envkit check units-demo --record" in stale.stdout
    assert "the problems: 12 recorded" in stale.stdout
    # this venv never saw it
    assert "units-demo" not in {env.name for env in installed_environments()}
