"""The rows of ``mint-envkit conformance``: one check per call, its status, and the exit rule.

A row is one :class:`Check` run against the backend, within a time limit. Its status:

- ``ok``: every call of the check answered, and the answers are right (the check says
  what it verified);
- ``unsupported``: the server refused the call as one it does not serve
  (:func:`refusal`: HTTP 405 or 501; or an HTTP 4xx, or a failed operation, whose message
  says "not supported", "unsupported" or "not implemented"; or a 404 with a bare
  ``Not Found`` body, what a web framework answers for a route it does not have);
- ``failed``: anything else. An error answer that is not such a refusal, a wrong or
  malformed answer, or no answer within the time limit (a hung call is a failed row,
  never a hung command);
- ``skipped``: a row it needs (its ``needs``) is not ``ok``, so it did not run; or the
  server stopped answering (:data:`MAX_TIMEOUTS` rows in a row timed out).

The command exits 1 when a row failed (:func:`exit_code`), else 0.

Example::

    async def answers(probe):
        return "answered"

    rows = await run_checks([Check("healthz", answers)], probe=None, timeout_s=5)
    rows[0].status, exit_code(rows)   # ('ok', 0)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from mint_envkit.cli.command import sdk_error_message

STATUSES = ("ok", "unsupported", "failed", "skipped")
"""Every status a row can have, in the order the summary line counts them."""

REFUSAL_WORDS = ("not supported", "unsupported", "not implemented")
"""Words (lower case) that make an error answer a refusal: the call is not served."""

MAX_TIMEOUTS = 2
"""After this many rows in a row ran out of time, the rest are skipped: the server is gone."""


@attrs.frozen
class Check:
    """One row's check: ``run(probe)`` makes the calls, verifies the answers, returns the detail.

    ``run`` raises on a wrong answer (its message is the row's reason). ``needs``: the
    names of earlier rows whose results it uses; it is skipped unless they are ``ok``.

    Example::

        async def capabilities(probe):
            return "answered"

        Check("get_server_capabilities", capabilities)
    """

    name: str
    run: Callable[[Any], Awaitable[str]]
    needs: tuple[str, ...] = ()


@attrs.frozen
class Row:
    """What one check gave: its status (one of :data:`STATUSES`), the detail, the seconds.

    Example::

        Row("optim_step", "ok", "learning rate 0.01: logprobs moved", 0.02).record()["status"]
        # 'ok'
    """

    name: str
    status: str
    detail: str
    seconds: float

    def record(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (``--json FILE``).

        Example::

            Row("sample", "failed", "no answer within 5 s", 5.0).record()["detail"]
            # 'no answer within 5 s'
        """
        return {
            "call": self.name,
            "status": self.status,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


def error_text(err: BaseException) -> str:
    """An error in one line: the server's own message for an SDK error, else the type and text.

    Example::

        error_text(ValueError("bad"))   # 'ValueError: bad'
    """
    message = sdk_error_message(err)
    if message is None:
        text = str(err) or repr(err)
        message = (
            text
            if type(err).__module__.startswith("mint_envkit")
            else f"{type(err).__name__}: {text}"
        )
    return " ".join(message.split())


def refusal(err: BaseException) -> str | None:
    """The reason when ``err`` is the server refusing a call it does not serve, else None.

    See the module docstring for the rule. A 501 that the SDK retries (it retries every
    5xx for up to five minutes) reaches the row's time limit first: a failed row.

    Example::

        refusal(ValueError("unsupported loss_fn 'dro'"))   # None: not an answer of the server
    """
    status = getattr(err, "status_code", None)
    from_server = type(err).__module__.startswith(("tinker", "mint"))
    if not from_server:
        return None
    message = error_text(err)
    if status in (405, 501):
        return message
    body = getattr(err, "body", None)
    if status == 404 and isinstance(body, dict) and body.get("detail") == "Not Found":
        return f"{message} (the server has no such route)"
    lowered = message.lower()
    client_error = isinstance(status, int) and 400 <= status < 500
    failed_operation = status is None and hasattr(err, "request_id")  # a RequestFailedError
    if (client_error or failed_operation) and any(w in lowered for w in REFUSAL_WORDS):
        return message
    return None


async def _run_one(check: Check, probe: Any, timeout_s: float) -> tuple[str, str]:
    try:
        async with asyncio.timeout(timeout_s) as limit:
            return "ok", await check.run(probe)
    except TimeoutError as err:
        if limit.expired():
            return "failed", f"no answer within {timeout_s:g} s (--timeout)"
        return "failed", error_text(err)
    except Exception as err:  # the row's reason: every failure is reported, none escapes
        reason = refusal(err)
        return ("unsupported", reason) if reason is not None else ("failed", error_text(err))


async def run_checks(
    checks: Sequence[Check],
    probe: Any,
    timeout_s: float,
    *,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Run ``checks`` in order against ``probe``, each within ``timeout_s`` seconds.

    ``on_row`` is called with each row as soon as it is known (a progress line).

    Example::

        rows = await run_checks(CHECKS, probe, timeout_s=120)
    """
    rows: list[Row] = []
    status_of: dict[str, str] = {}
    timeouts = 0
    for check in checks:
        start = time.monotonic()
        missing = [name for name in check.needs if status_of.get(name) != "ok"]
        if missing:
            status = status_of.get(missing[0], "not run")
            status, detail = "skipped", f"needs {missing[0]} ({status})"
        elif timeouts >= MAX_TIMEOUTS:
            status, detail = "skipped", f"the server stopped answering ({timeouts} rows timed out)"
        else:
            status, detail = await _run_one(check, probe, timeout_s)
            timed_out = status == "failed" and detail.startswith("no answer within")
            timeouts = timeouts + 1 if timed_out else 0
        status_of[check.name] = status
        rows.append(Row(check.name, status, detail, time.monotonic() - start))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def exit_code(rows: Sequence[Row]) -> int:
    """1 when a row failed (a call the server claims does not work), else 0.

    Example::

        exit_code([Row("dro", "unsupported", "422: unsupported loss_fn", 0.0)])   # 0
    """
    return 1 if any(row.status == "failed" for row in rows) else 0


def table(rows: Sequence[Row], *, width: int = 110) -> str:
    """The rows as a text table (call, status, seconds, detail), then the counts.

    A detail longer than ``width`` characters loses its middle in the table (its start and
    its end, where a server's message says why, stay; ``--json`` has it whole).

    Example::

        print(table([Row("optim_step", "ok", "logprobs moved", 0.02)]))
    """
    name_width = max([len("call"), *(len(row.name) for row in rows)])
    lines = [f"{'call':<{name_width}}  {'status':<11}  {'secs':>6}  detail"]
    for row in rows:
        detail = row.detail
        if len(detail) > width:
            half = (width - 5) // 2
            detail = f"{detail[:half]} ... {detail[-half:]}"
        lines.append(f"{row.name:<{name_width}}  {row.status:<11}  {row.seconds:>6.2f}  {detail}")
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES)
    lines.append(f"{len(rows)} calls: {counts}")
    return "\n".join(lines)
