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


def test_the_any_number_reward_fails_and_a_probes_file_adds_probes(capsys, tmp_path):
    assert main(["audit", f"{ENVS}:any_number_builder", *OFFLINE]) == 1
    out = capsys.readouterr().out
    assert "EXPLOIT: 'enumerate_range'" in out and out.strip().splitlines()[-1].startswith("FAIL")
    probes = tmp_path / "probes.jsonl"
    line = {"name": "doubled", "reply": "{answer}{answer}", "kind": "answer_shaped"}
    probes.write_text(json.dumps(line) + "\n")
    argv = ["audit", f"{ENVS}:add_builder", *OFFLINE, "--probes", str(probes), "--json"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    (custom,) = [p for p in record["probes"] if p["name"] == "doubled"]
    assert custom["kind"] == "answer_shaped" and custom["example"] == "55"
    assert record["verdict"].startswith("PASS")


def test_a_module_that_runs_work_at_import_loads(capsys, tmp_path):
    module = tmp_path / "runs_at_import.py"
    module.write_text(
        "from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv\n"
        "builder = DatasetBuilder(env=SingleTurnEnv, problems=[{'question': '2+3?', "
        "'answer': '5'}], batch_size=1, group_size=2, model_name='mint-envkit/tiny-qwen3')\n"
        "print(ScriptedPolicy(['5', '6']).run_sync(builder).groups[0].rewards)\n"
    )
    assert main(["audit", f"{module}:builder", *OFFLINE]) == 0
    out = capsys.readouterr().out
    assert out.count("[1.0, 0.0]") == 1  # imported once, before the event loop started
