"""The server's protocol layer: start/stop, setup endpoints, futures, ordering, latency, counts.

Most tests run on a recording fake engine (no torch work), so they take
milliseconds; the SDK integration tests are in test_server_sdk.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import (
    SMALL,
    create_model,
    datum,
    fake_server,
    post,
    read_line,
    tokens,
    wait_future,
    wait_until,
)
from tinker import types as tt
from tinker.types.try_again_response import TryAgainResponse

from mint_envkit.cli import main as cli_main
from mint_envkit.errors import ConfigError
from mint_envkit.local.server import LocalServer, is_loopback_host

os.environ["TINKER_TELEMETRY"] = "0"


def _jwt_exp(token: str) -> float:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"]


# Process-wide threads of other parts of the kit that outlive a server by design (the
# MCP tools' event loop, started by any earlier test that used an MCP server; an env
# package's load given up at its load_timeout_s, by an earlier test of a package that
# hangs, whose daemon thread cannot be stopped).
_NOT_THE_SERVERS = {"mint-envkit-mcp"}
_NOT_THE_SERVERS_PREFIX = "mint-envkit-load-"


def _server_threads() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith("mint-envkit")
        and t.name not in _NOT_THE_SERVERS
        and not t.name.startswith(_NOT_THE_SERVERS_PREFIX)
    ]


@contextlib.contextmanager
def _engine_held(server: LocalServer) -> Iterator[threading.Event]:
    """Keep the engine worker busy until the yielded event is set (at the latest when the
    block ends): engine calls queued meanwhile wait behind it, in FIFO order."""
    assert server.backend is not None
    gate = threading.Event()
    held = server.backend.worker.submit(lambda e: gate.wait(30))
    try:
        yield gate
    finally:
        gate.set()
        held.result(timeout=30)


def _long_poll(server: LocalServer, request_id: str, answers: list[Any]) -> threading.Thread:
    """A thread that sends one ``retrieve_future`` and appends its body (or the error)."""

    def poll() -> None:
        try:
            answers.append(post(server, "retrieve_future", {"request_id": request_id}).json())
        except Exception as err:  # cut off, or not a JSON answer: the test shows which
            answers.append(repr(err))

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread


def test_starts_and_stops_without_leaking_threads() -> None:
    with fake_server() as (server, engine):
        # how long it took is logged, not asserted (speed is for benchmarks/)
        assert server.start_seconds is not None and server.start_seconds >= 0.0
        assert server.base_url.startswith("http://127.0.0.1:")
        health = httpx.get(f"{server.base_url}/api/v1/healthz").json()
        assert health["status"] == "ok" and health["instance"] == server.backend.instance_id
        create_model(server)
        assert engine.threads == {"mint-envkit-engine_0"}  # every engine call on one worker
        assert _server_threads()
    assert _server_threads() == []


def test_close_does_not_wait_for_a_pending_long_poll() -> None:
    answers: list[Any] = []
    with fake_server() as (server, _):
        model_id = create_model(server)
        # seq_id 2 waits for seq_id 1, which never comes: nothing but close ends its long-poll
        adam = {"learning_rate": 1e-3}
        r = post(server, "optim_step", {"model_id": model_id, "seq_id": 2, "adam_params": adam})
        request_id = r.json()["request_id"]
        server.reset_counts()
        poll = _long_poll(server, request_id, answers)
        wait_until(
            lambda: server.request_counts()["retrieve_future"] == 1,
            "the long-poll to reach the server",
        )
        t0 = time.perf_counter()
    elapsed = time.perf_counter() - t0
    poll.join(timeout=10)
    # woken by close, it answers try_again (not cut off when the server stops)
    assert answers == [{"type": "try_again", "request_id": request_id, "queue_state": "active"}]
    assert elapsed < 15.0  # a generous liveness bound: the long-poll is woken, not waited out
    assert _server_threads() == []


def test_setup_endpoints_validate_against_the_sdk_types() -> None:
    with fake_server(models=[SMALL, "mint-envkit/tiny-qwen3"]) as (server, _):
        config = tt.ClientConfigResponse.model_validate(
            post(server, "client/config", {"sdk_version": "0.22.0"}).json()
        )
        assert config.pjwt_auth_enabled
        token = tt.AuthTokenResponse.model_validate(post(server, "auth/token", {}).json()).jwt
        assert token.startswith("eyJ")
        assert _jwt_exp(token) > time.time() + 365 * 24 * 3600
        caps = tt.GetServerCapabilitiesResponse.model_validate(
            httpx.get(f"{server.base_url}/api/v1/get_server_capabilities").json()
        )
        assert [m.model_name for m in caps.supported_models] == [SMALL, "mint-envkit/tiny-qwen3"]
        session = tt.CreateSessionResponse.model_validate(
            post(
                server, "create_session", {"tags": [], "user_metadata": {}, "sdk_version": "x"}
            ).json()
        )
        assert session.session_id
        assert post(server, "session_heartbeat", {"session_id": session.session_id}).json() == {
            "type": "session_heartbeat"
        }
        assert post(server, "telemetry", {"events": []}).json() == {"status": "accepted"}


@pytest.mark.parametrize("api_key", ["sk-local-test", "tml-local-test"])
def test_sdk_connects_with_sk_and_tml_keys(api_key: str) -> None:
    import mint

    with fake_server() as (server, _):
        client = mint.ServiceClient(base_url=server.base_url, api_key=api_key)
        caps = client.get_server_capabilities()
        assert [m.model_name for m in caps.supported_models] == [SMALL]
        training = client.create_lora_training_client(base_model=SMALL, rank=4)
        assert training.model_id.startswith("model-")
        counts = server.request_counts()
        assert counts["auth_token"] == 1 and counts["client_config"] == 1


def test_training_requests_run_in_seq_id_order() -> None:
    with fake_server() as (server, engine):
        model_id = create_model(server)
        engine.calls.clear()
        fb = {"loss_fn": "cross_entropy", "data": [datum([1, 2, 3], target_tokens=[2, 3, 4])]}
        adam = {"learning_rate": 1e-3}
        r3 = post(server, "optim_step", {"model_id": model_id, "seq_id": 3, "adam_params": adam})
        r2 = post(
            server,
            "forward_backward",
            {"model_id": model_id, "seq_id": 2, "forward_backward_input": fb},
        )
        assert server.backend is not None
        assert server.backend.sequencer(model_id).waiting == 2  # seq 2 and 3 wait for seq 1
        server.backend.worker.submit(lambda e: None).result(timeout=10)  # FIFO: all queued ran
        assert engine.calls == []
        r1 = post(server, "forward", {"model_id": model_id, "seq_id": 1, "forward_input": fb})
        results = [wait_future(server, r.json()["request_id"]) for r in (r1, r2, r3)]
        assert [name for name, _ in engine.calls] == ["forward", "forward_backward", "optim_step"]
        tt.OptimStepResponse.model_validate(results[2])

        # a re-sent request (same seq_id) is answered with the same future, not run twice
        again = post(server, "optim_step", {"model_id": model_id, "seq_id": 3, "adam_params": adam})
        assert again.json()["request_id"] == r3.json()["request_id"]
        assert [name for name, _ in engine.calls].count("optim_step") == 1

        # a refused request does not block the ones after it
        bad = post(
            server, "optim_step", {"model_id": model_id, "seq_id": 4, "adam_params": {"beta1": 2}}
        )
        assert bad.status_code == 422
        r5 = post(server, "optim_step", {"model_id": model_id, "seq_id": 5, "adam_params": adam})
        assert "metrics" in wait_future(server, r5.json()["request_id"], timeout=10)


def test_retrieve_future_long_polls_then_answers_try_again() -> None:
    create = {"session_id": "s", "model_seq_id": 0, "base_model": SMALL}
    with fake_server(long_poll_s=0.1) as (server, _), _engine_held(server):
        r = post(server, "create_model", create)
        body = post(server, "retrieve_future", {"request_id": r.json()["request_id"]}).json()
        assert TryAgainResponse.model_validate(body).request_id == r.json()["request_id"]
    with fake_server() as (server, _):
        answers: list[Any] = []
        with _engine_held(server) as gate:
            r = post(server, "create_model", create)
            server.reset_counts()
            poll = _long_poll(server, r.json()["request_id"], answers)
            wait_until(
                lambda: server.request_counts()["retrieve_future"] == 1,
                "the long-poll to reach the server",
            )
            gate.set()  # the model is made while the poll waits
            poll.join(timeout=30)
        assert len(answers) == 1 and tt.CreateModelResponse.model_validate(answers[0]).model_id
        assert server.request_counts()["retrieve_future"] == 1  # one poll, no try_again loop
        unknown = post(server, "retrieve_future", {"request_id": "req-nope"})
        assert unknown.status_code == 404 and "req-nope" in unknown.json()["error"]


def test_latency_ms_delays_every_operation() -> None:
    with fake_server(latency_ms=200) as (server, _):
        t0 = time.perf_counter()
        model_id = create_model(server)
        assert time.perf_counter() - t0 >= 0.2
        t0 = time.perf_counter()
        assert post(server, "get_info", {"model_id": model_id}).status_code == 200
        assert time.perf_counter() - t0 >= 0.2
        t0 = time.perf_counter()
        sid = post(
            server,
            "create_sampling_session",
            {"session_id": "s", "sampling_session_seq_id": 0, "base_model": SMALL},
        ).json()["sampling_session_id"]
        assert time.perf_counter() - t0 >= 0.2
        body = {
            "sampling_session_id": sid,
            "prompt": tokens([1, 2]),
            "sampling_params": {"max_tokens": 2},
        }
        t0 = time.perf_counter()
        wait_future(server, post(server, "asample", body).json()["request_id"])
        assert time.perf_counter() - t0 >= 0.2
        # the setup endpoints are not delayed (they are not operations)
        assert httpx.get(f"{server.base_url}/api/v1/mint_envkit/stats").json()["latency_ms"] == 200


def test_request_counts_count_asample_and_reset() -> None:
    with fake_server() as (server, _):
        assert server.request_counts() == {}
        sid = post(
            server,
            "create_sampling_session",
            {"session_id": "s", "sampling_session_seq_id": 0, "base_model": SMALL},
        ).json()["sampling_session_id"]
        body = {
            "sampling_session_id": sid,
            "prompt": tokens([1, 2]),
            "sampling_params": {"max_tokens": 2},
        }
        ids = [post(server, "asample", body).json()["request_id"] for _ in range(3)]
        for rid in ids:
            body = wait_future(server, rid)
            assert body["type"] == "sample" and len(body["sequences"]) == 1
            assert set(body["sequences"][0]) == {"tokens", "logprobs", "stop_reason"}
        counts = server.request_counts()
        assert counts["asample"] == 3 and counts["create_sampling_session"] == 1
        stats = httpx.get(f"{server.base_url}/api/v1/mint_envkit/stats").json()
        assert stats["request_counts"]["asample"] == 3
        server.reset_counts()
        assert server.request_counts()["asample"] == 0


def test_engine_user_errors_become_failed_futures_or_404() -> None:
    with fake_server() as (server, _):
        model_id = create_model(server)
        # a user error inside an operation: a failed future the SDK raises as RequestFailedError
        body = {
            "model_id": model_id,
            "seq_id": 1,
            "forward_input": {
                "loss_fn": "cross_entropy",
                "data": [datum([5000], target_tokens=[1])],
            },
        }
        result = wait_future(server, post(server, "forward", body).json()["request_id"])
        failed = tt.RequestFailedResponse.model_validate(result)
        assert failed.category == "user" and "vocabulary" in failed.error
        # a user error on a direct endpoint: 404 with the engine's message
        r = post(
            server,
            "create_sampling_session",
            {"session_id": "s", "sampling_session_seq_id": 0, "model_path": "tinker://x/weights/y"},
        )
        assert r.status_code == 404 and "not found" in r.json()["error"]
        assert httpx.get(f"{server.base_url}/api/v1/healthz").status_code == 200


def test_rest_routes_list_and_delete_checkpoints() -> None:
    with fake_server() as (server, engine):
        model_id = create_model(server)
        r = post(server, "save_weights", {"model_id": model_id, "path": "a", "seq_id": 1})
        path = wait_future(server, r.json()["request_id"])["path"]
        assert path == f"tinker://{model_id}/weights/a"
        base = f"{server.base_url}/api/v1"
        listed = tt.CheckpointsListResponse.model_validate(
            httpx.get(f"{base}/training_runs/{model_id}/checkpoints").json()
        )
        assert [c.checkpoint_id for c in listed.checkpoints] == ["weights/a"]
        runs = tt.TrainingRunsResponse.model_validate(httpx.get(f"{base}/training_runs").json())
        assert runs.training_runs[0].last_checkpoint is not None
        assert (
            httpx.delete(f"{base}/training_runs/{model_id}/checkpoints/weights/a").status_code
            == 204
        )
        assert engine.checkpoints == {}
        missing = httpx.delete(f"{base}/training_runs/{model_id}/checkpoints/weights/a")
        assert missing.status_code == 404
        escape = httpx.delete(f"{base}/training_runs/{model_id}/checkpoints/weights/..%2F..")
        assert escape.status_code in (404, 422)
        archive = httpx.get(f"{base}/training_runs/{model_id}/checkpoints/weights/a/archive")
        assert archive.status_code == 404 and "not supported" in archive.json()["error"]
        run = tt.TrainingRun.model_validate(httpx.get(f"{base}/training_runs/{model_id}").json())
        assert run.training_run_id == model_id and run.base_model == SMALL
        everything = tt.CheckpointsListResponse.model_validate(
            httpx.get(f"{base}/checkpoints").json()
        )
        assert everything.checkpoints == [] and everything.cursor is not None
        sessions = tt.ListSessionsResponse.model_validate(httpx.get(f"{base}/sessions").json())
        session = tt.GetSessionResponse.model_validate(
            httpx.get(f"{base}/sessions/{sessions.sessions[0]}").json()
        )
        assert session.training_run_ids == [model_id]

        # unload: the future answers, then the model_id is gone
        r = post(server, "unload_model", {"model_id": model_id})
        tt.UnloadModelResponse.model_validate(wait_future(server, r.json()["request_id"]))
        assert post(server, "get_info", {"model_id": model_id}).status_code == 404


def test_the_server_accepts_exactly_the_engine_losses() -> None:
    from mint_envkit.local.engine.records import SUPPORTED_LOSSES

    datum_body = datum([1, 2], target_tokens=[2, 3], logprobs=[0.0, 0.0], advantages=[1.0, 1.0])
    with fake_server() as (server, _):
        model_id = create_model(server)
        for seq_id, loss_fn in enumerate([*SUPPORTED_LOSSES, "cispo", "dro"], start=1):
            body = {"loss_fn": loss_fn, "data": [datum_body]}
            r = post(
                server, "forward", {"model_id": model_id, "seq_id": seq_id, "forward_input": body}
            )
            if loss_fn in SUPPORTED_LOSSES:
                assert "metrics" in wait_future(server, r.json()["request_id"])
            else:
                assert r.status_code == 422 and "unsupported loss_fn" in r.json()["error"]


def test_loopback_only_unless_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    assert is_loopback_host("127.0.0.1") and is_loopback_host("localhost")
    assert is_loopback_host("::1") and is_loopback_host("127.0.0.5")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("192.168.1.10")
    with pytest.raises(ConfigError, match="loopback"):
        LocalServer(host="0.0.0.0")
    assert cli_main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_serve_command_runs_until_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "TINKER_TELEMETRY": "0"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mint_envkit.cli",
            "serve",
            "--port",
            "0",
            "--model",
            SMALL,
            "--state-dir",
            str(tmp_path),
            "--no-preload",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = read_line(proc, timeout=60)
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split("listening on ", 1)[1].split()[0]
        assert httpx.get(f"{url}/api/v1/healthz").json()["status"] == "ok"
        proc.terminate()
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


_ON_BASE = {"session_id": "s", "sampling_session_seq_id": 0, "base_model": SMALL}
_ON_BAD_PATH = {
    "session_id": "s",
    "sampling_session_seq_id": 1,
    "model_path": "tinker://x/weights/y",
}


def _sample_on(sid: str) -> dict[str, Any]:
    return {
        "sampling_session_id": sid,
        "prompt": tokens([1, 2]),
        "sampling_params": {"max_tokens": 2},
    }


def test_sampling_session_answers_before_a_busy_engine_is_free() -> None:
    """A busy worker must not hold create_sampling_session past the SDK's read timeout: the
    session gets a pending id at once; a bad path fails at its first sample."""
    with fake_server() as (server, _):
        assert server.backend is not None
        server.backend.direct_call_timeout_s = 0.05
        with _engine_held(server):  # busy until the block ends: no sampler is made before
            sid = post(server, "create_sampling_session", _ON_BASE).json()["sampling_session_id"]
            assert sid.startswith("sampler-pending-")
            r = post(server, "create_sampling_session", _ON_BAD_PATH)
            assert r.status_code == 200, r.text
            bad_sid = r.json()["sampling_session_id"]
            assert bad_sid.startswith("sampler-pending-")
            good_rid = post(server, "asample", _sample_on(sid)).json()["request_id"]
            bad_rid = post(server, "asample", _sample_on(bad_sid)).json()["request_id"]
        assert len(wait_future(server, good_rid)["sequences"]) == 1
        failed = wait_future(server, bad_rid)
        assert failed["category"] == "user" and "not found" in failed["error"]


def test_a_bad_sampler_path_is_a_404_at_once_when_the_engine_is_free() -> None:
    with fake_server() as (server, _):
        assert server.backend is not None
        server.backend.direct_call_timeout_s = 30.0  # a free engine answers long before
        sid = post(server, "create_sampling_session", _ON_BASE).json()["sampling_session_id"]
        assert not sid.startswith("sampler-pending-")
        rid = post(server, "asample", _sample_on(sid)).json()["request_id"]
        assert len(wait_future(server, rid)["sequences"]) == 1
        r = post(server, "create_sampling_session", _ON_BAD_PATH)
        assert r.status_code == 404 and "not found" in r.json()["error"]


def test_a_served_directory_is_known_by_its_absolute_path(tmp_path: Path, monkeypatch) -> None:
    from mint_envkit.local.http.requests import ProtocolError
    from mint_envkit.local.http.state import Backend

    (tmp_path / "my-model").mkdir()
    monkeypatch.chdir(tmp_path)
    backend = Backend(models=["./my-model"], engine_factory=lambda: None, preload=False)
    try:
        assert backend.require_base_model("./my-model") == "./my-model"
        assert backend.require_base_model(str(tmp_path / "my-model")) == "./my-model"
        with pytest.raises(ProtocolError, match="unknown base model"):
            backend.require_base_model("other/model")
    finally:
        backend.close()
