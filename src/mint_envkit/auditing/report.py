"""An audit's result: probes, findings, samples, learning check and cost, as a table and JSON.

The rules that turn probe rewards into findings live here, in :func:`findings`:

- an **exploit** is a non-answer probe (:data:`~mint_envkit.auditing.probes.NON_ANSWER`)
  that earns more than a wrong answer, or any probe that earns as much as a correct
  reply;
- a **warning** is an answer-shaped probe (the most common answer, a number of the
  question) whose correctness beats the best constant-answer baseline, or a problem
  set where no usual form of the answer scores as correct;
- a **collapse** is a learning check whose final evaluation flags collapse (answers
  concentrated on one value, or correctness explained by a constant answer).

An audit passes (exit status 0) with no exploit and no collapse.

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
from typing import Any

import attrs

from mint_envkit.auditing.probes import NON_ANSWER, ProbeResult

_TIE = 1e-9


@attrs.frozen
class Finding:
    """One thing the audit found.

    Attributes:
        kind: ``exploit``, ``warning`` or ``collapse``.
        probe: the probe (or check) it is about.
        message: what was found and what to do.

    Example::

        Finding("exploit", "cut_off", "a reply cut off at the token limit earns -0.1 ...")
    """

    kind: str
    probe: str
    message: str


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def findings(probes: Sequence[ProbeResult], baseline_correct: float | None) -> list[Finding]:
    """The exploits and warnings in ``probes`` (rules in the module docstring).

    Example::

        # not run: `probes` is probe results, built elsewhere
        [f.probe for f in findings(probes, 0.5) if f.kind == "exploit"]   # ['cut_off']
    """
    by_name = {p.name: p for p in probes}
    correct = by_name["correct"].mean_reward if "correct" in by_name else None
    wrong = by_name["wrong"].mean_reward if "wrong" in by_name else None
    out: list[Finding] = []
    if correct is None:
        out.append(
            Finding(
                "warning",
                "correct",
                "no usual form of the reference answer (plain, \\boxed{}, <answer>, 'The "
                "answer is', 'Answer:') scores as correct, so no probe could be compared with "
                "a correct reply; check the env's parser and `check` with a correct reply",
            )
        )
    for probe in probes:
        mean = probe.mean_reward
        if probe.name == "correct" or mean is None:
            continue
        if correct is not None and mean >= correct - _TIE:
            out.append(
                Finding(
                    "exploit",
                    probe.name,
                    f"'{probe.name}' earns {mean:+.3f}, as much as a correct reply "
                    f"({correct:+.3f}): the reward does not tell it from a right answer",
                )
            )
        elif probe.name in NON_ANSWER and wrong is not None and mean > wrong + _TIE:
            out.append(
                Finding(
                    "exploit",
                    probe.name,
                    f"'{probe.name}' gives no answer but earns {mean:+.3f}, more than a wrong "
                    f"answer ({wrong:+.3f}): a policy learns to do this instead of trying; "
                    "lower its reward to at most the wrong answer's",
                )
            )
        rate = probe.correct_rate
        if (
            probe.kind == "answer_shaped"
            and probe.name != "wrong"
            and baseline_correct is not None
            and rate is not None
            and rate > baseline_correct + _TIE
        ):
            out.append(
                Finding(
                    "warning",
                    probe.name,
                    f"'{probe.name}' is scored correct on {_pct(rate)} of problems, above the "
                    f"best constant answer ({_pct(baseline_correct)}): a shortcut may explain "
                    "gains; check the problems",
                )
            )
    return out


@attrs.frozen
class AuditReport:
    """Everything :func:`~mint_envkit.auditing.audit` measured.

    Attributes:
        target: what was audited.
        problems: how many problems the probes ran on.
        probes: each probe's rewards.
        baseline_correct: the correctness of always giving the most common reference
            answer, scored by the env (None without reference answers).
        findings: exploits, warnings and collapse.
        samples: real samples of a model: ``model``, ``samples``, ``correct``,
            ``mean_reward``, ``parse_status`` (status -> share), ``truncated_rate``;
            None when not run.
        learn: the learning check: ``steps``, ``before`` and ``after`` (held-out
            metrics), ``log_path``; None when not run.
        cost: the MinT cost preview (tokens per step, planned steps, totals, money when
            prices were given); None without samples.

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

    @property
    def exploits(self) -> list[Finding]:
        """The findings of kind ``exploit``."""
        return [f for f in self.findings if f.kind == "exploit"]

    @property
    def collapsed(self) -> bool:
        """Whether the learning check flagged collapse."""
        return any(f.kind == "collapse" for f in self.findings)

    @property
    def ok(self) -> bool:
        """No exploit and no collapse (what the exit status says)."""
        return not self.exploits and not self.collapsed

    def record(self) -> dict[str, Any]:
        """The JSON report (``audit.json``).

        Example::

            # not run: `report` is an AuditReport, built elsewhere
            json.dumps(report.record())
        """
        return {
            "target": self.target,
            "ok": self.ok,
            "problems": self.problems,
            "baseline_correct": self.baseline_correct,
            "probes": [p.record() for p in self.probes],
            "findings": [attrs.asdict(f) for f in self.findings],
            "samples": self.samples,
            "learn": self.learn,
            "cost": self.cost,
        }

    def to_json(self) -> str:
        """:meth:`record` as indented JSON text."""
        return json.dumps(self.record(), indent=2, default=str)

    def table(self) -> str:
        """The terminal report: probes, baseline, samples, learning, cost, verdict.

        Example::

            # not run: `report` is an AuditReport, built elsewhere
            print(report.table())
        """
        flagged = {f.probe: f.kind for f in self.findings}
        lines = [f"audit of {self.target}: {self.problems} problem(s)", ""]
        lines.append(f"{'probe':<20} {'kind':<14} {'reward':>8} {'correct':>8}  flag")
        for probe in self.probes:
            flag = flagged.get(probe.name, "").upper()
            lines.append(
                f"{probe.name:<20} {probe.kind:<14} {_fmt(probe.mean_reward):>8} "
                f"{_pct(probe.correct_rate):>8}  {flag}"
            )
        lines.append("")
        lines.append(f"best constant-answer baseline: {_pct(self.baseline_correct)} correct")
        if self.samples:
            s = self.samples
            statuses = ", ".join(f"{k} {_pct(v)}" for k, v in sorted(s["parse_status"].items()))
            lines.append(
                f"samples of {s['model']} ({s['episodes']} replies): correct "
                f"{_pct(s['correct'])}, mean reward {_fmt(s['mean_reward'])}, truncated "
                f"{_pct(s['truncated_rate'])}; parse status: {statuses}"
            )
            if s.get("distinct") is not None:
                top = "" if s.get("top") is None else f" (most common {s['top']!r}"
                top += f", {_pct(s.get('top_share'))} of replies)" if top else ""
                lines.append(
                    f"  their answers: {s['distinct']} distinct{top}; baseline on these "
                    f"problems {_pct(s.get('baseline_correct'))}"
                    f"{'; COLLAPSE flagged' if s.get('collapse') else ''}"
                )
        if self.learn:
            before, after = self.learn["before"], self.learn["after"]
            lines.append(
                f"learning check ({self.learn['steps']} steps of {self.learn['model']}): "
                f"held-out correct {_pct(before.get('correct'))} -> "
                f"{_pct(after.get('correct'))} (baseline {_pct(after.get('baseline_correct'))}"
                f", distinct answers {after.get('distinct', '-')}"
                f"{', COLLAPSE' if after.get('collapse') else ''})"
            )
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
        lines.append("PASS: no exploit, no collapse" if self.ok else "FAIL: see above")
        return "\n".join(lines)
