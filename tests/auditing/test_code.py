"""The code audit: weak tests caught with the trivial program shown, strong tests left alone,
reference solutions checked, mutation scores measured, everything in the real sandbox."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # code_envs

import code_envs as envs

from mint_envkit.auditing.code import audit_code
from mint_envkit.auditing.report import Finding
from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS

HERE = Path(__file__).parent
OLD_WARNING = "no usual form of the reference answer"
OLD = Finding("warning", "correct", f"{OLD_WARNING} (plain, \\boxed{{}}, ...) scores as correct")


def _kinds(findings: list[Finding]) -> list[str]:
    return [f.kind if f.kind != "warning" else f"warning:{f.probe}" for f in findings]


async def test_weak_tests_of_several_kinds_are_caught_with_the_program_that_passes_them():
    code = await audit_code(envs.groups([*envs.MOSTLY_TRUE, *envs.OTHER_WEAK]), mutants=0)
    passed = {p.label: p.trivial_passed for p in code.problems}
    assert passed["is_even"] == passed["is_positive"] == passed["is_sorted"] == ("returning True",)
    assert passed["add"] == ()  # its tests expect 5, 0 and 7: nothing trivial passes
    assert {"returning 0", "returning False"} <= set(passed["count_vowels"])
    assert passed["absolute"] == ("returning its first argument",)
    # its test asserts nothing: every program that returns passes (one that raises, or
    # defines nothing, errors; its prompt shows no example output to return)
    returning = {
        p.name for p in TRIVIAL_PROGRAMS if p.defines and p.returns.startswith(("return", "pass"))
    }
    assert set(passed["increment"]) == returning
    echo, silent = code.problems[7], code.problems[8]
    assert echo.trivial_passed == ("returning its first argument",)
    assert "doing nothing (pass)" in silent.trivial_passed
    assert echo.weak_program == "import sys\nsys.stdout.write(sys.stdin.read())"
    assert code.baseline == (4 / 9, "program returning True")  # is_even ... increment

    found = code.findings([])
    assert _kinds(found) == ["weak_tests"]  # with solutions, and mutation testing off
    message = found[0].message
    assert message.startswith("8 of 9 problem(s) pass with a trivial program")
    assert "problem 0 (is_even): the program returning True passes all 3 test(s):\n" in message
    assert "      def is_even(*args, **kwargs):\n          return True" in message
    assert "def absolute(*args, **kwargs):\n          return args[0] if args else None" in message
    assert "problem 3 (add)" not in message
    assert "passes all 2 test(s) (also passing: returning 0)" in message  # False == 0 first


async def test_strong_tests_are_not_flagged_and_their_mutants_are_killed():
    code = await audit_code(envs.groups(envs.STRONG), mutants=20)
    assert code.findings([OLD]) == []  # the probes' answer-form warning means nothing here
    assert code.baseline == (0.0, "program returning True")
    by_label = {p.label: p for p in code.problems}
    assert all(p.solution_passes and not p.trivial_passed for p in code.problems)
    assert (by_label["add"].mutants, by_label["add"].survivors) == (1, ())
    assert (by_label["is_even"].mutants, by_label["is_even"].survivors) == (6, ())
    assert by_label["clamp"].survivors == (  # equivalent on integers: the tests are fine
        "line 2: `x < 0` -> `x <= 0`",
        "line 2: `0` -> `1`",
    )
    stdin = code.problems[3]
    assert stdin.mutants >= 3 and stdin.survivors == ()
    assert "mutation testing:" in "\n".join(code.lines())


async def test_the_mutation_score_counts_the_known_survivors_and_warns_on_weak_tests():
    code = await audit_code(envs.groups([envs.CLAMP_WEAK]), mutants=20)
    (clamp,) = code.problems
    assert clamp.mutants == 7
    assert clamp.survivors == (
        "line 2: `x < 0` -> `x <= 0`",
        "line 2: `0` -> `-1`",
        "line 2: `0` -> `1`",
    )
    assert clamp.survival == 3 / 7
    assert code.findings([]) == []  # below half: listed, not a warning
    capped = await audit_code(envs.groups([envs.CLAMP_WEAK, envs.OTHER_WEAK[1]]), mutants=3)
    clamp, absolute = capped.problems
    assert clamp.mutants == 3 and absolute.mutants == 3
    (warning,) = [f for f in capped.findings([]) if f.kind == "warning"]
    assert warning.probe == "mutants" and "problem 1 (absolute): 2 of 3 survive" in warning.message
    assert "problem 0 (clamp)" not in warning.message


async def test_a_solution_that_fails_its_own_tests_is_a_finding_with_the_failing_tests():
    code = await audit_code(envs.groups([*envs.BROKEN, envs.STRONG[0]]), mutants=5)
    double, half, add = code.problems
    assert (double.solution_passes, half.solution_passes, add.solution_passes) == (
        False,
        False,
        True,
    )
    assert double.mutation_note == half.mutation_note == "the solution fails its tests"
    (failed,) = [f for f in code.findings([]) if f.kind == "solution_fails"]
    assert failed.message.startswith("2 of 3 reference solution(s) fail their own tests")
    assert "double(2) gave 6, expected 4" in failed.message
    assert "problem 1 (half): error; SyntaxError" in failed.message


async def test_without_solutions_the_audit_says_so_instead_of_the_answer_form_warning():
    stripped = [{k: v for k, v in p.items() if k != "solution"} for p in envs.STRONG[:2]]
    bare = await audit_code(envs.groups(stripped), mutants=5)
    (said,) = bare.findings([OLD])
    assert said.kind == "warning" and said.probe == "solution"
    assert "no problem carries a reference `solution`" in said.message
    assert {p.mutation_note for p in bare.problems} == {"no reference solution"}


def test_the_cli_audit_of_a_code_env_reports_its_baseline_and_fails_on_weak_tests(capsys, tmp_path):
    from mint_envkit.cli import main

    spec = f"{HERE / 'code_envs.py'}:mostly_true_builder"
    argv = ["audit", spec, "--sample-model", "none", "--mutants", "1", "--out", str(tmp_path)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert OLD_WARNING not in out
    assert "correct                  reference        +1.000   100.0%" in out
    assert "best trivial baseline: 75.0% correct (program returning True)" in out
    assert "code env: 4 problem(s); a reference solution on 4 (4 pass their tests)" in out
    assert "WEAK_TESTS: 3 of 4 problem(s) pass with a trivial program" in out
    assert "FAIL: weak_tests found" in out
    record = json.loads((tmp_path / "audit.json").read_text())
    assert record["code"]["trivial_programs"]["returning True"] == 3
    assert record["baseline_name"] == "program returning True"


async def test_a_reward_that_pays_errors_is_caught_by_a_program_that_raises():
    # only assertion failures count as failures: a program that raises (or defines
    # nothing) makes every test an error, and this reward pays it in full
    buggy = await audit_code(envs.groups(envs.RAISES_PASS, env=envs.NoFailureEnv), mutants=0)
    passed = {p.label: set(p.trivial_passed) for p in buggy.problems}
    assert passed == {n: {"raising an exception", "defining nothing"} for n in passed}
    assert _kinds(buggy.findings([])) == ["weak_tests"]
    clean = await audit_code(envs.groups(envs.RAISES_PASS), mutants=0)
    assert clean.findings([]) == [] and clean.baseline[0] == 0.0


async def test_tests_that_are_only_the_prompts_example_are_passed_by_returning_it():
    buggy = await audit_code(envs.groups(envs.EXAMPLE_ONLY), mutants=0)
    assert {p.trivial_passed for p in buggy.problems} == {("the prompt's example output",)}
    message = buggy.findings([])[0].message
    assert "def cube(*args, **kwargs):\n          return 8" in message
    assert "def shout(*args, **kwargs):\n          return 'HI!'" in message
    clean = await audit_code(envs.groups(envs.EXAMPLE_AND_MORE), mutants=0)
    assert clean.findings([]) == []


async def test_partial_credit_a_constant_program_earns_half_of_is_a_finding():
    buggy = await audit_code(envs.groups(envs.HALF_FALSE, env=envs.SharePassedEnv), mutants=0)
    found = buggy.findings([])
    assert _kinds(found) == ["partial_credit"]  # no program passes: no weak_tests
    assert "earns 50% of a correct reply's reward on 2 of 2 problems" in found[0].message
    spread = await audit_code(envs.groups(envs.SPREAD_VALUES, env=envs.SharePassedEnv), mutants=0)
    assert spread.findings([]) == []  # a constant earns a quarter at most
