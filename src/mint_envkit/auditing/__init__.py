"""The reward audit: find exploits and collapse before paying for a training run.

:func:`audit` runs scripted adversarial replies through the env (an empty reply, the
question restated, a reply cut off at the token limit, the format with nothing in it,
the most common answer, ...), compares what each earns with a correct and a wrong
answer and with the best trivial baseline, samples a real model for
parse-status and truncation rates, optionally trains a few steps to check that
held-out correctness beats the baseline without collapsing, and previews the MinT
cost. ``mint-envkit audit MODULE:BUILDER`` is the same from the shell; its exit status
is non-zero when an exploit or a collapse is found. docs/audit.md explains each part.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    from mint_envkit.auditing import audit

    report = await audit(builder, sample_model="mint-envkit/tiny-qwen3")
    print(report.table())
    assert report.ok, report.exploits
"""

from mint_envkit.auditing.probes import ProbeResult
from mint_envkit.auditing.report import AuditReport, Finding
from mint_envkit.auditing.run import audit, audit_sync

__all__ = [
    "AuditReport",
    "Finding",
    "ProbeResult",
    "audit",
    "audit_sync",
]
