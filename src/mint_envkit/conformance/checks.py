"""Every row of a conformance run, in the order they run (:data:`CHECKS`).

Example::

    # not run: needs a running backend
    rows = await run_checks(CHECKS, Probe(service=service, model=model, dtype="float32"), 120)
"""

from __future__ import annotations

from mint_envkit.conformance.calls import AGREEMENT, SESSION_CHECKS
from mint_envkit.conformance.rows import Check
from mint_envkit.conformance.sampling import SAMPLING_CHECKS
from mint_envkit.conformance.saves import SAMPLER_CHECKS, STATE_CHECKS
from mint_envkit.conformance.training import TRAINING_CHECKS

CHECKS: tuple[Check, ...] = (
    *SESSION_CHECKS,
    *SAMPLING_CHECKS,
    *TRAINING_CHECKS,
    *SAMPLER_CHECKS,
    AGREEMENT,
    *STATE_CHECKS,
)
"""Every row, in order (a row's ``needs`` are earlier rows)."""

OPTIONAL: frozenset[str] = frozenset(check.name for check in CHECKS if not check.required)
"""The rows a server may refuse as not served (``unsupported``); every other row is
required: a training loop relies on it, and refusing it fails the row."""
