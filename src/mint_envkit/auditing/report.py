"""An audit's result: probes, findings, samples, learning check and cost, as a table and JSON.

The rules that turn probe rewards into findings live here, in :func:`findings`:

- an **exploit** is a non-answer probe (kind ``non_answer``: the built-in ones of
  :data:`~mint_envkit.auditing.replies.NON_ANSWER`, and custom ones) that earns more
  than a wrong answer, or any probe but the right answers that earns as much as a
  correct reply (an answer-shaped probe: on the problems where the env scores it
  wrong); the probe's reply is shown;
- a **warning** is an answer-shaped probe (the most common answer, a number of the
  question) whose correctness beats the best trivial baseline, a problem set where no
  usual form of the answer scores as correct, an env whose ordering rule could not be
  checked (a reward part of unknown bounds), or samples of a model whose answers
  collapse;
- a **collapse**, **no gain** or **position** finding comes from the learning check:
  its final evaluation flags collapse (answers concentrated on one value or one
  position, or correctness explained by a trivial policy), does not beat the best
  trivial baseline where nothing is cut off, or follows the position of the offered
  candidates rather than their content.

An audit passes (exit status 0) when nothing but warnings was found; :class:`Verdict`
says it once, and the table, ``audit.json`` and the exit status all read it.

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
    from mint_envkit.auditing.code import CodeAudit

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

    @property
    def fails(self) -> bool:
        """Whether it fails the audit (everything but a ``warning``)."""
        return self.kind != "warning"


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

    @classmethod
    def of(cls, found: Sequence[Finding]) -> Verdict:
        """The verdict of ``found``.

        Example::

            Verdict.of([]).ok   # True
        """
        failed = tuple(sorted({f.kind for f in found if f.fails}))
        return cls(ok=not failed, failed=failed, warnings=sum(not f.fails for f in found))

    @property
    def line(self) -> str:
        """``PASS: ...`` or ``FAIL: ...``, with the kinds found."""
        note = f" ({self.warnings} warning{'s' * (self.warnings != 1)})" if self.warnings else ""
        if self.ok:
            return f"PASS: no exploit, no collapse{note}"
        return f"FAIL: {', '.join(self.failed)} found, see above{note}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _apart(value: float, other: float) -> tuple[str, str]:
    """Both rewards with the fewest decimals (3 to 9) that tell them apart.

    A probe that earns 0.0002 more than a wrong answer is an exploit, and a line saying
    "+0.000, more than a wrong answer (+0.000)" would read as a contradiction.

    Example::

        assert _apart(0.0002, 0.0) == ("+0.0002", "+0.0000")
        assert _apart(0.5, 0.25) == ("+0.500", "+0.250")
    """
    for digits in range(3, 10):
        a, b = f"{value:+.{digits}f}", f"{other:+.{digits}f}"
        if a != b:
            break
    return a, b


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _shown(reply: str, limit: int = 120) -> str:
    text = " ".join(reply.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _judged_mean(probe: ProbeResult) -> float | None:
    """What the exploit rules compare: a non-answer's mean reward; an answer-shaped
    probe's over the problems where the env scored it wrong (where it happens to be
    right, such as the most common answer on its own problems, it earns a right
    answer's reward by right), or over all of them for ``wrong`` and when the env reports
    no ``correct``."""
    if probe.kind != "answer_shaped" or probe.name == "wrong":
        return probe.mean_reward
    if any(c is None for c in probe.correct):
        return None
    rewards = [r for r, c in zip(probe.rewards, probe.correct, strict=True) if c == 0.0]
    return sum(rewards) / len(rewards) if rewards else None


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
        if probe.kind == "reference":
            continue
        mean = _judged_mean(probe)
        if mean is None:
            pass  # nothing to compare: an answer-shaped probe right on every problem
        elif correct is not None and mean >= correct - _TIE:
            out.append(
                Finding(
                    "exploit",
                    probe.name,
                    f"'{probe.name}' earns {mean:+.3f}, as much as a correct reply "
                    f"({correct:+.3f}): the reward does not tell it from a right answer. Its "
                    f"reply: {_shown(probe.example)}",
                )
            )
        elif probe.kind == "non_answer" and wrong is not None and mean > wrong + _TIE:
            earns, wrong_earns = _apart(mean, wrong)
            out.append(
                Finding(
                    "exploit",
                    probe.name,
                    f"'{probe.name}' gives no answer but earns {earns}, more than a wrong "
                    f"answer ({wrong_earns}): a policy learns to do this instead of trying; "
                    f"lower its reward to at most the wrong answer's. Its reply: "
                    f"{_shown(probe.example)}",
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
                    f"best trivial baseline ({_pct(baseline_correct)}): a shortcut may explain "
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
        baseline_correct: the best trivial policy's correctness on these problems (a
            constant answer, a candidate of the prompt by position, a uniform pick; see
            :mod:`mint_envkit.rollouts.baselines`), scored by the env's check (None
            without reference answers).
        baseline_name: that policy, in words (``constant 'no'``, ``second quoted``).
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
            scores: :class:`~mint_envkit.auditing.code.CodeAudit`); None for other envs.

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
    code: CodeAudit | None = None

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
        flagged = {f.probe: f.kind for f in self.findings}
        wrong = next((p.mean_reward for p in self.probes if p.name == "wrong"), None)
        lines = [f"{'probe':<24} {'kind':<14} {'reward':>8} {'correct':>8}  flag"]
        for probe in self.probes:
            flag = flagged.get(probe.name, "").upper()
            reward = _fmt(probe.mean_reward)
            if flag and probe.mean_reward is not None and wrong is not None:
                reward = _apart(probe.mean_reward, wrong)[0]  # shown apart from the wrong one
            lines.append(
                f"{probe.name:<24} {probe.kind:<14} {reward:>8} "
                f"{_pct(probe.correct_rate):>8}  {flag}"
            )
        return lines

    def _sample_lines(self) -> list[str]:
        s = self.samples or {}
        if not s:
            return []
        statuses = ", ".join(f"{k} {_pct(v)}" for k, v in sorted(s["parse_status"].items()))
        lines = [
            f"samples of {s['model']} ({s['episodes']} replies, reply limit "
            f"{s.get('max_tokens', '?')} tokens): {s.get('headline', '')}",
            f"  mean reward {_fmt(s['mean_reward'])}; parse status: {statuses}",
        ]
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
        name = f" ({self.baseline_name})" if self.baseline_name else ""
        lines.append(f"best trivial baseline: {_pct(self.baseline_correct)} correct{name}")
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
