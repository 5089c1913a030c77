"""Issue 44: the audit's strict second opinion, its generated probes, and one finding per
cause. Each planted bug is one member of a class (tests/auditing/lenient_envs.py); its
clean twin passes.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
from pathlib import Path

import hypothesis
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lenient_envs

import lenient_envs as envs

from mint_envkit.auditing import AuditReport, audit


def _failing(report: AuditReport) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for finding in report.findings:
        if finding.fails:
            out.setdefault(finding.kind, []).append(finding.message)
    return out


def _row(report: AuditReport, name: str):
    return next(p for p in report.probes if p.name == name)


@pytest.mark.parametrize(
    ("builder", "found"),
    [
        # the case: `not abs(v - a) > 1e-6` holds for NaN
        (envs.nan_builder, {"nan"}),
        # relative error against the reply: inf <= 1e-6 * inf
        (envs.relative_builder, {"inf", "-inf", "+inf", "Infinity"}),
        # `v <= a`: any smaller value, -inf included
        (envs.at_most_builder, {"-inf", "-Infinity"}),
    ],
    ids=["nan-tolerance", "reply-relative", "at-most"],
)
async def test_a_grader_that_pays_no_finite_number_fails_showing_the_reply(builder, found):
    report = await audit(builder, limit=8)
    assert not report.ok, report.table()
    lenient = _failing(report)["lenient"]
    row = _row(report, "gen_nonfinite")
    assert row.example in found and row.smallest and row.correct_rate == 1.0
    assert any(f"'gen_nonfinite' '{row.example}'" in m and "no finite number" in m for m in lenient)
    assert "LENIENT" in report.table() and report.table().splitlines()[-1].startswith("FAIL")


async def test_numbers_merely_near_the_answer_are_found_and_a_crash_is_a_row():
    # int(float(v)) == int(float(a)): 5.5 is 5; and int(inf) raises OverflowError
    report = await audit(envs.truncating_builder)
    failing = _failing(report)
    assert "'gen_nearby'" in failing["lenient"][0] and "another number" in failing["lenient"][0]
    (crash,) = failing["crash"]
    assert "raises OverflowError" in crash and "Traceback" not in report.table()


@pytest.mark.parametrize(
    ("builder", "family", "why"),
    [
        (envs.contained_builder, "gen_part", "other text"),  # `parsed in answer`
        (envs.fuzzy_builder, "gen_lookalike", "other text"),  # 75% similar
        (envs.one_field_builder, "gen_fields", "missing fields"),  # reads the name only
    ],
    ids=["contained", "fuzzy", "one-field"],
)
async def test_text_and_structure_graders_that_pay_part_of_the_answer_fail(builder, family, why):
    report = await audit(builder)
    row = _row(report, family)
    assert row.disagreements and row.disagreements[0].reply == row.example
    assert why in row.disagreements[0].why
    assert any(f"'{family}'" in m for m in _failing(report)["lenient"])


@pytest.mark.parametrize(
    "builder",
    [
        envs.strict_city_builder,
        envs.whole_record_builder,
        envs.dict_record_builder,
        envs.fraction_builder,
        envs.latex_builder,
        envs.word_number_builder,  # its parser reads "three" as "3": no false alarm
    ],
    ids=["city", "record", "dict-record", "fraction", "latex-fraction", "word-number"],
)
async def test_the_clean_twins_pass(builder):
    report = await audit(builder)
    assert report.ok, report.table()
    assert any(p.kind == "generated" for p in report.probes)
    # a wrong answer is wrong (for a dict answer too: written as JSON, as the reply is)
    assert next(p for p in report.probes if p.name == "wrong").correct_rate == 0.0


async def test_declared_leniency_is_shown_not_failed():
    report = await audit(envs.clean_tolerance_builder)
    assert report.ok, report.table()
    declared = [f for f in report.findings if f.kind == "declared"]
    assert declared and "within 1e-6" in declared[0].message
    assert report.verdict.line.endswith("(1 declared leniency)")
    # the same fuzzy grader fails undeclared and passes declared, naming its reason
    assert not (await audit(envs.fuzzy_builder)).ok
    report = await audit(envs.declared_fuzzy_builder)
    assert report.ok and "a typo or two" in report.table()
    # an equivalence declared for one value: that value only
    report = await audit(envs.equivalent_builder)
    assert report.ok, report.table()
    (declared,) = [f for f in report.findings if f.kind == "declared"]
    assert "'0.33' for '1/3'" in declared.message and "audit_equivalent" in declared.message


async def test_the_search_is_seeded_and_can_be_turned_off():
    first = await audit(envs.fuzzy_builder, seed=3)
    again = await audit(envs.fuzzy_builder, seed=3)
    assert [(p.name, p.example, p.tried) for p in first.probes] == [
        (p.name, p.example, p.tried) for p in again.probes
    ]
    off = await audit(envs.nan_builder, search=0)
    assert not any(p.kind == "generated" for p in off.probes)
    assert off.ok  # the listed probes alone do not see NaN: why the search exists
    record = first.record()
    generated = [p for p in record["probes"] if p["kind"] == "generated"]
    assert generated and all("tried" in p for p in generated)


def test_searches_run_in_threads_that_outlive_the_event_loop_with_the_callers_context(
    monkeypatch,
):
    """A search in a fresh thread rebuilds Hypothesis' per-thread caches (about twice
    its CPU, benchmarks/audit_search_threads.py): the searches of two audits under two
    asyncio.run calls run in threads that are still there after both loops ended (the
    default executor's are joined with their loop), and see the caller's context."""
    marker = contextvars.ContextVar("marker", default=None)
    seen: list[tuple[threading.Thread, object]] = []
    find = hypothesis.find

    def watched(*args, **kwargs):
        seen.append((threading.current_thread(), marker.get()))
        return find(*args, **kwargs)

    monkeypatch.setattr(hypothesis, "find", watched)

    async def one(value):
        marker.set(value)
        return await audit(envs.nan_builder)

    first, second = asyncio.run(one("a")), asyncio.run(one("b"))
    assert not first.ok and not second.ok  # the search still finds the NaN grader
    threads = {thread for thread, _ in seen}
    assert threads and all(thread.is_alive() for thread in threads), threads
    assert all(thread is not threading.main_thread() for thread in threads)
    assert {value for _, value in seen} == {"a", "b"}


async def test_a_reply_that_raises_is_one_finding_per_exception_never_a_traceback():
    report = await audit(envs.raising_builder)
    (crash,) = [f for f in report.findings if f.kind == "crash"]
    assert crash.message.startswith("the env raises ValueError on ")
    assert len(crash.covers) > 3  # many probes, one cause
    rows = {p.name: p for p in report.probes}
    assert rows["hedge"].errors and rows["hedge"].parse_status[0].startswith("error: ValueError")


@pytest.mark.parametrize(
    "builder", [envs.fraction_builder, envs.latex_builder], ids=["a/b", "latex"]
)
async def test_answers_that_are_no_plain_number_do_not_crash_the_audit(builder):
    report = await audit(builder)  # wrong_value did float("25/49") before
    wrong = _row(report, "wrong")
    assert wrong.correct_rate == 0.0 and "/" in wrong.example


@pytest.mark.parametrize(
    ("builder", "kind"),
    [(envs.inverted_builder, "inverted"), (envs.inverted_plain_builder, "exploit")],
    ids=["reward_correct-below-incorrect", "plain-function-loss"],
)
async def test_a_reward_that_pays_wrong_answers_at_least_as_much_is_said_once(builder, kind):
    report = await audit(builder)
    failing = [f for f in report.findings if f.fails]
    assert [f.kind for f in failing] == [kind], report.table()


def test_the_strict_comparison_reads_each_kind():
    from mint_envkit.auditing.strict import answer_kind, strict_verdict

    assert answer_kind("25/49") == "number" and answer_kind('{"a": 1}') == "structure"
    assert strict_verdict("0.50", "1/2").same and strict_verdict("nan", "0.5").same is None
    assert strict_verdict("1e999", "3").same is False  # a finite literal, another number
    assert strict_verdict("0.30000000000000004", "0.3").same  # float noise
    assert strict_verdict("ＰＡＲＩＳ", "paris").same  # fullwidth letters are letters
    assert strict_verdict("раris", "paris").same is False  # a Cyrillic р is not
    assert strict_verdict("**Paris.**", "Paris").same
    assert strict_verdict("[2, 1]", [1, 2]).why == "item 0: another value"
    assert strict_verdict('{"age": 36, "name": "Ada"}', {"name": "Ada", "age": 36}).same
    assert strict_verdict("{'name': 'Ada'}", {"name": "Ada", "age": 36}).why == (
        "missing fields ['age']"
    )
    assert strict_verdict("Ada", {"name": "Ada"}).same is None
