"""An audit's result: probes, findings, samples, learning check and cost, as a table and JSON.

The rules that turn probe rewards into findings live in :mod:`mint_envkit.auditing.rules`
(``exploit``, ``lenient``, ``crash``, ``inverted``, ``declared``, ``warning``); the
learning check's (``collapse``, ``no_gain``, ``position``) in
:mod:`mint_envkit.auditing.learn`.

An audit passes (exit status 0) when nothing but warnings and declared leniencies was
found; :class:`Verdict` says it once, and the table, ``audit.json`` and the exit status
all read it.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    from mint_envkit import audit

    report = await audit(builder)
    print(report.table())
    report.ok, [f.message for f in report.findings]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mint_envkit.auditing.probes import ProbeResult

if TYPE_CHECKING:
    from mint_envkit.auditing.code_report import CodeAudit

PASSING = ("warning", "declared")
"""The kinds of finding that do not fail an audit.

Example::

    "declared" in PASSING   # True
"""


@attrs.frozen
class Finding:
    """One thing the audit found.

    Attributes:
        kind: ``exploit``, ``lenient``, ``crash``, ``inverted``, ``partial_credit``,
            ``collapse``, ``no_gain``, ``position``, ``shortcut``, ``leak``,
            ``unpaid_format``, ``no_signal``, ``answer_key``, ``weak_tests``,
            ``solution_fails`` (each fails the audit), ``warning`` or ``declared`` (they
            do not).
        probe: the probe (or check) it is about (the first, when it covers several).
        message: what was found and what to do.
        covers: every probe it is about, when more than one shares the cause.

    Example::

        Finding("exploit", "cut_off", "a reply cut off at the token limit earns -0.1 ...")
    """

    kind: str
    probe: str
    message: str
    covers: tuple[str, ...] = ()

    @property
    def fails(self) -> bool:
        """Whether it fails the audit (everything but a ``warning`` or ``declared``)."""
        return self.kind not in PASSING


@attrs.frozen
class Verdict:
    """The audit's verdict, computed once from its findings; everything prints this.

    Example::

        Verdict.of([Finding("warning", "samples", "...")]).line
        # 'PASS: no exploit, no collapse (1 warning)'
    """

    ok: bool
    failed: tuple[str, ...]
    warnings: int
    declared: int = 0

    @classmethod
    def of(cls, found: Sequence[Finding]) -> Verdict:
        """The verdict of ``found``.

        Example::

            Verdict.of([]).ok   # True
        """
        failed = tuple(sorted({f.kind for f in found if f.fails}))
        warnings = sum(f.kind == "warning" for f in found)
        declared = sum(f.kind == "declared" for f in found)
        return cls(ok=not failed, failed=failed, warnings=warnings, declared=declared)

    @property
    def line(self) -> str:
        """``PASS: ...`` or ``FAIL: ...``, with the kinds found."""
        notes = [f"{self.warnings} warning{'s' * (self.warnings != 1)}"] if self.warnings else []
        if self.declared:
            notes.append(
                f"{self.declared} declared lenienc" + ("ies" if self.declared != 1 else "y")
            )
        note = f" ({', '.join(notes)})" if notes else ""
        if self.ok:
            return f"PASS: no exploit, no collapse{note}"
        return f"FAIL: {', '.join(self.failed)} found, see above{note}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _norm(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def apart(value: float, other: float) -> tuple[str, str]:
    """Both rewards with the fewest decimals (3 to 9) that tell them apart (signed).

    A probe that earns 0.0002 more than a wrong answer is an exploit, and a line saying
    "+0.000, more than a wrong answer (+0.000)" would read as a contradiction.

    Example::

        assert apart(0.0002, 0.0) == ("+0.0002", "+0.0000")
        assert apart(0.5, 0.25) == ("+0.500", "+0.250")
    """
    for digits in range(3, 10):
        a, b = f"{value:+.{digits}f}", f"{other:+.{digits}f}"
        if a != b:
            return a, b
    return f"{value:+.3f}", f"{other:+.3f}"  # equal: the usual 3 decimals


def percent(value: float | None) -> str:
    """A share as ``12.5%`` (``-`` when unknown).

    Example::

        percent(0.125), percent(None)   # ('12.5%', '-')
    """
    return "-" if value is None else f"{100 * value:.1f}%"


def shown(reply: str, limit: int = 120) -> str:
    """A reply as a report quotes it: whitespace folded, cut at ``limit`` characters.

    Example::

        shown("either\\n5 or 6")   # "'either 5 or 6'"
    """
    text = " ".join(reply.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


@attrs.frozen
class AuditReport:
    """Everything :func:`~mint_envkit.auditing.audit` measured.

    Attributes:
        target: what was audited.
        problems: how many problems the probes ran on.
        probes: each probe's rewards.
        baseline_correct: the best trivial policy's correctness on these problems (a
            constant answer, a candidate of the prompt by position, a uniform pick; see
            :mod:`mint_envkit.rollouts.baselines`), scored by the env's check (None
            without reference answers).
        baseline_name: that policy, in words (``constant 'no'``, ``second quoted``).
        basis: what "right" means in the probes' ``correct`` column and the baseline:
            ``correct`` (the env's own, or a game's success metric) or ``reward`` (the env
            reports neither: earning the correct reply's reward); None when nothing could
            be judged.
        game: the env is a game: its probes play whole episodes, the yardsticks are a
            winning and an honest losing episode, the baseline the best trivial game
            policy (:mod:`mint_envkit.auditing.game_probes`).
        findings: exploits, warnings, collapse, no gain, position.
        samples: real samples of a model: ``model``, ``samples``, ``correct``,
            ``mean_reward``, ``parse_status`` (status -> share), ``truncated_rate``, the
            answer figures and ``headline`` (the evaluation's line); None when not run.
            The sampled replies themselves are in ``samples.jsonl`` beside ``audit.json``.
        learn: the learning check: ``steps``, ``before`` and ``after`` (held-out
            figures), ``claim`` (the before/after claim, measured where nothing is cut
            off), ``counterfactual`` figures, ``log_path``; None when not run.
        cost: the MinT cost preview (tokens per step, planned steps, totals, money when
            prices were given); None without samples.
        code: a code env's audit (reference solutions, trivial programs, mutation
            scores: :class:`~mint_envkit.auditing.code_report.CodeAudit`); None for other envs.

    Example::

        # not run: `report` is an AuditReport, built elsewhere
        report.ok, report.exploits, print(report.table())
    """

    target: str
    problems: int
    probes: list[ProbeResult]
    baseline_correct: float | None
    findings: list[Finding]
    samples: dict[str, Any] | None = None
    learn: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    baseline_name: str | None = None
    basis: str | None = None
    code: CodeAudit | None = None
    game: bool = False

    @property
    def exploits(self) -> list[Finding]:
        """The findings of kind ``exploit``."""
        return [f for f in self.findings if f.kind == "exploit"]

    @property
    def collapsed(self) -> bool:
        """Whether the learning check flagged collapse."""
        return any(f.kind == "collapse" for f in self.findings)

    @property
    def verdict(self) -> Verdict:
        """The one verdict (the table's last line, ``audit.json``'s, the exit status)."""
        return Verdict.of(self.findings)

    @property
    def ok(self) -> bool:
        """Nothing but warnings found (what the exit status says)."""
        return self.verdict.ok

    def record(self) -> dict[str, Any]:
        """The JSON report (``audit.json``).

        Example::

            # not run: `report` is an AuditReport, built elsewhere
            json.dumps(report.record())
        """
        return {
            "target": self.target,
            "ok": self.ok,
            "verdict": self.verdict.line,
            "problems": self.problems,
            "baseline_correct": self.baseline_correct,
            "baseline_name": self.baseline_name,
            "basis": self.basis,
            "game": self.game,
            "probes": [p.record() for p in self.probes],
            "findings": [attrs.asdict(f) for f in self.findings],
            "samples": self.samples,
            "learn": self.learn,
            "cost": self.cost,
            "code": None if self.code is None else self.code.record(),
        }

    def to_json(self) -> str:
        """:meth:`record` as indented JSON text."""
        return json.dumps(self.record(), indent=2, default=str)

    def _probe_lines(self) -> list[str]:
        flagged: dict[str, str] = {}
        for finding in sorted(self.findings, key=lambda f: f.fails):
            flagged.update(dict.fromkeys(finding.covers or (finding.probe,), finding.kind))
        yardstick = "loses_honestly" if self.game else "wrong"
        wrong = next((p.mean_reward for p in self.probes if p.name == yardstick), None)
        right = "won" if self.game else "correct"
        lines = [f"{'probe':<24} {'kind':<14} {'reward':>8} {right:>8}  flag"]
        for probe in self.probes:
            flag = flagged.get(probe.name, "").upper()
            reward = _fmt(probe.mean_reward)
            if flag and probe.mean_reward is not None and wrong is not None:
                reward = apart(probe.mean_reward, wrong)[0]  # shown apart from the wrong one
            does = f"  ({probe.does})" if probe.does else ""
            lines.append(
                f"{probe.name:<24} {probe.kind:<14} {reward:>8} "
                f"{percent(probe.correct_rate):>8}  {flag}{does}".rstrip()
            )
        return lines

    def _sample_lines(self) -> list[str]:
        s = self.samples or {}
        if not s:
            return []
        statuses = ", ".join(f"{k} {percent(v)}" for k, v in sorted(s["parse_status"].items()))
        lines = [
            f"samples of {s['model']} ({s['episodes']} replies, reply limit "
            f"{s.get('max_tokens', '?')} tokens): {s.get('headline', '')}",
            f"  mean reward {_fmt(s['mean_reward'])}; parse status: {statuses}",
        ]
        tools = s.get("tools") or {}
        if tools.get("calls_per_episode") is not None:
            lines.append(
                f"  tool calls {tools['calls_per_episode']:.2f}/episode, "
                f"{percent(tools.get('calling'))} of episodes call a tool, "
                f"{percent(tools.get('valid'))} of calls valid, {percent(tools.get('errors'))} "
                f"errors ({percent(tools.get('timeouts'))} timeouts)"
                + (f"; per tool: {tools['per_tool']}" if tools.get("per_tool") else "")
            )
        if s.get("collapse"):
            lines.append("  their answers collapse (a warning, below: it is the base model's)")
        return lines

    def _learn_lines(self) -> list[str]:
        learn = self.learn or {}
        if not learn:
            return []
        lines = [f"learning check ({learn['steps']} steps of {learn['model']}):"]
        claim = learn.get("claim")
        lines.append("  " + (claim["line"] if claim else "no before/after evals were logged"))
        if learn.get("headline"):
            lines.append(f"  after: {learn['headline']}")
        health = learn.get("health") or []
        if health:
            lines.append(
                "  per step: truncated / groups with signal / datums with an advantage / "
                "gradient norm: "
                + ", ".join(
                    f"{_share(h.get('truncated'))} / {_share(h.get('signal'))} / "
                    f"{_share(h.get('advantaged'))} / {_norm(h.get('grad_norm'))}"
                    for h in health
                )
            )
        if learn.get("not_learning"):
            lines.append(f"  {learn['not_learning']}")
        return lines

    def table(self) -> str:
        """The terminal report: probes, baseline, samples, learning, cost, verdict.

        Example::

            # not run: `report` is an AuditReport, built elsewhere
            print(report.table())
        """
        lines = [f"audit of {self.target}: {self.problems} problem(s)", ""]
        lines += self._probe_lines()
        lines.append("")
        if self.basis == "reward":
            lines.append(
                "(the env reports no `correct`: 'correct' here and below is earning the "
                "correct reply's reward)"
            )
        name = f" ({self.baseline_name})" if self.baseline_name else ""
        right = "earn the correct reply's reward" if self.basis == "reward" else "correct"
        if self.game:
            right = "of games won"
            lines.append(
                "(a game: each probe plays whole episodes; 'won' is the env's success metric; "
                "the yardsticks are 'wins' and 'loses_honestly', valid wrong moves)"
            )
        lines.append(f"best trivial baseline: {percent(self.baseline_correct)} {right}{name}")
        lines += self.code.lines() if self.code is not None else []
        lines += self._sample_lines()
        lines += self._learn_lines()
        if self.cost:
            c = self.cost
            money = f", ${c['total_usd']:.2f}" if c.get("total_usd") is not None else ""
            lines.append(
                f"MinT cost preview: per step {c['sampled_tokens_per_step']:,} sampled, "
                f"{c['prefill_tokens_per_step']:,} prompt, {c['trained_tokens_per_step']:,} "
                f"trained tokens; x {c['planned_steps']} steps = "
                f"{c['total_tokens']:,} tokens{money}"
            )
        lines.append("")
        for finding in self.findings:
            lines.append(f"{finding.kind.upper()}: {finding.message}")
        lines.append(self.verdict.line)
        return "\n".join(lines)
