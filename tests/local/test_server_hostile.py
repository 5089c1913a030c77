"""Hostile input, round two: body size and parsing, starved small requests, malformed and
degenerate values, the keyed server from a local Config, a full disk during a save.

The fake-engine tests run in milliseconds; the real-engine ones share one server
(``real_server``, the tiny test model).
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import random
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import SMALL, create_model, datum, fake_server, post, tokens, wait_future

from mint_envkit.local.http.limits import Limits
from mint_envkit.local.server import LocalServer
from mint_envkit.rollouts.backend import preflight, resolve_connection

# --------------------------------------------------------------------------- helpers


def _address(server: LocalServer) -> tuple[str, int]:
    host, port = server.base_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _head(server: LocalServer, route: str, extra: str) -> bytes:
    host, port = _address(server)
    return (
        f"POST /api/v1/{route} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\n{extra}\r\n"
    ).encode()


def _status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return True


def _read_response(sock: socket.socket, deadline: float) -> bytes:
    data = b""
    while not _complete(data) and time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _fb_body(model_id: str, data: list[dict[str, Any]], seq_id: int = 1) -> dict[str, Any]:
    return {
        "model_id": model_id,
        "seq_id": seq_id,
        "forward_backward_input": {"loss_fn": "cross_entropy", "data": data},
    }


def _sample_body(session_id: str, max_tokens: int = 4, **params: Any) -> dict[str, Any]:
    return {
        "sampling_session_id": session_id,
        "num_samples": 1,
        "prompt": tokens([1, 2, 3]),
        "sampling_params": {"max_tokens": max_tokens, "seed": 0, **params},
    }


def _sampling_session(server: LocalServer) -> str:
    r = post(
        server,
        "create_sampling_session",
        {"session_id": "s", "sampling_session_seq_id": 0, "base_model": SMALL},
    )
    r.raise_for_status()
    body = r.json()
    if "sampling_session_id" not in body:
        body = wait_future(server, body["request_id"], timeout=100)
    return body["sampling_session_id"]


# --------------------------------------------------------------------------- body size


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read() -> None:
    with fake_server() as (server, _engine):
        with socket.create_connection(_address(server), timeout=5) as sock:
            # 200 MB declared, nothing sent: the answer must not wait for the body
            sock.sendall(_head(server, "forward_backward", "Content-Length: 200000000\r\n"))
            t0 = time.monotonic()
            raw = _read_response(sock, t0 + 5)
        assert raw, "no answer within 5 s: the server waited for the body"
        assert _status_of(raw) == 413
        assert b"forward_backward" in raw and b"limit" in raw


def test_a_chunked_body_stops_being_read_at_the_limit() -> None:
    with fake_server(max_body_bytes=1 << 20) as (server, _engine):
        sent, raw = 0, b""
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
        with socket.create_connection(_address(server), timeout=5) as sock:
            sock.sendall(_head(server, "asample", "Transfer-Encoding: chunked\r\n"))
            deadline = time.monotonic() + 30
            try:
                while sent < (64 << 20) and time.monotonic() < deadline:
                    sock.sendall(chunk)
                    sent += 1 << 20
            except OSError:  # the server answered and closed: it stopped reading
                pass
            raw = _read_response(sock, time.monotonic() + 5)
        assert sent < (32 << 20), f"the server read {sent >> 20} MB past a 1 MB limit"
        if raw:  # the 413 may be lost when the connection is reset under the client
            assert _status_of(raw) == 413


def test_healthz_answers_while_a_big_body_is_still_being_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Structural, not timed: the big body's JSON parse is held inside its worker
    # thread until healthz has answered. A parse on the event loop would block
    # healthz until the parse ends, which (held) never happens: healthz times out.
    from mint_envkit.local.http import app as app_module

    parsing, release = threading.Event(), threading.Event()
    real_parse = app_module.parse_json_body

    def held_parse(raw: bytes) -> Any:
        if len(raw) > 16 << 20:  # only the 18 MB body below (parsed in a thread)
            parsing.set()
            release.wait(60)
        return real_parse(raw)

    monkeypatch.setattr(app_module, "parse_json_body", held_parse)
    limits = Limits(max_request_tokens=1 << 22)
    with fake_server(limits=limits, max_body_bytes=256 << 20) as (server, _engine):
        model_id = create_model(server)
        rng = random.Random(0)
        data = [
            datum(
                [rng.randrange(2000) for _ in range(200)],
                target_tokens=[rng.randrange(2000) for _ in range(200)],
                weights=[rng.random() for _ in range(200)],
            )
            for _ in range(3000)
        ]
        body = json.dumps(_fb_body(model_id, data)).encode()  # 18 MB
        result: list[Any] = []

        def send() -> None:
            result.append(
                httpx.post(
                    f"{server.base_url}/api/v1/forward_backward",
                    content=body,
                    headers={"content-type": "application/json"},
                    timeout=100,
                )
            )

        sender = threading.Thread(target=send)
        sender.start()
        try:
            assert parsing.wait(60), "the big body never reached the threaded parse"
            health = httpx.get(f"{server.base_url}/api/v1/healthz", timeout=20)
            assert health.status_code == 200
            assert not release.is_set()  # answered while the parse was still held
        finally:
            release.set()
            sender.join(timeout=100)
        assert result and result[0].status_code == 200, result


# --------------------------------------------------------------------------- malformed values


@pytest.mark.parametrize("loss_fn", [[], {}, None, 5, ["cross_entropy"]])
def test_a_loss_fn_of_the_wrong_type_is_a_422_naming_it(loss_fn: Any) -> None:
    with fake_server() as (server, _engine):
        model_id = create_model(server)
        body = _fb_body(model_id, [datum([1, 2], target_tokens=[2, 3])])
        body["forward_backward_input"]["loss_fn"] = loss_fn
        r = post(server, "forward_backward", body)
        assert r.status_code == 422 and "loss_fn" in r.json()["error"], r.text


@pytest.mark.parametrize("key", [b"sk-\xe9t\xe9", b"a.b.\xff", b"\x80"])
def test_an_api_key_with_non_ascii_bytes_is_a_401(key: bytes) -> None:
    with fake_server(api_key="sk-right") as (server, _engine):
        r = httpx.post(
            f"{server.base_url}/api/v1/create_session",
            content=b"{}",
            headers=[(b"content-type", b"application/json"), (b"x-api-key", key)],
            timeout=10,
        )
        assert r.status_code == 401 and "API key" in r.json()["error"]


_BAD_VALUES: list[Any] = [None, [], {}, "x", -1, 1e308, True, [[[]]], {"a": {}}]


def _mutations(body: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for key, value in body.items():
        paths.append((*prefix, key))
        if isinstance(value, dict):
            paths.extend(_mutations(value, (*prefix, key)))
    return paths


def _with(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def test_every_malformed_value_is_a_4xx_never_a_5xx() -> None:
    with fake_server() as (server, _engine):
        model_id = create_model(server)
        session = _sampling_session(server)
        bodies = {
            "forward_backward": _fb_body(model_id, [datum([1, 2], target_tokens=[2, 3])]),
            "optim_step": {"model_id": model_id, "adam_params": {"learning_rate": 1e-3}},
            "asample": _sample_body(session),
            "create_model": {
                "session_id": "s",
                "model_seq_id": 1,
                "base_model": SMALL,
                "lora_config": {"rank": 4},
            },
            "save_weights": {"model_id": model_id, "path": "a"},
            "load_weights": {"model_id": model_id, "path": "tinker://m/weights/a"},
            "retrieve_future": {"request_id": "req-1"},
            "get_info": {"model_id": model_id},
        }
        failures = []
        with httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30) as client:
            for route, body in bodies.items():
                for path in _mutations(body):
                    for value in _BAD_VALUES:
                        r = client.post(route, json=_with(body, path, value))
                        if r.status_code >= 500:
                            failures.append((route, ".".join(path), value, r.text[:200]))
        assert not failures, failures


# --------------------------------------------------------------------------- degenerate numbers


@pytest.mark.parametrize("temperature", [1e-40, 1e-300, 1e-4, 0.0, -1.0])
def test_a_degenerate_temperature_is_refused_naming_the_floor(temperature: float) -> None:
    with fake_server() as (server, _engine):
        session = _sampling_session(server)
        r = post(server, "asample", _sample_body(session, temperature=temperature))
        assert r.status_code == 422, r.text
        assert "temperature" in r.json()["error"] and "0.001" in r.json()["error"]
        ok = post(server, "asample", _sample_body(session, temperature=1e-3))
        assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("learning_rate", [1e30, 2.0, -1e-3])
def test_a_degenerate_learning_rate_is_refused(learning_rate: float) -> None:
    with fake_server() as (server, _engine):
        model_id = create_model(server)
        body = {"model_id": model_id, "adam_params": {"learning_rate": learning_rate}}
        r = post(server, "optim_step", body)
        assert r.status_code == 422 and "learning_rate" in r.json()["error"], r.text
        body["adam_params"]["learning_rate"] = 1.0
        assert post(server, "optim_step", body).status_code == 200


def test_the_server_and_config_share_the_bounds() -> None:
    from mint_envkit.local.bounds import (
        LEARNING_RATE_MAX,
        TEMPERATURE_MIN,
        learning_rate_problem,
        temperature_problem,
    )

    assert temperature_problem(TEMPERATURE_MIN) is None
    assert temperature_problem(TEMPERATURE_MIN / 2) is not None
    assert temperature_problem(math.nan) is not None and temperature_problem(True) is not None
    assert learning_rate_problem(LEARNING_RATE_MAX) is None
    assert learning_rate_problem(math.nextafter(LEARNING_RATE_MAX, 2)) is not None
    # Config refuses what the server refuses, with the same rule
    from mint_envkit.errors import ConfigError
    from mint_envkit.rl.config import Config, validate_field

    for temperature in (1e-40, TEMPERATURE_MIN / 2):
        with pytest.raises(ConfigError, match=r"Config.temperature must be > 0, a finite number"):
            validate_field(Config, "temperature", temperature)
    validate_field(Config, "temperature", TEMPERATURE_MIN)
    with pytest.raises(ConfigError, match="learning_rate"):
        validate_field(Config, "learning_rate", math.nextafter(LEARNING_RATE_MAX, 2))


# --------------------------------------------------------------------------- keyed server


def test_a_keyed_server_is_usable_from_a_local_config_with_mint_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MINT_API_KEY", "sk-hand-started")
    with fake_server(api_key="sk-hand-started") as (server, _engine):
        connection = resolve_connection("local", server.base_url)
        assert connection.api_key == "sk-hand-started"
        asyncio.run(preflight(server.base_url, api_key=connection.api_key, timeout_s=10))
        r = httpx.post(
            f"{server.base_url}/api/v1/create_session",
            json={},
            headers={"x-api-key": connection.api_key},
            timeout=10,
        )
        assert r.status_code == 200, r.text


# --------------------------------------------------------------------------- real engine


def test_a_full_disk_in_safetensors_names_the_directory(
    real_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.torch
    from safetensors import SafetensorError

    server = real_server
    assert server.backend is not None
    state = Path(server.backend.worker.submit(lambda e: e.state_dir).result())
    model_id = create_model(server)

    def full(tensors: Any, filename: str, *args: Any, **kwargs: Any) -> None:
        Path(filename).write_bytes(b"partial")
        raise SafetensorError(
            "Error while serializing: I/O error: No space left on device (os error 28)"
        )

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    r = post(server, "save_weights", {"model_id": model_id, "path": "full-1", "seq_id": 1})
    failed = wait_future(server, r.json()["request_id"])
    assert failed["category"] == "user", failed
    assert "no space left" in failed["error"] and str(state) in failed["error"], failed
    assert "internal error" not in failed["error"]
    left = [p.name for p in (state / model_id).rglob("*")] if (state / model_id).exists() else []
    assert not any(name.startswith(".tmp-") or name == "full-1" for name in left), left
    assert errno.ENOSPC == 28


def _big_batch(n: int, length: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ids = [rng.randrange(2000) for _ in range(length)]
        out.append(datum(ids, target_tokens=[*ids[1:], 5], weights=[1.0] * length))
    return out


def test_a_small_sample_is_served_between_the_pieces_of_a_big_forward_backward(
    real_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Structural, not timed: the sample must be run by the batcher's ``run_pending``
    # hook, which a split training job calls between its pieces.
    server = real_server
    assert server.backend is not None
    batcher = server.backend.batcher
    session = _sampling_session(server)
    wait_future(server, post(server, "asample", _sample_body(session)).json()["request_id"])
    served_between: list[int] = []
    real_run_pending = batcher.run_pending

    def recording_run_pending(engine: Any) -> None:
        before = len(batcher.batches)
        real_run_pending(engine)
        served_between.append(len(batcher.batches) - before)

    monkeypatch.setattr(batcher, "run_pending", recording_run_pending)
    model_id = create_model(server)
    big = post(server, "forward_backward", _fb_body(model_id, _big_batch(8, 2000)))
    big.raise_for_status()
    small = post(server, "asample", _sample_body(session))
    small.raise_for_status()
    result = wait_future(server, small.json()["request_id"], timeout=60)
    assert len(result["sequences"][0]["tokens"]) == 4
    fb = wait_future(server, big.json()["request_id"], timeout=100)
    assert "error" not in fb, fb
    assert served_between, "the big forward_backward was not split into pieces"
    assert sum(served_between) == 1, f"the sample was not run between pieces: {served_between}"


def test_a_split_forward_backward_has_the_gradient_of_the_unsplit_job(
    real_server: LocalServer,
) -> None:
    server = real_server
    assert server.backend is not None
    data = [
        {
            "model_input": d["model_input"]["chunks"][0]["tokens"],
            "loss_fn_inputs": {k: v["data"] for k, v in d["loss_fn_inputs"].items()},
        }
        for d in _big_batch(6, 300, seed=1)
    ]

    def run(engine: Any) -> tuple[Any, Any, int]:
        calls = []
        grads = []
        losses = []
        for kw in ({}, {"piece_tokens": 300, "between": lambda: calls.append(1)}):
            model_id = engine.create_lora(SMALL, rank=4, seed=3)
            out = engine.forward(model_id, data, "cross_entropy", None, backward=True, **kw)
            params = engine.registry.trainers[model_id].params
            grads.append({k: p.grad.detach().clone() for k, p in params.items()})
            losses.append(out.metrics["loss:sum"])
            engine.unload(model_id)
        return grads, losses, len(calls)

    (whole, split), (loss_whole, loss_split), between_calls = server.backend.worker.submit(
        run
    ).result(timeout=100)
    assert between_calls == 5  # six pieces of one datum
    scale = max(float(g.abs().max()) for g in whole.values())
    worst = max(float((whole[k] - split[k]).abs().max()) for k in whole)
    # the same terms summed in another order: float32 rounding, relative to the values
    assert worst <= 1e-4 * scale, (worst, scale)
    assert math.isclose(loss_whole, loss_split, rel_tol=1e-5)
