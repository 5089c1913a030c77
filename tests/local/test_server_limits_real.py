"""Bounded work on the real engine (tiny model): no starvation, a fast stop, no torn checkpoint.

Before issue 10 a 4-token sample waited for the whole big job (one engine
call), and stopping the server waited for it too.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import SMALL, create_model, post, read_line, tokens, wait_future, wait_until

from mint_envkit.local.http.limits import Limits
from mint_envkit.local.server import LocalServer

BIG = {"num_samples": 16, "max_tokens": 96}
# the big job runs as 8 sub-requests of 2 samples, each sample in 3 segments of 32 tokens
CHUNK = Limits(sample_chunk_tokens=2 * (4 + 32), sample_segment_tokens=32)
BIG_PIECES = 8 + 2 * BIG["num_samples"]  # engine jobs: 8 first segments, then 2 per sample


def _sample_body(num_samples: int, max_tokens: int) -> dict[str, Any]:
    return {
        "base_model": SMALL,
        "num_samples": num_samples,
        "prompt": tokens([1, 2, 3, 4]),
        "sampling_params": {"max_tokens": max_tokens, "seed": 5},
    }


def _stats(base_url: str) -> dict[str, Any]:
    r = httpx.get(f"{base_url}/api/v1/mint_envkit/stats", timeout=30)
    r.raise_for_status()
    return r.json()


def _wait_until_mid_job(base_url: str, batches_before: int) -> None:
    """Wait until the big job (the one pending request) runs: a piece of it has been sampled
    and its future is still pending."""

    def mid_job() -> bool:
        stats = _stats(base_url)
        return len(stats["sample_batches"]) > batches_before and stats["pending_futures"] >= 1

    wait_until(mid_job, "a first piece of the big job to be sampled", timeout=60)


def _chunked_server(state_dir: Path) -> LocalServer:
    server = LocalServer(models=[SMALL], state_dir=str(state_dir), limits=CHUNK).start()
    assert server.preload_errors(timeout=300) == {}
    wait_future(server, post(server, "asample", _sample_body(1, 2)).json()["request_id"])
    return server


@pytest.fixture(scope="module")
def chunked_server(tmp_path_factory: pytest.TempPathFactory):
    server = _chunked_server(tmp_path_factory.mktemp("state"))
    yield server
    server.close()


def test_a_small_sample_answers_while_a_big_job_runs(chunked_server: LocalServer) -> None:
    server = chunked_server
    done: dict[str, float] = {}
    batches_before = len(_stats(server.base_url)["sample_batches"])
    big_id = post(server, "asample", _sample_body(**BIG)).json()["request_id"]

    def wait_big() -> None:
        result = wait_future(server, big_id, timeout=120)
        assert len(result["sequences"]) == BIG["num_samples"]
        assert {len(s["tokens"]) for s in result["sequences"]} == {BIG["max_tokens"]}
        done["big"] = time.perf_counter()

    thread = threading.Thread(target=wait_big)
    thread.start()
    _wait_until_mid_job(server.base_url, batches_before)
    t0 = time.perf_counter()
    small = wait_future(server, post(server, "asample", _sample_body(1, 4)).json()["request_id"])
    done["small"] = time.perf_counter()
    thread.join(timeout=130)  # wait_big gives up after 120 s
    assert "big" in done, "the big job did not answer (see the thread's error above)"
    assert len(small["sequences"][0]["tokens"]) == 4
    assert done["small"] - t0 < 5.0, done["small"] - t0
    assert done["small"] < done["big"]


# loads the model in a server of its own: measured 4.7 s alone, 0.9 s later in a session
def test_close_stops_within_10_s_while_a_big_job_runs(tmp_path: Path) -> None:
    server = _chunked_server(tmp_path)
    assert server.backend is not None
    batches_before = len(server.backend.batcher.batches)
    post(server, "asample", _sample_body(**BIG)).raise_for_status()
    _wait_until_mid_job(server.base_url, batches_before)
    t0 = time.perf_counter()
    server.close()
    assert time.perf_counter() - t0 < 10.0
    # close stopped the job part-way (it did not wait for the rest of it)
    pieces = sum(list(server.backend.batcher.batches)[batches_before:])
    assert pieces < BIG_PIECES, f"all {pieces} pieces of the big job ran before close"


def test_a_full_disk_leaves_no_torn_checkpoint(
    chunked_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.torch

    server = chunked_server
    assert server.backend is not None
    tmp_path = Path(server.backend.worker.submit(lambda e: e.state_dir).result())
    model_id = create_model(server)

    def full(tensors: Any, filename: str, *args: Any, **kwargs: Any) -> None:
        Path(filename).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device", filename)

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    r = post(server, "save_weights", {"model_id": model_id, "path": "step-1", "seq_id": 1})
    failed = wait_future(server, r.json()["request_id"])
    assert "no space left" in failed["error"] and str(tmp_path) in failed["error"]
    left = (
        [p.name for p in (tmp_path / model_id).rglob("*")] if (tmp_path / model_id).exists() else []
    )
    assert not any(name.startswith(".tmp-") or name == "step-1" for name in left), left


# a `mint-envkit serve` process loads the model: measured 6.0 s alone, 8.9 s in a session
def test_sigterm_stops_the_serve_command_within_10_s_during_a_big_job(tmp_path: Path) -> None:
    env = {**os.environ, "TINKER_TELEMETRY": "0"}
    command = [sys.executable, "-m", "mint_envkit.cli", "serve", "--port", "0", "--model", SMALL]
    command += ["--state-dir", str(tmp_path), "--sample-chunk-tokens"]
    command += [str(CHUNK.sample_chunk_tokens), "--sample-segment-tokens", "32"]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        line = read_line(proc, timeout=100)  # it loads the model first
        assert "listening on http://127.0.0.1:" in line, line
        base_url = line.split("listening on ")[1].split(" ")[0]
        batches_before = len(_stats(base_url)["sample_batches"])
        r = httpx.post(f"{base_url}/api/v1/asample", json=_sample_body(**BIG), timeout=30)
        r.raise_for_status()
        _wait_until_mid_job(base_url, batches_before)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert time.perf_counter() - t0 < 10.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
