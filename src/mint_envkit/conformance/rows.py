"""The rows of a conformance run: one check per call, its status, and the exit rule.

A row is one :class:`Check` run against the backend, within a time limit. Its status:

- ``ok``: every call of the check answered, and the answers are right (the check says
  what it measured);
- ``unsupported``: the server refused, as one it does not serve, a call a training loop
  can do without (:attr:`Check.required` False; :func:`refusal`: HTTP 405 or 501; an
  HTTP 4xx, or a failed operation, whose message says "not supported", "unsupported"
  or "not implemented"; a 404 with a bare ``Not Found`` body, what a web framework
  answers for a route it does not have). A required call refused so is ``failed``:
  a server that cannot train does not pass;
- ``failed``: anything else. An error answer that is not such a refusal (a 500 is
  failed at once, with its status, route and message, although the SDK would retry
  it for five minutes), a wrong or malformed answer, or no answer within the time
  limit (a hung call is a failed row, never a hung command);
- ``skipped``: a row it needs (its ``needs``) is not ``ok``, so it did not run; or the
  server stopped answering (a row timed out and then the server's health check did
  not answer either). One failing row never skips a row that does not need it.

The command exits 1 when a row failed (:func:`exit_code`), else 0.

Example::

    async def answers(probe):
        return "answered"

    rows = await run_checks([Check("healthz", answers)], probe=None, timeout_s=5)
    rows[0].status, exit_code(rows)   # ('ok', 0)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from mint_envkit.conformance.http import ServerErrors

STATUSES = ("ok", "unsupported", "failed", "skipped")
"""Every status a row can have, in the order the summary line counts them."""

REFUSAL_WORDS = ("not supported", "unsupported", "not implemented")
"""Words (lower case) that make an error answer a refusal: the call is not served."""


@attrs.frozen
class Check:
    """One row's check: ``run(probe)`` makes the calls, verifies the answers, returns the detail.

    ``run`` raises on a wrong answer (its message is the row's reason). ``needs``: the
    names of earlier rows whose results it uses; it is skipped unless they are ``ok``.
    ``required``: a training loop relies on the call, so a server that refuses it
    fails the row (False: the refusal is ``unsupported``).

    Example::

        async def capabilities(probe):
            return "answered"

        Check("get_server_capabilities", capabilities)
    """

    name: str
    run: Callable[[Any], Awaitable[str]]
    needs: tuple[str, ...] = ()
    required: bool = True


@attrs.frozen
class Row:
    """What one check gave: its status (one of :data:`STATUSES`), the detail, the seconds.

    Example::

        Row("optim_step", "ok", "learning rate 0.001: logprobs moved", 0.02).record()["status"]
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


def _status_message(err: BaseException) -> str | None:
    """The server's own message and status of an SDK error answered with a status."""
    status = getattr(err, "status_code", None)
    if not isinstance(status, int) or not type(err).__module__.startswith(("tinker", "mint")):
        return None
    body = getattr(err, "body", None)
    detail = None
    if isinstance(body, dict):
        detail = body.get("error", body.get("detail"))
    return f"{detail} (HTTP {status})" if isinstance(detail, str) else f"{err} (HTTP {status})"


def error_text(err: BaseException) -> str:
    """An error in one line: the server's message and status for an SDK error, else the
    type and text (our own errors: the text alone).

    Example::

        error_text(ValueError("bad"))   # 'ValueError: bad'
    """
    message = _status_message(err)
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

    See the module docstring for the rule.

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


async def _run_one(
    check: Check, probe: Any, timeout_s: float, errors: ServerErrors | None
) -> tuple[str, str]:
    mark = errors.mark() if errors is not None else 0
    task = asyncio.ensure_future(check.run(probe))
    waits = [task]
    if errors is not None:
        waits.append(asyncio.ensure_future(errors.wait_fatal(mark)))
    try:
        done, _ = await asyncio.wait(waits, timeout=timeout_s, return_when="FIRST_COMPLETED")
    finally:
        for pending in waits:
            if not pending.done():
                pending.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*waits, return_exceptions=True)
    if task in done and not task.cancelled():
        err = task.exception()
        if err is None:
            return "ok", task.result()
        reason = refusal(err)
        if reason is None:
            return "failed", error_text(err)
        if check.required:
            return "failed", f"refused, but a training loop needs it: {reason}"
        return "unsupported", reason
    if errors is not None and (answer := errors.fatal_since(mark)) is not None:
        return _answered(answer, check)
    last = errors.last_since(mark) if errors is not None else None
    more = f"; the server's last error answer, retried by the SDK: {last}" if last else ""
    return "failed", f"no answer within {timeout_s:g} s (--timeout){more}"


def _answered(answer: Any, check: Check) -> tuple[str, str]:
    """The row of a call the server answered with a 500 or 501 (the SDK retries both)."""
    if answer.status == 501:
        if check.required:
            return "failed", f"refused, but a training loop needs it: {answer}"
        return "unsupported", str(answer)
    return "failed", f"{answer} (the SDK would retry it for five minutes; stopped at the first)"


async def run_checks(
    checks: Sequence[Check],
    probe: Any,
    timeout_s: float,
    *,
    on_row: Callable[[Row], None] | None = None,
    errors: ServerErrors | None = None,
    health: Callable[[], Awaitable[str | None]] | None = None,
) -> list[Row]:
    """Run ``checks`` in order against ``probe``, each within ``timeout_s`` seconds.

    ``on_row`` is called with each row as soon as it is known (a progress line).
    ``errors`` records the server's 5xx answers (a row fails at the first 500 with its
    message). ``health`` answers None while the server is up, else why not: asked after
    a row times out; when it says the server is gone, the rows left are skipped.

    Example::

        # not run: needs a running backend
        rows = await run_checks(CHECKS, probe, timeout_s=120, errors=errors)
    """
    rows: list[Row] = []
    status_of: dict[str, str] = {}
    gone: str | None = None
    for check in checks:
        start = time.monotonic()
        missing = [name for name in check.needs if status_of.get(name) != "ok"]
        if missing:
            status = status_of.get(missing[0], "not run")
            status, detail = "skipped", f"needs {missing[0]} ({status})"
        elif gone is not None:
            status, detail = "skipped", f"the server stopped answering ({gone})"
        else:
            status, detail = await _run_one(check, probe, timeout_s, errors)
            if status == "failed" and detail.startswith("no answer within") and health:
                gone = await health()
        status_of[check.name] = status
        rows.append(Row(check.name, status, detail, time.monotonic() - start))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def select(checks: Sequence[Check], names: Sequence[str]) -> list[Check]:
    """The checks named in ``names`` and every check they need, in run order.

    A name matches a row's name exactly, else every row whose name contains it
    (case-insensitive).

    Raises:
        ValueError: a name matches no row (the message lists them).

    Example::

        from mint_envkit.conformance.checks import CHECKS

        [c.name for c in select(CHECKS, ["ppo clipping"])]
        # ['create_lora_training_client', 'forward_backward: ppo clipping']
    """
    by_name = {check.name: check for check in checks}
    wanted: set[str] = set()
    for name in names:
        found = [name] if name in by_name else [c for c in by_name if name.lower() in c.lower()]
        if not found:
            raise ValueError(f"no row is named {name!r}; the rows: {', '.join(by_name)}")
        wanted.update(found)
    todo = list(wanted)
    while todo:
        for need in by_name[todo.pop()].needs:
            if need not in wanted:
                wanted.add(need)
                todo.append(need)
    return [check for check in checks if check.name in wanted]


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
