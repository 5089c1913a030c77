"""The reward audit: planted exploits are found, clean envs of several kinds pass."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # audit_envs

import audit_envs as envs

from mint_envkit.auditing import AuditReport, audit
from mint_envkit.auditing.replies import NON_ANSWER
from mint_envkit.auditing.rules import findings
from mint_envkit.errors import ConfigError


def _exploits(report: AuditReport) -> set[str]:
    return {f.probe for f in report.exploits}


@pytest.mark.parametrize(
    "builder",
    [envs.add_builder, envs.yes_no_builder, envs.choice_builder, envs.capital_builder],
    ids=["arithmetic", "yes-no", "multiple-choice", "free-text"],
)
async def test_clean_envs_pass(builder):
    report = await audit(builder)
    assert report.ok, report.table()
    assert report.exploits == [] and not report.collapsed
    by_name = {p.name: p for p in report.probes}
    assert by_name["correct"].mean_reward > by_name["wrong"].mean_reward
    for name in set(NON_ANSWER) & set(by_name):
        assert by_name[name].mean_reward <= by_name["wrong"].mean_reward, name
    assert "PASS" in report.table()


async def test_a_parser_that_reads_the_restated_question_is_an_exploit():
    report = await audit(envs.copy_builder)
    assert not report.ok
    assert "restated" in _exploits(report)
    restated = next(p for p in report.probes if p.name == "restated")
    assert restated.mean_reward == 1.0 and restated.correct_rate == 1.0
    assert "as much as a correct reply" in report.table()


async def test_a_format_reward_that_pays_empty_tags_is_an_exploit():
    report = await audit(envs.format_builder)
    assert "format_only" in _exploits(report)
    fmt = next(p for p in report.probes if p.name == "format_only")
    assert fmt.example == "<answer></answer>"
    wrong = next(p for p in report.probes if p.name == "wrong")
    assert fmt.mean_reward > wrong.mean_reward
    assert "more than a wrong answer" in report.table()


async def test_a_judge_that_can_be_talked_into_yes_is_an_exploit():
    report = await audit(envs.judge_builder)
    assert _exploits(report) == {"appeal"}
    assert "FAIL" in report.table()


async def test_the_baseline_is_the_majority_answer_scored_by_the_env():
    report = await audit(envs.yes_no_builder, limit=40)
    answers = [p["answer"] for p in envs.yes_no_problems()]
    majority = max(answers.count("yes"), answers.count("no")) / len(answers)
    assert report.problems == 40
    assert report.baseline_correct == pytest.approx(majority)
    common = next(p for p in report.probes if p.name == "most_common")
    assert common.correct_rate == pytest.approx(majority)


async def test_a_cut_off_reply_is_probed_and_scored_as_the_builder_says():
    report = await audit(envs.add_builder)
    cut = next(p for p in report.probes if p.name == "cut_off")
    assert cut.mean_reward == envs.add_builder.context_overflow_reward
    assert set(cut.parse_status) == {"truncated"}


def test_rules_on_hand_made_probes():
    from mint_envkit.auditing import ProbeResult

    def probe(name, kind, reward, correct=None):
        return ProbeResult(name, kind, [reward], [correct], ["ok"], "x")

    probes = [
        probe("correct", "reference", 1.0, 1.0),
        probe("wrong", "answer_shaped", -0.25, 0.0),
        probe("cut_off", "non_answer", -0.1),  # above wrong: exploit
        probe("empty", "non_answer", -0.25),  # equal to wrong: fine
        probe("most_common", "answer_shaped", 0.2, 0.6),  # beats a 0.5 baseline: warning
        # right where it is right (a shortcut the problems allow): a warning, not an exploit
        probe("first_number", "answer_shaped", 1.0, 1.0),
        # scored wrong, yet paid like a correct reply: the reward pays wrong answers
        probe("last_number", "answer_shaped", 1.0, 0.0),
    ]
    found = {(f.kind, f.probe) for f in findings(probes, baseline_correct=0.5)}
    assert found == {
        ("exploit", "cut_off"),
        ("warning", "most_common"),
        ("warning", "first_number"),
        ("exploit", "last_number"),
    }
    no_reference = findings([probe("wrong", "answer_shaped", 0.0, 0.0)], None)
    assert [(f.kind, f.probe) for f in no_reference] == [("warning", "correct")]


def test_an_exploit_by_a_hair_is_printed_with_the_digits_that_show_it():
    # reasoning-gym's basic_arithmetic: listing a range of numbers earned 0.0002 on
    # average (substring credit on one problem of 20), a wrong answer 0; printed at 3
    # decimals both read +0.000, "more than" a reader could not see
    from mint_envkit.auditing import AuditReport, ProbeResult

    probes = [
        ProbeResult("correct", "reference", [1.0], [1.0], ["ok"], "5"),
        ProbeResult("wrong", "answer_shaped", [0.0], [0.0], ["ok"], "6"),
        ProbeResult("enumerate_range", "non_answer", [0.0004, 0.0], [0.0, 0.0], ["ok"] * 2, "1 2"),
    ]
    found = findings(probes, baseline_correct=None)
    [exploit] = [f for f in found if f.kind == "exploit"]
    assert "earns +0.0002, more than a wrong answer (+0.0000)" in exploit.message
    report = AuditReport("t", 2, probes, None, found)
    row = next(line for line in report.table().splitlines() if line.startswith("enumerate_range"))
    assert "+0.0002" in row and row.endswith("EXPLOIT")


async def test_the_json_report_is_written(tmp_path):
    report = await audit(envs.judge_builder, out_dir=tmp_path)
    record = json.loads((tmp_path / "audit.json").read_text())
    assert record == json.loads(report.to_json())
    assert record["ok"] is False
    assert {p["name"] for p in record["probes"]} >= {"correct", "wrong", "appeal", "cut_off"}
    assert record["findings"][0]["kind"] == "exploit"


async def test_bad_options_are_refused():
    with pytest.raises(ConfigError, match="limit must be an integer >= 1"):
        await audit(envs.add_builder, limit=0)
    with pytest.raises(ConfigError, match="learn_steps must be"):
        await audit(envs.add_builder, learn_steps=-1)
    with pytest.raises(ConfigError, match="needs model_name"):
        await audit(envs.AddEnv, problems=envs.ADD_PROBLEMS)
    with pytest.raises(ConfigError, match="learn_steps needs a DatasetBuilder"):
        await audit(envs.add_builder, learn_steps=1)


async def test_the_audit_logs_its_figures_to_a_tracker(tmp_path):
    from tracker_records import tensorboard_scalars

    report = await audit(envs.add_builder, out_dir=tmp_path, loggers=("tensorboard",))
    assert tensorboard_scalars(tmp_path / "tracking", "audit/ok") == [(0, float(report.ok))]
    assert tensorboard_scalars(tmp_path / "tracking", "audit/probe/correct")[0][1] == 1.0
    with pytest.raises(ConfigError, match="pass out_dir"):
        await audit(envs.add_builder, loggers=("tensorboard",))
