"""A code env's audit, as values: each problem's findings, the code baseline, the report.

:class:`CodeAudit` holds what :func:`~mint_envkit.auditing.code.audit_code` measured (one
:class:`ProblemCode` per problem) and turns it into findings (``solution_fails``,
``weak_tests``, and warnings for missing solutions and weak mutation scores), the
report's code section and its JSON (``audit.json``'s ``code``).

Example::

    from mint_envkit.auditing.code_report import CodeAudit, ProblemCode

    weak = ProblemCode(0, "is_even", 2, True, True, "", ("returning True",),
                       "def is_even(*args, **kwargs):\\n    return True", 0, (), "")
    code = CodeAudit((weak,), max_mutants=0, seconds=0.5)
    assert code.baseline == (1.0, "program returning True")
    assert [f.kind for f in code.findings([])] == ["weak_tests"]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.auditing.report import Finding
from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS

WEAK_SURVIVAL = 0.5
"""A problem whose solution's mutants survive at least this often is a warning.

Example::

    assert WEAK_SURVIVAL == 0.5
"""
_LISTED = 8  # problems listed in a finding or the weakest table


@attrs.frozen
class ProblemCode:
    """What the code audit found on one problem.

    Attributes:
        index: the problem's place among the audited ones (from 0).
        label: the function its tests call (or the question's start).
        tests: how many tests it has.
        solution: whether it carries a reference ``solution``.
        solution_passes: whether the env scored that solution correct (None without).
        solution_error: why it did not (the failing tests), or "".
        trivial_passed: the names of the trivial programs that pass every test.
        weak_program: the first of them, as run ("" when none passes).
        mutants: how many mutants ran (0: not measured).
        survivors: the surviving mutants' changes (``line N: ...``).
        mutation_note: why no mutation score was measured, or "".
        shares: (program, its reward as a share of the passing solution's, its source) of
            each trivial program that does not pass (partial credit, judged by reward).

    Example::

        problem = ProblemCode(0, "clamp", 2, True, True, "", (), "", 7, ("line 2: ...",), "")
        assert problem.survival == 1 / 7
    """

    index: int
    label: str
    tests: int
    solution: bool
    solution_passes: bool | None
    solution_error: str
    trivial_passed: tuple[str, ...]
    weak_program: str
    mutants: int
    survivors: tuple[str, ...]
    mutation_note: str
    shares: tuple[tuple[str, float, str], ...] = ()

    @property
    def survival(self) -> float | None:
        """The share of mutants that survived (None when none ran).

        Example::

            ProblemCode(0, "f", 1, False, None, "", (), "", 0, (), "no solution").survival  # None
        """
        return len(self.survivors) / self.mutants if self.mutants else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _indented(text: str) -> str:
    return "\n".join("      " + line for line in text.split("\n"))


def _some(items: Sequence[str], shown: int = _LISTED) -> list[str]:
    more = len(items) - shown
    return [*items[:shown], *([f"... and {more} more"] if more > 0 else [])]


@attrs.frozen
class CodeAudit:
    """The code audit of a set of problems: solutions, the code baseline, mutation scores.

    Attributes:
        problems: one :class:`ProblemCode` per audited problem.
        max_mutants: the cap on mutants per problem (0: mutation testing off).
        seconds: how long the solutions' and trivial programs' runs took.
        mutation_seconds: how long mutation testing took (its solutions and mutants).
        note: why mutation testing did not run at all (no sandbox), or "".

    Example::

        # not run: `code` is a CodeAudit, built elsewhere
        code.baseline, [p.survival for p in code.problems]
    """

    problems: tuple[ProblemCode, ...]
    max_mutants: int
    seconds: float
    note: str = ""
    mutation_seconds: float = 0.0

    def passed_by(self, name: str) -> int:
        """How many problems the trivial program ``name`` passes.

        Example::

            # not run: `code` is a CodeAudit, built elsewhere
            code.passed_by("returning True")   # 6
        """
        return sum(name in p.trivial_passed for p in self.problems)

    @property
    def baseline(self) -> tuple[float, str]:
        """The best trivial program's share of problems passed, and its name
        (``program returning True``); the first in :data:`TRIVIAL_PROGRAMS` on a tie.

        Example::

            # not run: `code` is a CodeAudit, built elsewhere
            code.baseline   # (0.6, 'program returning True')
        """
        best = max(TRIVIAL_PROGRAMS, key=lambda p: self.passed_by(p.name))
        return self.passed_by(best.name) / max(1, len(self.problems)), f"program {best.name}"

    def _weak_tests(self) -> list[Finding]:
        weak = [p for p in self.problems if p.trivial_passed]
        if not weak:
            return []
        shown = [
            f"  problem {p.index} ({p.label}): the program {p.trivial_passed[0]} passes "
            f"all {p.tests} test(s)"
            + (
                f" (also passing: {', '.join(p.trivial_passed[1:])})"
                if p.trivial_passed[1:]
                else ""
            )
            + f":\n{_indented(p.weak_program)}"
            for p in weak
        ]
        return [
            Finding(
                "weak_tests",
                "trivial_program",
                f"{len(weak)} of {len(self.problems)} problem(s) pass with a trivial program, "
                "so their tests cannot tell a solution from it; add cases whose expected "
                "values differ (True and False, several values, an input the output is not "
                "equal to):\n" + "\n".join(_some(shown)),
            )
        ]

    def _solutions(self) -> list[Finding]:
        if not any(p.solution for p in self.problems):
            return [
                Finding(
                    "warning",
                    "solution",
                    "no problem carries a reference `solution`, so no correct reply was "
                    "tried and the tests' strength was not measured (mutation testing); add "
                    "the solution's source to each problem as `solution`",
                )
            ]
        failing = [p for p in self.problems if p.solution_passes is False]
        if not failing:
            return []
        shown = [f"  problem {p.index} ({p.label}): {p.solution_error}" for p in failing]
        return [
            Finding(
                "solution_fails",
                "solution",
                f"{len(failing)} of {sum(p.solution for p in self.problems)} reference "
                "solution(s) fail their own tests through the env's scoring; fix the "
                "solution or the tests:\n" + "\n".join(_some(shown)),
            )
        ]

    def _mutation(self) -> list[Finding]:
        weak = sorted(
            (p for p in self.problems if p.survival is not None and p.survival >= WEAK_SURVIVAL),
            key=lambda p: (-(p.survival or 0.0), p.index),
        )
        if not weak:
            return []
        shown = [
            f"  problem {p.index} ({p.label}): {len(p.survivors)} of {p.mutants} survive, "
            f"e.g. {'; '.join(p.survivors[:2])}"
            for p in weak
        ]
        return [
            Finding(
                "warning",
                "mutants",
                f"the tests of {len(weak)} problem(s) pass at least half of their solution's "
                "mutants; add tests that tell these changes from the solution (a survivor "
                "may also be equivalent: the same behaviour):\n" + "\n".join(_some(shown)),
            )
        ]

    def findings(self, found: Sequence[Finding]) -> list[Finding]:
        """``found`` without the probes' warning that no usual answer form scores correct,
        or that no reply is paid (meaningless for code: this audit says whether a solution
        exists and passes), and this audit's own findings.

        Example::

            # not run: `code` is a CodeAudit, built elsewhere
            [f.kind for f in code.findings([])]   # ['weak_tests']
        """
        kept = [
            f for f in found if not (f.kind in ("warning", "no_signal") and f.probe == "correct")
        ]
        partial = [] if any(f.kind == "partial_credit" for f in kept) else self._partial()
        return [*kept, *self._solutions(), *self._weak_tests(), *partial, *self._mutation()]

    def _partial(self) -> list[Finding]:
        """The trivial programs judged by reward: one paid at least half the passing
        solution's reward on most problems is the audit's ``partial_credit`` finding
        (:func:`~mint_envkit.auditing.rules.partial_finding`)."""
        from mint_envkit.auditing.rules import partial_finding
        from mint_envkit.rollouts.judging import PARTIAL_SHARE, PartialCredit

        found = []
        for program in TRIVIAL_PROGRAMS:
            known = [s for p in self.problems for s in p.shares if s[0] == program.name]
            paid = [s for s in known if s[1] >= PARTIAL_SHARE]
            if paid:
                share = sum(s[1] for s in paid) / len(paid)
                judged = sum(bool(p.solution_passes) for p in self.problems)
                found.append(
                    PartialCredit(f"program {program.name}", len(paid), judged, share, paid[0][2])
                )
        finding = partial_finding(found)
        return [] if finding is None else [finding]

    def lines(self) -> list[str]:
        """The report's code section: solutions, the trivial programs, mutation scores.

        Example::

            # not run: `code` is a CodeAudit, built elsewhere
            print("\\n".join(code.lines()))
        """
        count = len(self.problems)
        with_solution = [p for p in self.problems if p.solution]
        passing = sum(bool(p.solution_passes) for p in with_solution)
        lines = [
            f"code env: {count} problem(s); a reference solution on {len(with_solution)}"
            + (f" ({passing} pass their tests)" if with_solution else "")
            + f"; {count * len(TRIVIAL_PROGRAMS) + len(with_solution)} runs in {self.seconds:.1f} s"
        ]
        lines.append(f"  {'trivial program (the code baseline)':<40} problems passed")
        for program in TRIVIAL_PROGRAMS:
            lines.append(f"  {program.name:<40} {self.passed_by(program.name)} of {count}")
        lines += self._mutation_lines()
        return lines

    def _mutation_lines(self) -> list[str]:
        if self.note or not self.max_mutants:
            return [f"  mutation testing: {self.note or 'off (mutants=0)'}"]
        measured = [p for p in self.problems if p.mutants]
        ran = sum(p.mutants for p in measured)
        survived = sum(len(p.survivors) for p in measured)
        lines = [
            f"  mutation testing: {ran} mutants of {len(measured)} solution(s) (at most "
            f"{self.max_mutants} each), {survived} survive ({_pct(survived / ran if ran else None)}"
            f"), in {self.mutation_seconds:.1f} s"
        ]
        weakest = sorted(measured, key=lambda p: (-(p.survival or 0.0), p.index))[:_LISTED]
        if weakest:
            lines.append(f"    {'problem':<28} {'mutants':>7} {'survive':>8}  surviving changes")
        for p in weakest:
            changes = "; ".join(p.survivors[:2]) + (" ..." if len(p.survivors) > 2 else "")
            lines.append(
                f"    {str(p.index) + ' ' + p.label:<28.28} {p.mutants:>7} "
                f"{_pct(p.survival):>8}  {changes or '-'}"
            )
        notes: dict[str, list[str]] = {}
        for p in self.problems:
            if p.mutation_note:
                notes.setdefault(p.mutation_note, []).append(str(p.index))
        for why, where in notes.items():
            lines.append(f"    not measured on problem(s) {', '.join(_some(where, 10))}: {why}")
        return lines

    def record(self) -> dict[str, Any]:
        """Its JSON form (``audit.json``'s ``code``).

        Example::

            # not run: `code` is a CodeAudit, built elsewhere
            code.record()["baseline_name"]   # 'program returning True'
        """
        correct, name = self.baseline
        return {
            "problems": [attrs.asdict(p) | {"survival": p.survival} for p in self.problems],
            "trivial_programs": {p.name: self.passed_by(p.name) for p in TRIVIAL_PROGRAMS},
            "baseline_correct": correct,
            "baseline_name": name,
            "max_mutants": self.max_mutants,
            "seconds": self.seconds,
            "mutation_seconds": self.mutation_seconds,
            "note": self.note,
        }
