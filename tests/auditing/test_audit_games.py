"""Rewards games the audit's fixed list did not see, and baselines that read the prompt.

Each planted game here passed the audit before the enumeration, hedge, buried and long
probes and the prompt-aware baselines existed; the clean env of each kind passes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # audit_envs

import audit_envs as envs

from mint_envkit import AuditProbe, SingleTurnEnv, first_number
from mint_envkit.auditing import AuditReport, audit
from mint_envkit.auditing.report import Finding, Verdict
from mint_envkit.errors import ConfigError


def _exploits(report: AuditReport) -> set[str]:
    return {f.probe for f in report.exploits}


@pytest.mark.parametrize(
    "builder",
    [envs.any_number_builder, envs.any_number_checked_builder],
    ids=["component", "correct"],
)
async def test_a_reward_paid_by_any_number_in_the_reply_fails_naming_an_enumeration(builder):
    report = await audit(builder)
    assert not report.ok
    assert {"enumerate_range", "enumerate_vocabulary", "buried", "hedge"} <= _exploits(report)
    table = report.table()
    assert "ENUMERATE_RANGE" in table.upper() and table.splitlines()[-1].startswith("FAIL")
    listed = next(p for p in report.probes if p.name == "enumerate_range")
    assert len(listed.example.split()) > 20  # the reply shown is the list itself
    assert "Its reply:" in next(f.message for f in report.exploits if f.probe == "enumerate_range")


async def test_a_substring_qa_reward_is_gamed_by_listing_the_answers():
    report = await audit(envs.substring_builder)
    assert "enumerate_vocabulary" in _exploits(report)


async def test_a_hedging_reward_is_found():
    report = await audit(envs.hedge_builder)
    assert "hedge" in _exploits(report)
    hedge = next(p for p in report.probes if p.name == "hedge")
    assert hedge.example.startswith("either ")


async def test_a_length_paying_reward_is_seen_through_a_long_reply_that_is_not_cut_off():
    report = await audit(envs.length_builder)
    assert "long" in _exploits(report)
    long = next(p for p in report.probes if p.name == "long")
    assert long.parse_status[0] != "truncated"  # scored by the env, not the cut-off rule


@pytest.mark.parametrize(
    "builder",
    [envs.add_builder, envs.capital_builder, envs.yes_no_builder, envs.first_word_builder],
    ids=["arithmetic", "qa", "yes-no", "two-words"],
)
async def test_the_clean_env_of_each_kind_passes_the_new_probes(builder):
    report = await audit(builder)
    assert report.ok, report.table()
    names = {p.name for p in report.probes}
    assert {"hedge", "buried", "long", "restated_then_answered"} <= names


async def test_a_last_number_parser_is_not_fooled_by_an_ordering():
    class LastNumberEnv(SingleTurnEnv):
        from mint_envkit import last_number as parser

    report = await audit(envs._builder(LastNumberEnv, envs.ADD_PROBLEMS))
    assert report.ok, report.table()
    hedge = next(p for p in report.probes if p.name == "hedge")
    # "either 5 or 6" reads 6, "either 6 or 5" reads 5: the least of the two is wrong
    assert hedge.mean_reward == next(p for p in report.probes if p.name == "wrong").mean_reward


async def test_the_baseline_of_a_two_word_task_reads_the_prompt():
    report = await audit(envs.first_word_builder, limit=40)
    assert report.baseline_correct >= 0.5
    assert re.match(r"(constant|first|second|last|uniform) ", report.baseline_name)
    assert f"best trivial baseline: {100 * report.baseline_correct:.1f}%" in report.table()


async def test_the_baseline_of_mostly_one_position_is_that_position():
    report = await audit(envs.mostly_a_builder)
    assert report.baseline_correct == 7 / 8
    assert report.baseline_name in ("constant 'A'", "first option")


async def test_custom_probes_from_the_call_the_env_and_a_file(tmp_path):
    class ShoutEnv(SingleTurnEnv):
        parser = first_number

        def audit_probes(self, problem):
            return [AuditProbe("env_says_units", f"{problem['answer']} apples", "answer_shaped")]

    builder = envs._builder(ShoutEnv, envs.ADD_PROBLEMS[:2])
    report = await audit(builder, probes=[AuditProbe("doubled", "{answer}{answer}", "non_answer")])
    by_name = {p.name: p for p in report.probes}
    assert by_name["doubled"].kind == "non_answer" and by_name["doubled"].example == "55"
    # "5 apples" is a right answer (first_number reads 5): scored correct, no exploit
    assert by_name["env_says_units"].kind == "answer_shaped"
    assert by_name["env_says_units"].correct_rate == 1.0 and report.ok
    path = tmp_path / "probes.jsonl"
    path.write_text(json.dumps({"name": "from_file", "reply": "{wrong}"}) + "\n")
    report = await audit(builder, probes=str(path))
    assert {p.name for p in report.probes} >= {"from_file", "env_says_units"}
    path.write_text("{not json\n")
    with pytest.raises(ConfigError, match=r"probes\.jsonl:1 is not JSON"):
        await audit(builder, probes=str(path))
    with pytest.raises(ConfigError, match="kind must be 'non_answer' or 'answer_shaped'"):
        await audit(builder, probes=[{"name": "x", "reply": "y", "kind": "sneaky"}])


def test_one_verdict_read_everywhere():
    warning = Finding("warning", "samples", "the base model's answers collapse")
    assert Verdict.of([warning]).line == "PASS: no exploit, no collapse (1 warning)"
    report = AuditReport(
        target="t", problems=1, probes=[], baseline_correct=None, findings=[warning]
    )
    assert report.ok and report.record()["verdict"] == report.table().splitlines()[-1]
    failing = [warning, Finding("no_gain", "learn", "...")]
    assert not Verdict.of(failing).ok and Verdict.of(failing).line.startswith("FAIL: no_gain")
