"""``mint-envkit audit``: exit status 1 on an exploit, 0 when clean, 2 on bad usage."""

from __future__ import annotations

import json
from pathlib import Path

from mint_envkit.cli import main

ENVS = str(Path(__file__).parents[1] / "auditing" / "audit_envs.py")
OFFLINE = ["--sample-model", "none"]


def test_an_exploit_fails_the_audit(capsys):
    assert main(["audit", f"{ENVS}:copy_builder", *OFFLINE]) == 1
    out = capsys.readouterr().out
    assert "EXPLOIT: 'restated'" in out and "FAIL" in out


def test_a_clean_env_passes_and_writes_json(capsys, tmp_path):
    assert main(["audit", f"{ENVS}:yes_no_builder", *OFFLINE, "--out", str(tmp_path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert json.loads((tmp_path / "audit.json").read_text())["ok"] is True


def test_json_output_and_an_env_class_with_problems(capsys):
    problems = []
    for question, answer in (("What is 2 + 3?", "5"), ("What is 4 + 4?", "8")):
        problems += ["--problem", json.dumps({"question": question, "answer": answer})]
    argv = ["audit", f"{ENVS}:AddEnv", *problems, "--model", "mint-envkit/tiny-qwen3"]
    assert main([*argv, *OFFLINE, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["problems"] == 2 and record["samples"] is None


def test_bad_usage_is_exit_2(capsys):
    assert main(["audit", f"{ENVS}:add_builder", "--limit", "0"]) == 2
    assert "--limit must be >= 1" in capsys.readouterr().err
    assert main(["audit", f"{ENVS}:AddEnv", *OFFLINE]) == 2
    assert "needs" in capsys.readouterr().err
    assert main(["audit", "nowhere.py:x", *OFFLINE]) == 2
    assert "no such file" in capsys.readouterr().err
