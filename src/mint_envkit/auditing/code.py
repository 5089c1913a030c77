"""The audit of a code env: weak tests, found by running code in the real sandbox.

A :class:`~mint_envkit.sandbox.CodeEnv`'s answer is a list of tests, not a value in a
reply, so the probes that state an answer mean little there. What goes wrong in code
is tests that pass what they should not; :func:`audit_code` looks for it, every run in
the sandbox:

- the **reference solution** (a problem's optional ``solution``) is the correct reply:
  it runs through the env's own scoring (:meth:`CodeEnv.reference_reply
  <mint_envkit.sandbox.CodeEnv.reference_reply>`, then ``step``), and one that fails
  its own tests is a finding (``solution_fails``) with the failing tests; the probe
  table compares every probe with it;
- **trivial programs** (:mod:`mint_envkit.sandbox.trivial`): the functions the tests
  call, returning a constant (``True``, ``False``, ``0``, ``None``, ``''``, ``[]``),
  their first argument, or doing nothing (a stdin / stdout task: printing the constant,
  echoing its input, printing nothing). They are the code baseline (the best one's
  share of problems passed is the audit's best trivial baseline), and a problem that
  one passes is a finding (``weak_tests``) with the program shown;
- **mutation testing**: up to ``mutants`` small mutants of each passing solution
  (:mod:`mint_envkit.sandbox.mutants`) run against the tests under
  :data:`MUTANT_LIMITS`, all at once as the executor allows; the share that survive
  (pass every test) is reported per problem, the weakest listed with their surviving
  changes, and a problem where at least half survive is a warning. A survivor is a
  change the tests cannot see, or an equivalent one (the same behaviour): read it.

Example::

    # not run: `groups` is a list of GroupBuilders of a CodeEnv, built elsewhere
    from mint_envkit.auditing.code import audit_code

    code = await audit_code(groups, mutants=10)
    print("\\n".join(code.lines()))
    code.baseline   # (0.6, 'program returning True')
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.auditing.code_report import CodeAudit, ProblemCode
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError, SandboxError
from mint_envkit.progress import track
from mint_envkit.rollouts.judging import TIE, reward_share
from mint_envkit.sandbox.cases import Case, split_tests
from mint_envkit.sandbox.env import CodeEnv
from mint_envkit.sandbox.executor import Executor, Limits
from mint_envkit.sandbox.mutants import MAX_MUTANTS, Mutant
from mint_envkit.sandbox.mutants import mutants as make_mutants
from mint_envkit.sandbox.reward import default_executor, run_tests
from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS, called_names, example_output

MUTANT_LIMITS = Limits(wall_s=10.0, cpu_s=1.0)
"""The limits each mutant (and the solution it is compared with) runs under: one CPU
second, so a mutant that loops forever costs one second whatever the machine's load.

Example::

    assert MUTANT_LIMITS.cpu_s == 1.0
"""


def _label(env: CodeEnv, names: Sequence[str]) -> str:
    question = " ".join(env.question.split())
    return names[0] if names else question if len(question) <= 40 else question[:37] + "..."


def _why_not(result: Any) -> str:
    """Why a scored reply was not correct: its outcome and failing tests, or its parse."""
    logs = result.logs
    outcome = next((v for k, v in logs.items() if k.endswith("/outcome")), None)
    if outcome is None:
        return f"not scored correct (parse status {logs.get('parse_status')!r})"
    tests = next((v for k, v in logs.items() if k.endswith("/tests")), [])
    said = [v for k, v in logs.items() if k.startswith("code/") and k.endswith("/message") and v]
    failed = [
        f"`{t['test']}` {t['status']}{': ' + t['error'] if t['error'] else ''}"
        for t in tests
        if t["status"] != "pass"
    ]
    return "; ".join([str(outcome), *said[:1], *failed[:3]])


@attrs.frozen
class _Scored:
    """One reply through the env's whole step: its reward, ``correct`` (None when the
    env reports none), and why it is not correct ("" when it is, or unknown)."""

    reward: float | None
    correct: bool | None
    why: str = ""

    def passes(self, top: float | None) -> bool:
        """Right: the env's ``correct``; without one, earning ``top`` (the passing
        solution's reward, else 1.0)."""
        if self.correct is not None:
            return self.correct
        return self.reward is not None and self.reward >= (1.0 if top is None else top) - TIE


async def _scored(group: GroupBuilder, reply: str) -> _Scored:
    """The env's verdict on ``reply`` (its whole step)."""
    env = group.make_message_env()
    try:
        await env.initial_observation()
        result = await env.step({"role": "assistant", "content": reply})
    except SandboxError:
        raise
    except Exception as err:  # the env's own failure: reported, never a traceback
        return _Scored(None, False, f"the env raised {type(err).__name__}: {err}")
    correct = result.metrics.get("correct")
    scored = _Scored(float(result.reward), None if correct is None else correct == 1.0)
    return attrs.evolve(scored, why="" if scored.passes(None) else _why_not(result))


@attrs.define
class _Plan:
    """One problem's runs: what to run and, once run, what it gave."""

    group: GroupBuilder
    env: CodeEnv
    cases: list[Case]
    names: list[str]
    solution: str | None
    programs: dict[str, str] = attrs.Factory(dict)
    passed: dict[str, bool] = attrs.Factory(dict)
    rewards: dict[str, float | None] = attrs.Factory(dict)
    solution_passes: bool | None = None
    solution_error: str = ""
    solution_reward: float | None = None
    mutants: list[Mutant] = attrs.Factory(list)
    survivors: list[str] = attrs.Factory(list)
    note: str = ""
    cap: int = MAX_MUTANTS

    def share(self, name: str) -> float | None:
        """What trivial program ``name`` earns as a share of the passing solution's
        reward (None without one, or when the solution earns nothing above zero)."""
        return reward_share(self.rewards.get(name), self.solution_reward)

    def result(self, index: int) -> ProblemCode:
        trivial = tuple(p.name for p in TRIVIAL_PROGRAMS if self.passed.get(p.name))
        return ProblemCode(
            index=index,
            label=_label(self.env, self.names),
            tests=len(self.cases),
            solution=self.solution is not None,
            solution_passes=self.solution_passes,
            solution_error=self.solution_error,
            trivial_passed=trivial,
            weak_program=self.programs[trivial[0]] if trivial else "",
            mutants=0 if self.note else len(self.mutants),
            survivors=() if self.note else tuple(self.survivors),
            mutation_note=self.note,
            shares=tuple(
                (name, share, self.programs[name])
                for name in self.programs
                if not self.passed.get(name) and (share := self.share(name)) is not None
            ),
        )


def _plan(group: GroupBuilder, env: Any, cap: int) -> _Plan:
    if not isinstance(env, CodeEnv):
        raise ConfigError(f"the audited problems mix a CodeEnv with {type(env).__name__}")
    cases = split_tests(env.answer)
    names = called_names(cases)
    functions = any(case.stdin is None for case in cases)
    main = any(case.stdin is not None for case in cases)
    plan = _Plan(group, env, cases, names, env.problem.get("solution"), cap=cap)
    example = example_output(env.question)
    for program in TRIVIAL_PROGRAMS:
        source = program.source(names, functions=functions, main=main, example=example)
        if source is not None:
            plan.programs[program.name] = source
    return plan


def _behaviour(source: str) -> str:
    """Programs that behave alike run once: a function doing nothing returns None."""
    return source.replace("\n    pass", "\n    return None")


async def _first_phase(plans: list[_Plan], task: Any) -> None:
    """Each solution, then each trivial program (each distinct behaviour once), through
    the env's own scoring; a program without the env's ``correct`` is judged by the
    reward the passing solution earns."""

    async def solution(plan: _Plan, reply: str) -> None:
        scored = await _scored(plan.group, reply)
        plan.solution_passes, plan.solution_error = scored.passes(None), scored.why
        plan.solution_reward = scored.reward if plan.solution_passes else None
        task.advance()

    async def trivial(plan: _Plan, names: list[str]) -> None:
        scored = await _scored(plan.group, plan.env.reply_for(plan.programs[names[0]]))
        for name in names:
            plan.passed[name] = scored.passes(plan.solution_reward)
            plan.rewards[name] = scored.reward
        task.advance()

    jobs = []
    for plan in plans:
        reply = plan.env.reference_reply()
        if reply is not None:
            jobs.append(solution(plan, reply))
    await asyncio.gather(*jobs)
    jobs = []
    for plan in plans:
        alike: dict[str, list[str]] = {}
        for name, source in plan.programs.items():
            alike.setdefault(_behaviour(source), []).append(name)
        jobs += [trivial(plan, names) for names in alike.values()]
    await asyncio.gather(*jobs)


def _prepare_mutants(plan: _Plan) -> str:
    """Make ``plan``'s mutants; why its solution is not mutated ("" when it is)."""
    if plan.solution is None:
        return "no reference solution"
    if not plan.solution_passes:
        return "the solution fails its tests"
    try:
        plan.mutants = make_mutants(plan.solution, limit=plan.cap)
    except ConfigError as err:
        return str(err)
    if not plan.mutants:
        return "nothing to mutate in the solution (no comparison, constant, operator or return to move)"
    return ""


async def _mutation_phase(plans: list[_Plan], executor: Executor, task: Any) -> None:
    """The solutions under :data:`MUTANT_LIMITS` (a control), then their mutants."""

    async def outcome(plan: _Plan, source: str) -> str:
        run = await run_tests(source, plan.env.answer, executor=executor, limits=MUTANT_LIMITS)
        task.advance()
        return run.outcome

    controls = await asyncio.gather(*(outcome(plan, plan.solution or "") for plan in plans))
    for plan, control in zip(plans, controls, strict=True):
        if control != "pass":
            plan.note = f"the solution gives {control!r} under the audit's limits ({MUTANT_LIMITS})"
    pairs = [(plan, mutant) for plan in plans if not plan.note for mutant in plan.mutants]
    results = await asyncio.gather(*(outcome(plan, mutant.source) for plan, mutant in pairs))
    for (plan, mutant), result in zip(pairs, results, strict=True):
        if result == "pass":
            plan.survivors.append(mutant.description)


async def audit_code(
    groups: Sequence[GroupBuilder], *, mutants: int = MAX_MUTANTS, quiet: bool = False
) -> CodeAudit | None:
    """The code audit of ``groups`` (one per problem), or None when their env is no
    :class:`~mint_envkit.sandbox.CodeEnv`.

    ``mutants`` caps the mutants per problem (0: no mutation testing). Runs go through
    the sandbox concurrently, as many at once as its executor allows.

    Example::

        # not run: `groups` is a list of GroupBuilders of a CodeEnv, built elsewhere
        code = await audit_code(groups, mutants=10)
        [f.kind for f in code.findings([])]   # ['weak_tests']
    """
    check_integer(mutants, "audit(mutants=...)", least=0)
    if not groups or not isinstance(groups[0].make_message_env(), CodeEnv):
        return None
    envs = [group.make_message_env() for group in groups]
    plans = [_plan(group, env, mutants) for group, env in zip(groups, envs, strict=True)]
    started = time.monotonic()
    runs = sum(len({_behaviour(s) for s in p.programs.values()}) + (p.solution is not None)
               for p in plans)  # fmt: skip
    with track("audit code", runs, "runs", enabled=not quiet) as task:
        await _first_phase(plans, task)
    seconds, started = round(time.monotonic() - started, 2), time.monotonic()
    note = "" if mutants else "off (mutants=0)"
    for plan in plans if mutants else ():
        plan.note = _prepare_mutants(plan)
    ready = [plan for plan in plans if mutants and not plan.note]
    if ready:
        try:
            executor = await asyncio.to_thread(default_executor)
        except SandboxError as err:
            note = f"not run: {err}"
        else:
            total = sum(len(plan.mutants) + 1 for plan in ready)
            with track("audit mutants", total, "runs", enabled=not quiet) as task:
                await _mutation_phase(ready, executor, task)
    results = tuple(plan.result(index) for index, plan in enumerate(plans))
    mutation_seconds = round(time.monotonic() - started, 2) if ready else 0.0
    return CodeAudit(results, mutants, seconds, note, mutation_seconds)
