"""The reward zoo (benchmarks/reward_zoo/): every case's bug is real, the audit still
catches what the recorded table says it catches, and no clean twin raises an alarm.

Two tests per case (xdist spreads them): on the buggy env, the case's demo reply earns
more than on its twin (or less, for a bug that withholds reward) and, when
benchmarks/reward_zoo/recorded.json says the audit catches the bug, the audit (probes
only) still fails it; on the clean twin, the audit passes. A code case's twin is audited
in its bug's test, in one ``shared_runs()`` block: the twin's programs that run on the
same tests as the buggy env's (every bug in the grader, not the tests) run once. A bug recorded as missed that
is caught now passes (rerun ``python benchmarks/reward_zoo/run.py --record`` to update
the table, then ``--docs``).

The held-out set (cases marked ``heldout=True``, the generalisation measure) is held the
same way, except that a twin is audited here only where the audit catches its bug (the
recorded run audits every twin): the tests stay cheap, and a held-out twin matters to
the suite only beside a catch it could make false.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mint_envkit.sandbox import CodeEnv, run_tests
from mint_envkit.sandbox.reward import shared_runs

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from reward_zoo.code import references  # noqa: E402
from reward_zoo.demo import demo_rewards_async, shows_bug  # noqa: E402
from reward_zoo.measure import audit_builder, build_quietly, classify  # noqa: E402
from reward_zoo.run import BEFORE, DOCS, RECORDED, docs_block, regressions, summary  # noqa: E402
from reward_zoo.zoo import FAMILIES, load_all  # noqa: E402

CASES = load_all()
RECORD = json.loads(RECORDED.read_text())
RECORDED_ROWS = {row["name"]: row for row in RECORD["cases"]}


def test_the_zoo_has_forty_cases_or_more_over_every_family():
    assert len(CASES) >= 40
    assert {case.family for case in CASES.values()} == set(FAMILIES)
    assert all(case.source.strip() and case.bug.strip() for case in CASES.values())


def test_the_held_out_set_is_sixteen_cases_or_more_and_reported_apart():
    heldout = [case for case in CASES.values() if case.heldout]
    assert len(heldout) >= 16
    assert len(CASES) - len(heldout) >= 40
    assert RECORD["summary"]["heldout"]["cases"] == len(heldout)
    assert all(row["heldout"] == CASES[row["name"]].heldout for row in RECORD["cases"])


def test_the_recorded_table_covers_every_case_and_only_them():
    assert set(RECORDED_ROWS) == set(CASES), "rerun python benchmarks/reward_zoo/run.py --record"
    assert RECORD["summary"] == summary(RECORD["cases"])


CODE_LIMIT = 4
"""The problems a code case's tests audit: its first 4 of 6-8 (each holds the bug there)."""


def is_code(name: str) -> bool:
    return issubclass(build_quietly(CASES[name], buggy=False).env, CodeEnv)


def cheap(name: str) -> dict:
    """The tests' audit options for a case. Mutation testing, where the audit has it, only
    warns (the tests assert no warning): off. A code case's audit runs 7 trivial programs
    and the solution per problem in the sandbox (about 5 CPU seconds for 8 problems), so
    its tests audit its first CODE_LIMIT problems; the recorded table audits them all."""
    return {"mutants": 0, **({"limit": CODE_LIMIT} if is_code(name) else {})}


TWINS = sorted(
    name
    for name, case in CASES.items()
    if not case.heldout or RECORDED_ROWS[name]["buggy"]["verdict"] == "caught"
)
"""The twins the tests audit: every original case's, and a held-out case's where its bug
is caught (module docstring)."""


async def audit_twin(name: str) -> None:
    now = await audit_builder(build_quietly(CASES[name], buggy=False), **cheap(name))
    assert now["error"] is None or RECORDED_ROWS[name]["clean"]["verdict"] == "error", (
        f"{name}: the audit raised on the clean twin: {now}"
    )
    assert now["ok"] is not False, f"{name}: the clean twin fails the audit (a false alarm): {now}"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_zoo_bug(name):
    case = CASES[name]
    limit = cheap(name).get("limit")
    with shared_runs():  # a code case's twin runs its grader's shared programs once
        buggy, clean = await demo_rewards_async(case, limit)
        assert shows_bug(case, buggy, clean), (
            f"{name}: the demo reply earns {buggy:+.3f} on the buggy env and {clean:+.3f} on "
            f"the twin; it should earn {case.demo.direction} on the buggy one"
        )
        recorded = RECORDED_ROWS[name]["buggy"]
        if recorded["verdict"] == "caught":
            now = await audit_builder(build_quietly(case, buggy=True), **cheap(name))
            assert now["ok"] is False, (
                f"{name}: the recorded table says the audit catches this bug "
                f"({recorded['failing']}); now: {now}"
            )
        if name in TWINS and is_code(name):
            await audit_twin(name)


@pytest.mark.parametrize("name", [name for name in TWINS if not is_code(name)])
async def test_zoo_twin(name):
    await audit_twin(name)


def _row(name: str, bug: str, twin: str = "clean") -> dict:
    return {"name": name, "buggy": {"verdict": bug}, "clean": {"verdict": twin}}


def test_a_lost_catch_is_a_regression_and_a_new_one_is_not():
    record = {"cases": [_row("a", "caught"), _row("b", "missed"), _row("c", "caught")]}
    now = [_row("a", "missed"), _row("b", "caught"), _row("c", "caught")]
    assert regressions(now, record) == ["a"]


def test_the_verdicts_of_a_case():
    passed = {"ok": True, "error": None, "warnings": []}
    failed = {"ok": False, "error": None, "warnings": []}
    crashed = {"ok": None, "error": "ValueError: x", "warnings": []}
    warned = {"ok": True, "error": None, "warnings": ["warning:last_number"]}
    assert classify(failed, passed) == ("caught", "clean")
    assert classify(passed, failed) == ("missed", "false_alarm")
    assert classify(warned, passed) == ("warned", "clean")
    assert classify(warned, warned) == ("missed", "clean")  # the twin warns the same
    assert classify(crashed, crashed) == ("error", "error")


def test_the_docs_carry_the_recorded_table():
    before = json.loads(BEFORE.read_text())
    block = docs_block(RECORD, before)
    for path in DOCS:
        assert block in path.read_text(), (
            f"{path} does not carry the recorded zoo table: python benchmarks/reward_zoo/run.py --docs"
        )


async def test_the_code_cases_reference_solutions_pass_the_clean_tests():
    for solution, tests in references():
        run = await run_tests(solution, tests)
        assert run.outcome == "pass", (solution, run.tests, run.message)
