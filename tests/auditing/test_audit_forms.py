"""Issue 44, round 2: the form of the answer. A reward that reads another form than the
prompt asks for (``unpaid_format``), a reward that never varies (``no_signal``), and the
strict comparison's own forms where the task asks for them (the answer's case, a
fraction in lowest terms); envs other than the reward zoo's (tests/auditing/rule_envs.py),
each beside a clean twin.

The generated search is off (``search=0``) where the rule under test does not need it:
the listed probes and the baselines are what these rules read.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # rule_envs

import rule_envs as envs

from mint_envkit.auditing import audit
from mint_envkit.auditing.formats import requested_forms
from mint_envkit.auditing.strict import case_matters, lowest_terms_asked, strict_verdict


def failing(report) -> list[tuple[str, str]]:
    return sorted((f.kind, f.probe) for f in report.findings if f.fails)


async def test_a_reward_that_ignores_the_asked_answer_line_is_unpaid_format():
    buggy = await audit(envs.answer_line_builder(fixed=False), quiet=True, search=0)
    assert failing(buggy) == [("unpaid_format", "correct")], buggy.table()
    message = buggy.findings[-1].message
    assert "'Answer: Paris', which scores wrong on 6 of 6 problems" in message
    fixed = await audit(envs.answer_line_builder(fixed=True), quiet=True, search=0)
    assert fixed.ok, fixed.table()


def test_the_forms_a_prompt_asks_for():
    assert requested_forms("End with a line 'Answer: <city>'.") == ["Answer: {}"]
    assert requested_forms("Reason in <think></think>, answer in <result></result>.") == [
        "<result>{}</result>"
    ]
    assert requested_forms("Put it in \\boxed{}.") == ["\\boxed{{{}}}"]
    assert requested_forms("Reply with the number only.") == []


async def test_a_reward_that_never_varies_is_no_signal_not_a_warning():
    buggy = await audit(envs.flat_builder(fixed=False), quiet=True, search=0)
    assert failing(buggy) == [("no_signal", "correct")], buggy.table()
    assert "every one of the" in buggy.findings[0].message
    fixed = await audit(envs.flat_builder(fixed=True), quiet=True, search=0)
    assert fixed.ok and not [f for f in fixed.findings if f.kind == "no_signal"], fixed.table()


async def test_the_case_counts_where_the_task_is_the_case():
    buggy = await audit(envs.lower_case_builder(fixed=False), quiet=True)
    kinds = failing(buggy)
    assert ("lenient", "gen_spelling") in kinds, buggy.table()
    lenient = next(f for f in buggy.findings if f.kind == "lenient")
    assert "'OCEAN' for 'ocean' (another case" in lenient.message
    fixed = await audit(envs.lower_case_builder(fixed=True), quiet=True)
    assert fixed.ok, fixed.table()


def test_case_matters_only_where_the_prompt_writes_the_answer_in_another_case():
    assert case_matters("ocean", "Write the word 'OCEAN' in lower case.")
    assert not case_matters("Paris", "What is the capital of France?")  # not in the prompt
    assert not case_matters("Paris", "Is it 'Paris' or 'Lyon'?")  # written as it is
    assert not case_matters("42", "What is 40 + 2?")  # no letters
    assert strict_verdict("OCEAN", "ocean", case=True).why == "another case"
    assert strict_verdict("OCEAN", "ocean").same  # case folds elsewhere


async def test_a_fraction_not_in_lowest_terms_is_no_answer_where_lowest_terms_are_asked():
    buggy = await audit(envs.decimals_builder(fixed=False), quiet=True, search=0)
    assert failing(buggy) == [("lenient", "unreduced")], buggy.table()
    lenient = next(f for f in buggy.findings if f.kind == "lenient")
    assert "'6/8' for '3/4' (not in lowest terms; 8 of 8 problems)" in lenient.message
    fixed = await audit(envs.decimals_builder(fixed=True), quiet=True, search=0)
    assert fixed.ok, fixed.table()
    # where the prompt does not ask for lowest terms, 6/8 is 3/4: no probe, no finding
    unasked = await audit(envs.decimals_builder(fixed=False, lowest=False), quiet=True, search=0)
    assert unasked.ok and "unreduced" not in {p.name for p in unasked.probes}, unasked.table()


def test_lowest_terms_are_asked_by_the_usual_words():
    for prompt in ("Simplify 6/8.", "Give it in lowest terms.", "Reduce the fraction 10/4."):
        assert lowest_terms_asked(prompt), prompt
    for prompt in ("What is 1/2 + 1/4?", "Reduce the speed by 5 km/h."):
        assert not lowest_terms_asked(prompt), prompt
    assert strict_verdict("6/8", "3/4", lowest=True).why == "not in lowest terms"
    assert strict_verdict("12/4", "3", lowest=True).same is False
    assert strict_verdict("6/8", "3/4").same and strict_verdict("0.75", "3/4", lowest=True).same
