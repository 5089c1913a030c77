"""Audit one zoo case (its buggy env and its clean twin) and say what the audit did.

The audit runs with probes only (``sample_model=None``: no model, no learning check),
as ``mint-envkit audit ENV --sample-model none`` does. A buggy env is

- ``caught`` when the audit fails it (a failing finding: exit status 1),
- ``warned`` when it passes but with a warning its clean twin does not get,
- ``missed`` when it passes with nothing more than the twin gets,
- ``error`` when the audit itself raised (a crash is no catch);

a clean twin is ``clean`` when the audit passes it, ``false_alarm`` when it fails it,
and ``error`` when the audit raised.

Example::

    from reward_zoo.zoo import load_all
    from reward_zoo.measure import measure_case

    row = measure_case(load_all()["nan_tolerance"])
    row["buggy"]["verdict"], row["clean"]["verdict"]   # ('caught', 'clean') when it is
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import traceback
import warnings
from typing import Any

from .zoo import ZooCase

AUDIT_OPTIONS: dict[str, Any] = {"sample_model": None, "quiet": True}
"""What every zoo audit is given: probes only, no progress lines."""


def _key(finding: Any) -> str:
    return f"{finding.kind}:{finding.probe}"


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def audit_options(**overrides: Any) -> dict[str, Any]:
    """:data:`AUDIT_OPTIONS` with ``overrides`` that this audit takes (a ``mutants=0``
    is dropped where the audit has no mutation testing)."""
    from mint_envkit.auditing import audit

    taken = inspect.signature(audit).parameters
    return {**AUDIT_OPTIONS, **{k: v for k, v in overrides.items() if k in taken}}


async def audit_builder(builder: Any, **overrides: Any) -> dict[str, Any]:
    """One audit of ``builder``: ok, the failing and warning findings, or the error."""
    from mint_envkit.auditing import audit

    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = await audit(builder, **audit_options(**overrides))
    except Exception as err:  # the audit's own failure is a result here, not a crash
        return {
            "ok": None,
            "failing": [],
            "warnings": [],
            "evidence": [],
            "error": _short(f"{type(err).__name__}: {err}", 600),
            "traceback": traceback.format_exc(limit=6)[-2000:],
            "seconds": round(time.perf_counter() - started, 3),
        }
    failing = [f for f in report.findings if f.fails]
    return {
        "ok": bool(report.ok),
        "failing": sorted({_key(f) for f in failing}),
        "warnings": sorted({_key(f) for f in report.findings if not f.fails}),
        "evidence": [_short(f.message) for f in failing[:3]],
        "error": None,
        "baseline": report.baseline_name,
        "baseline_correct": report.baseline_correct,
        "seconds": round(time.perf_counter() - started, 3),
    }


def classify(buggy: dict[str, Any], clean: dict[str, Any]) -> tuple[str, str]:
    """The verdicts of a buggy env's audit and its twin's (rules in the module docstring).

    Example::

        classify({"ok": False, "error": None, "warnings": []},
                 {"ok": True, "error": None, "warnings": []})   # ('caught', 'clean')
    """
    if buggy["error"]:
        bug = "error"
    elif not buggy["ok"]:
        bug = "caught"
    elif set(buggy["warnings"]) - set(clean.get("warnings") or []):
        bug = "warned"
    else:
        bug = "missed"
    twin = "error" if clean["error"] else ("clean" if clean["ok"] else "false_alarm")
    return bug, twin


def build_quietly(case: ZooCase, *, buggy: bool) -> Any:
    """``case``'s builder, without the RewardOrderWarning its unbounded rewards raise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case.build(buggy=buggy)


async def measure_case_async(case: ZooCase, **overrides: Any) -> dict[str, Any]:
    """Audit ``case``'s buggy env and its clean twin; one row of the zoo's table.
    ``overrides`` go to the audit (e.g. ``mutants=0``)."""
    os.environ.setdefault("MINT_ENVKIT_PROGRESS", "off")
    buggy = await audit_builder(build_quietly(case, buggy=True), **overrides)
    clean = await audit_builder(build_quietly(case, buggy=False), **overrides)
    bug_verdict, twin_verdict = classify(buggy, clean)
    buggy["verdict"], clean["verdict"] = bug_verdict, twin_verdict
    if bug_verdict == "warned":
        buggy["new_warnings"] = sorted(set(buggy["warnings"]) - set(clean["warnings"]))
    return {
        "name": case.name,
        "family": case.family,
        "heldout": case.heldout,
        "bug": case.bug,
        "source": case.source,
        "buggy": buggy,
        "clean": clean,
    }


def measure_case(case: ZooCase, **overrides: Any) -> dict[str, Any]:
    """:func:`measure_case_async` from synchronous code."""
    return asyncio.run(measure_case_async(case, **overrides))
