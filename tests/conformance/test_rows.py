"""The row rule of a conformance run, on fake checks and SDK errors built by hand.

A refusal of an optional call is ``unsupported``, of a required one ``failed``; a row
whose needs are not ``ok`` is skipped; a timed-out row skips nothing while the server
answers its health check; a 500 fails its row at once with the server's message
(the SDK would retry it for five minutes); ``select`` runs a row with what it needs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mint_envkit.conformance.checks import CHECKS
from mint_envkit.conformance.http import ServerErrors
from mint_envkit.conformance.rows import Check, Row, exit_code, refusal, run_checks, select, table


def _status_error(status: int, body: Any) -> Exception:
    import tinker

    response = httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/x"))
    return tinker.APIStatusError(f"Error code: {status}", response=response, body=body)


def _request_failed(message: str) -> Exception:
    import tinker

    return tinker.RequestFailedError(message, request_id="req-1", category="user")


@pytest.mark.parametrize(
    ("error", "unsupported"),
    [
        (lambda: _status_error(422, {"error": "unsupported loss_fn 'dro'"}), True),
        (lambda: _status_error(404, {"error": "GET /x is not supported by this backend"}), True),
        (lambda: _status_error(404, {"detail": "Not Found"}), True),  # no such route
        (lambda: _status_error(501, {"error": "later"}), True),
        (lambda: _status_error(405, {"detail": "Method Not Allowed"}), True),
        (lambda: _status_error(404, {"error": "unknown model_id 'x'"}), False),
        (lambda: _status_error(422, {"error": "max_tokens must be >= 1"}), False),
        (lambda: _status_error(500, {"error": "not implemented"}), False),  # a server error
        (lambda: _request_failed("the reverse KL is not implemented here"), True),
        (lambda: _request_failed("CUDA out of memory"), False),
        (lambda: ValueError("unsupported"), False),  # not an answer of the server
    ],
)
def test_refusal_tells_unsupported_from_failed(error, unsupported):
    assert (refusal(error()) is not None) is unsupported


def _fake(name: str, outcome: Any, needs: tuple[str, ...] = (), required: bool = True) -> Check:
    async def run(probe: Any) -> str:
        if outcome == "hang":
            await asyncio.sleep(3600)
        if isinstance(outcome, Exception):
            raise outcome
        return str(outcome)

    return Check(name, run, needs=needs, required=required)


def test_a_refused_required_call_fails_and_a_refused_optional_one_is_unsupported():
    refused = _status_error(422, {"error": "dro is not supported"})
    checks = [
        _fake("a", RuntimeError("broken")),
        _fake("b", "fine", needs=("a",)),
        _fake("c", refused, required=False),
        _fake("d", "fine", needs=("c",)),
        _fake("e", "answered"),
        _fake("f", _status_error(422, {"error": "forward_backward is not supported"})),
    ]
    rows = asyncio.run(run_checks(checks, probe=None, timeout_s=10))

    assert [(r.name, r.status, r.detail) for r in rows] == [
        ("a", "failed", "RuntimeError: broken"),
        ("b", "skipped", "needs a (failed)"),
        ("c", "unsupported", "dro is not supported (HTTP 422)"),
        ("d", "skipped", "needs c (unsupported)"),
        ("e", "ok", "answered"),
        (
            "f",
            "failed",
            "refused, but a training loop needs it: forward_backward is not supported (HTTP 422)",
        ),
    ]
    assert exit_code(rows) == 1
    assert exit_code(rows[2:5]) == 0  # unsupported and skipped rows never fail the run
    text = table(rows)
    assert text.splitlines()[0].split() == ["call", "status", "secs", "detail"]
    assert text.splitlines()[-1] == "6 calls: 1 ok, 1 unsupported, 2 failed, 2 skipped"


def test_a_timed_out_row_skips_nothing_while_the_server_answers():
    async def healthy() -> None:
        return None

    checks = [_fake("hang0", "hang"), _fake("hang1", "hang"), _fake("late", "fine")]
    rows = asyncio.run(run_checks(checks, probe=None, timeout_s=0.05, health=healthy))

    assert [r.status for r in rows] == ["failed", "failed", "ok"]
    assert rows[0].detail == "no answer within 0.05 s (--timeout)"


def test_when_the_server_is_gone_the_rows_left_are_skipped():
    async def gone() -> str:
        return "its health check failed"

    checks = [_fake("hang", "hang"), _fake("late", "fine")]
    rows = asyncio.run(run_checks(checks, probe=None, timeout_s=0.05, health=gone))

    assert [r.status for r in rows] == ["failed", "skipped"]
    assert rows[1].detail == "the server stopped answering (its health check failed)"


def _answer(status: int, body: dict[str, Any], path: str = "/api/v1/forward") -> httpx.Response:
    return httpx.Response(status, json=body, request=httpx.Request("POST", f"http://h{path}"))


@pytest.mark.parametrize(
    ("status", "required", "want", "detail"),
    [
        (500, True, "failed", "HTTP 500 from POST /api/v1/forward: the engine crashed"),
        (501, False, "unsupported", "HTTP 501 from POST /api/v1/forward: the engine crashed"),
        (501, True, "failed", "refused, but a training loop needs it: HTTP 501"),
    ],
)
def test_a_500_fails_its_row_at_once_with_the_servers_message(status, required, want, detail):
    errors = ServerErrors()

    async def retried_by_the_sdk(probe: Any) -> str:  # the SDK retries 5xx: no error raised
        await errors.on_response(_answer(status, {"error": "the engine crashed"}))
        await asyncio.sleep(3600)
        return "never"

    checks = [Check("forward", retried_by_the_sdk, required=required), _fake("next", "fine")]
    rows = asyncio.run(run_checks(checks, probe=None, timeout_s=30, errors=errors))

    assert rows[0].status == want and detail in rows[0].detail
    assert rows[0].seconds < 29  # at once, not at the time limit
    assert rows[1].status == "ok"  # and the next row runs


def test_a_timed_out_row_shows_the_last_5xx_the_sdk_retried():
    errors = ServerErrors()

    async def unavailable(probe: Any) -> str:
        await errors.on_response(_answer(503, {"detail": "restarting"}, "/api/v1/asample"))
        await asyncio.sleep(3600)
        return "never"

    rows = asyncio.run(run_checks([Check("s", unavailable)], None, 0.2, errors=errors))
    assert rows[0].detail == (
        "no answer within 0.2 s (--timeout); the server's last error answer, retried by the "
        "SDK: HTTP 503 from POST /api/v1/asample: restarting"
    )


def test_select_runs_a_row_with_what_it_needs_in_order():
    assert [c.name for c in select(CHECKS, ["ppo clipping"])] == [
        "create_lora_training_client",
        "forward_backward: ppo clipping",
    ]
    names = [c.name for c in select(CHECKS, ["load_state_with_optimizer", "top_k"])]
    assert names == [
        "create_lora_training_client",
        "create_sampling_client(base_model)",
        "sample: top_k",
        "save_state",
        "load_state_with_optimizer",
    ]
    with pytest.raises(ValueError, match="no row is named 'nope'"):
        select(CHECKS, ["nope"])


def test_a_long_detail_keeps_its_start_and_its_end_in_the_table():
    detail = "GET /api/v1/" + "x" * 200 + " is not supported by the local backend (HTTP 404)"
    line = table([Row("get_checkpoint_archive_url", "unsupported", detail, 0.0)]).splitlines()[1]

    assert "GET /api/v1/x" in line and line.endswith(
        "not supported by the local backend (HTTP 404)"
    )
    assert " ... " in line
