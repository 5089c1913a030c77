"""``mint-envkit list``, and an installed env's name where check, audit and eval take an ENV_SPEC."""

from __future__ import annotations

import json

import pytest

import mint_envkit.cli.list_envs as list_command
from env_packages import fake_env_package
from mint_envkit.cli import main

OFFLINE = ["--sample-model", "none"]


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_the_installed_envs_are_listed(monkeypatch, tmp_path, capsys):
    module = fake_env_package(monkeypatch, tmp_path, "sums", package="sums-pkg", version="0.4.1")

    assert main(["list"]) == 0

    out, err = capsys.readouterr()
    head, *rows = out.splitlines()
    assert head.split() == ["name", "package", "version", "entry", "point", "description"]
    [row] = [row for row in rows if row.startswith("sums ")]
    assert row.split()[:4] == ["sums", "sums-pkg", "0.4.1", f"{module}:load_environment"]
    assert row.endswith("  Sums of two small numbers, a fake env package of the tests.")
    assert err == ""


def test_no_env_installed_says_how_to_make_one(monkeypatch, capsys):
    monkeypatch.setattr(list_command, "installed_environments", lambda: [])

    assert main(["list"]) == 0

    out = capsys.readouterr().out
    assert out.startswith("no env packages installed in this Python (")
    assert "mint-envkit init NAME" in out and "pip install -e NAME" in out


def test_a_broken_env_and_a_name_claimed_twice_are_shown_and_exit_1(monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")
    fake_env_package(monkeypatch, tmp_path, "broken", source="raise RuntimeError('no data')\n")
    fake_env_package(monkeypatch, tmp_path, "twice", package="first-pkg")
    fake_env_package(monkeypatch, tmp_path, "twice", package="second-pkg")

    assert main(["list"]) == 1

    out, err = capsys.readouterr()
    lines = {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines()[1:]}
    assert lines["broken broken"].endswith("cannot be loaded (below)")
    assert "CLAIMED BY 2 PACKAGES; Sums of two small numbers" in lines["twice first-pkg"]
    assert "CLAIMED BY 2 PACKAGES" in lines["twice second-pkg"]
    assert lines["sums sums"].endswith(
        "Sums of two small numbers, a fake env package of the tests."
    )
    assert "env 'broken': cannot load its entry point" in err
    assert "RuntimeError: no data" in err
    assert "env name 'twice' is claimed by 2 installed packages: first-pkg" in err


# --------------------------------------------- a name where an ENV_SPEC goes


def test_check_takes_an_installed_envs_name_and_records_it(monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")
    golden = tmp_path / "golden.jsonl"

    assert main(["check", "sums", "--record", str(golden)]) == 0

    out = capsys.readouterr().out
    assert out.count("reference reply (the env scores it correct):") == 2  # batch 0: 2 groups
    header = json.loads(golden.read_text().splitlines()[0])
    assert header["builder"] == "sums"
    assert main(["check", "--replay", str(golden)]) == 0
    assert "all match" in capsys.readouterr().out


def test_audit_takes_an_installed_envs_name(monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")

    assert main(["audit", "sums", *OFFLINE]) == 0

    out = capsys.readouterr().out
    assert out.startswith("audit of sums: 6 problem(s)")
    assert "PASS" in out


@pytest.mark.parametrize("command", ["check", "audit", "eval"])
def test_an_unknown_name_exits_2_listing_the_installed_envs(command, monkeypatch, tmp_path, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")

    assert main([command, "sum", *(OFFLINE if command == "audit" else [])]) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"mint-envkit {command}: expected MODULE:NAME")
    assert "no installed env is named 'sum' (installed: " in err and "sums" in err
    assert "Traceback" not in err


@pytest.mark.integration
def test_eval_takes_an_installed_envs_name(monkeypatch, tmp_path, tiny_local_server, capsys):
    fake_env_package(monkeypatch, tmp_path, "sums")
    out_dir = tmp_path / "ev"
    argv = ["eval", "sums", "--samples", "2", "--max-tokens", "4", "--limit", "2"]
    argv += ["--base-url", tiny_local_server.base_url, "--backend", "local"]

    assert main([*argv, "--out", str(out_dir), "--no-report"]) == 0

    out = capsys.readouterr().out
    assert "pass@2" in out
    lines = (out_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["problem"]["question"].startswith("What is ")


def test_packages_that_exit_or_hang_at_import_are_named_beside_the_good_ones(
    monkeypatch, tmp_path, capsys
):
    """issue 46: one env package that raised SystemExit, called os._exit or hung at
    import made `mint-envkit list` print nothing (exit 7) or hang; each env is now
    loaded in a process of its own, with a timeout."""
    fake_env_package(monkeypatch, tmp_path, "sums")
    fake_env_package(monkeypatch, tmp_path, "exits", source="import sys\nsys.exit(7)\n")
    fake_env_package(monkeypatch, tmp_path, "ends", source="import os\nos._exit(7)\n")
    fake_env_package(monkeypatch, tmp_path, "hangs", source="import time\ntime.sleep(600)\n")

    assert main(["list", "--timeout", "5"]) == 1

    out, err = capsys.readouterr()
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert lines["sums"].endswith("Sums of two small numbers, a fake env package of the tests.")
    for name in ("exits", "ends", "hangs"):
        assert lines[name].endswith("cannot be loaded (below)"), lines[name]
    assert "env 'exits': cannot load its entry point" in err and "sys.exit(7)" in err
    assert "env 'ends': importing" in err and "exit code 7 before it answered" in err
    assert "env 'hangs': importing" in err and "did not finish within 5 s" in err
