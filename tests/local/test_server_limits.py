"""Bounded work: admission by cost, split sample jobs, idle release, disk errors (fake engine).

The real-engine checks (a small sample answered while a big job runs, stop
within 10 s) are in ``test_server_limits_real.py``.
"""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import (
    SMALL,
    create_model,
    datum,
    fake_server,
    post,
    tokens,
    wait_future,
    wait_until,
)

from mint_envkit.errors import ConfigError
from mint_envkit.local.http.limits import Limits
from mint_envkit.local.server import LocalServer
from mint_envkit.local.state_dir import check_state_dir


def _sample(server: LocalServer, n: int, max_tokens: int, **extra: object) -> httpx.Response:
    body = {
        "base_model": SMALL,
        "num_samples": n,
        "prompt": tokens([1, 2, 3, 4]),
        "sampling_params": {"max_tokens": max_tokens, "seed": 3},
        **extra,
    }
    return post(server, "asample", body)


def test_requests_that_can_never_fit_are_refused_naming_the_flag() -> None:
    limits = Limits(max_request_tokens=100, max_sample_tokens=200)
    with fake_server(limits=limits) as (server, engine):
        model_id = create_model(server)
        data = [datum(list(range(1, 31)), target_tokens=list(range(2, 32)))] * 4  # 4 x 30
        fwd = {"data": data, "loss_fn": "cross_entropy"}
        r = post(
            server,
            "forward_backward",
            {"model_id": model_id, "seq_id": 1, "forward_backward_input": fwd},
        )
        assert r.status_code == 413
        assert "120 tokens" in r.json()["error"] and "--max-request-tokens" in r.json()["error"]
        r = _sample(server, 64, 100)
        assert r.status_code == 413
        error = r.json()["error"]
        assert "64 x (4 + 100) = 6656" in error and "--max-sample-tokens" in error
        assert "max_sample_tokens=" in error  # the LocalServer parameter too
        # within the limits, the same kinds of requests run
        fwd["data"] = data[:3]
        r = post(
            server,
            "forward_backward",
            {"model_id": model_id, "seq_id": 2, "forward_backward_input": fwd},
        )
        assert "loss_fn_outputs" in wait_future(server, r.json()["request_id"])
        assert not any(name == "sample" for name, _ in engine.calls)


def test_a_big_sample_job_is_split_and_a_small_request_overtakes_it() -> None:
    limits = Limits(sample_chunk_tokens=2 * (4 + 8))  # two samples per sub-request
    with fake_server(limits=limits, engine_delay_s=0.2) as (server, engine):
        big = _sample(server, 20, 8).json()["request_id"]
        wait_until(
            lambda: any(name == "sample" for name, _ in engine.calls),
            "the first sub-request to run",
        )
        small = wait_future(server, _sample(server, 1, 4).json()["request_id"])
        samples_before_small = sum(name == "sample" for name, _ in engine.calls)
        assert len(small["sequences"]) == 1
        done_big = wait_future(server, big)
        assert len(done_big["sequences"]) == 20
        assert len({tuple(s["tokens"]) for s in done_big["sequences"]}) == 20  # seeds differ
        assert sum(name == "sample" for name, _ in engine.calls) == 11  # 10 x 2 samples + 1
        # the small request ran after a few of the ten sub-requests, not after all of them
        assert samples_before_small <= 5, samples_before_small


def test_idle_training_clients_and_sessions_are_released() -> None:
    with fake_server(limits=Limits(idle_timeout_s=0.3)) as (server, engine):
        model_id = create_model(server)
        session = post(server, "create_session", {}).json()["session_id"]

        def sessions() -> str:  # listing the sessions is no activity on them
            return str(httpx.get(f"{server.base_url}/api/v1/sessions").json())

        wait_until(
            lambda: ("unload", model_id) in engine.calls and session not in sessions(),
            "the idle training client and session to be released",
        )
        r = post(server, "get_info", {"model_id": model_id})
        assert r.status_code == 404


def test_a_heartbeat_keeps_a_session() -> None:
    with fake_server(limits=Limits(idle_timeout_s=0.6)) as (server, _):
        session = post(server, "create_session", {}).json()["session_id"]
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(0.1):
                post(server, "session_heartbeat", {"session_id": session})

        thread = threading.Thread(target=beat)
        thread.start()
        try:
            time.sleep(1.5)  # 2.5 idle timeouts: the session would be gone without the beats
        finally:
            stop.set()
            thread.join()
        assert session in str(httpx.get(f"{server.base_url}/api/v1/sessions").json())


def test_a_state_dir_that_cannot_hold_checkpoints_fails_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="is not writable") as info:
        LocalServer(models=[SMALL], state_dir=str(blocker / "state"), preload=False).start()
    assert str(blocker) in str(info.value)
    with pytest.raises(ConfigError, match="MB free") as info:
        check_state_dir(tmp_path, min_free_bytes=1 << 62)
    assert str(tmp_path) in str(info.value) and "--state-dir" in str(info.value)
    assert check_state_dir(tmp_path / "new", min_free_bytes=0) == (tmp_path / "new").resolve()


def test_a_full_disk_during_a_save_is_a_clear_error_naming_the_directory() -> None:
    with fake_server() as (server, engine):
        model_id = create_model(server)

        def full(model_id: str, name: str, *, kind: str = "state") -> str:
            where = f"/state/{model_id}/weights/.tmp-abc/adapter_model.safetensors"
            raise OSError(errno.ENOSPC, "No space left on device", where)

        engine.save_state = full
        r = post(server, "save_weights", {"model_id": model_id, "path": "a", "seq_id": 1})
        failed = wait_future(server, r.json()["request_id"])
        assert failed["category"] == "user"
        assert f"'/state/{model_id}/weights'" in failed["error"]
        assert "no space left" in failed["error"] and "Nothing was saved" in failed["error"]


def test_long_samples_are_drawn_in_segments_that_continue_each_sample() -> None:
    limits = Limits(sample_segment_tokens=64)
    with fake_server(limits=limits) as (server, engine):
        result = wait_future(server, _sample(server, 3, 200).json()["request_id"])
        assert [len(s["tokens"]) for s in result["sequences"]] == [200, 200, 200]
        assert all(len(s["logprobs"]) == 200 for s in result["sequences"])
        # one piece of 3 x 64, then each sample alone: 64, 64, 8 more tokens
        assert sum(name == "sample" for name, _ in engine.calls) == 1 + 3 * 3
        again = wait_future(server, _sample(server, 3, 200).json()["request_id"])
        assert again["sequences"] == result["sequences"]  # seeded: reproducible
        short = wait_future(server, _sample(server, 2, 16).json()["request_id"])
        assert sum(name == "sample" for name, _ in engine.calls) == 2 * 10 + 1  # not cut
        assert [len(s["tokens"]) for s in short["sequences"]] == [16, 16]
