"""The SDK waits quietly on the embedded server: no "Retrying request ... because of try_again".

The unmodified SDK logs a WARNING for every ``{"type": "try_again"}`` body
that ``retrieve_future`` answers with (``tinker/lib/api_future_impl.py``,
``_fetch_via_rest``), but re-polls silently on HTTP 408, its "try again"
status. A slow operation that outlasts several poll windows must therefore
print nothing.
"""

from __future__ import annotations

import logging

import mint
import pytest
from mint import types
from server_helpers import SMALL, fake_server, post
from tinker.types.try_again_response import TryAgainResponse


def test_a_slow_sample_through_the_sdk_prints_no_retry_lines(
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TINKER_TELEMETRY", "0")
    caplog.set_level(logging.DEBUG, logger="tinker")
    # each engine call takes 1.5 s and a poll waits 0.2 s: the sample needs several polls
    with fake_server(engine_delay_s=1.5, long_poll_s=0.2) as (server, _):
        client = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:
            sampler = client.create_sampling_client(base_model=SMALL)
            server.reset_counts()
            params = types.SamplingParams(max_tokens=4, temperature=1.0, seed=0)
            result = sampler.sample(types.ModelInput.from_ints([1, 2, 3]), 2, params).result(
                timeout=60
            )
        finally:
            client.holder.close()
        polls = server.request_counts()["retrieve_future"]
    assert len(result.sequences) == 2
    assert polls >= 3, f"the sample was answered in {polls} poll(s): the engine was not slow enough"
    logged = [r.getMessage() for r in caplog.records if "Retrying request" in r.getMessage()]
    assert logged == [], f"{len(logged)} retry line(s) in the SDK's log: {logged[:3]}"
    out, err = capfd.readouterr()
    assert "Retrying request" not in out + err
    assert "try_again" not in out + err


def test_try_again_is_a_408_with_the_try_again_body() -> None:
    create = {"session_id": "s", "model_seq_id": 0, "base_model": SMALL}
    with fake_server(engine_delay_s=2.0, long_poll_s=0.1) as (server, _):
        request_id = post(server, "create_model", create).json()["request_id"]
        r = post(server, "retrieve_future", {"request_id": request_id})
        # the SDK re-polls a 408 silently (a 200 try_again body is logged as a retry)
        assert r.status_code == 408
        assert TryAgainResponse.model_validate(r.json()).request_id == request_id
        assert r.json()["queue_state"] == "active"
