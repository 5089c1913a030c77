"""No web page can drive the server: Host, Origin, content type, API key; and the small holes.

All on the fake engine (milliseconds). Each test fails on the server before
issue 10: it executed whatever reached 127.0.0.1.
"""

from __future__ import annotations

import json

import httpx
import pytest
from server_helpers import SMALL, create_model, fake_server, post, wait_future

from mint_envkit.local.http.app import ROUTES
from mint_envkit.local.http.guard import generate_api_key

CREATE = {"session_id": "s", "model_seq_id": 0, "base_model": SMALL, "lora_config": {"rank": 4}}


def test_a_foreign_host_is_refused_before_anything_runs() -> None:
    with fake_server() as (server, engine):
        url = f"{server.base_url}/api/v1/create_model"
        r = httpx.post(url, json=CREATE, headers={"Host": "attacker.example"})
        assert r.status_code == 403 and "not this server's loopback address" in r.json()["error"]
        r = httpx.get(f"{server.base_url}/api/v1/checkpoints", headers={"Host": "evil.test:80"})
        assert r.status_code == 403
        assert not any(name == "create_lora" for name, _ in engine.calls)
        # the loopback names with the right port are served
        for host in ("127.0.0.1", "localhost"):
            r = httpx.get(
                f"{server.base_url}/api/v1/get_server_capabilities",
                headers={"Host": f"{host}:{server.port}"},
            )
            assert r.status_code == 200


def test_browser_requests_are_refused() -> None:
    with fake_server() as (server, engine):
        url = f"{server.base_url}/api/v1/create_model"
        r = httpx.post(url, json=CREATE, headers={"Origin": "http://attacker.example"})
        assert r.status_code == 403 and "Origin" in r.json()["error"]
        r = httpx.post(url, content=json.dumps(CREATE), headers={"Content-Type": "text/plain"})
        assert r.status_code == 415 and "application/json" in r.json()["error"]
        r = httpx.post(url, content=json.dumps(CREATE))  # no content type at all
        assert r.status_code == 415
        assert not any(name == "create_lora" for name, _ in engine.calls)
        assert create_model(server)  # the SDK's way still works


def test_an_api_key_is_required_when_set() -> None:
    key = generate_api_key()
    assert key.startswith("sk-local-") and key != generate_api_key()
    with fake_server(api_key=key) as (server, _):
        assert server.api_key == key
        url = f"{server.base_url}/api/v1"
        assert httpx.get(f"{url}/healthz").status_code == 200  # open: readiness probes
        r = httpx.post(f"{url}/create_model", json=CREATE)
        assert r.status_code == 401 and "--api-key" in r.json()["error"]
        r = httpx.post(f"{url}/create_model", json=CREATE, headers={"X-API-Key": key + "x"})
        assert r.status_code == 401
        assert httpx.post(f"{url}/auth/token", headers={"X-API-Key": "sk-wrong"}).status_code == 401
        token = httpx.post(f"{url}/auth/token", headers={"X-API-Key": key}).json()["jwt"]
        ok = httpx.post(f"{url}/create_model", json=CREATE, headers={"X-API-Key": token})
        assert ok.status_code == 200
        head, payload, _ = token.split(".")
        forged = f"{head}.{payload}.AAAA"
        r = httpx.post(f"{url}/create_model", json=CREATE, headers={"X-API-Key": forged})
        assert r.status_code == 401


def test_the_sdk_works_with_a_keyed_server_and_fails_without_the_key() -> None:
    import mint
    import tinker

    key = generate_api_key()
    with fake_server(api_key=key) as (server, _):
        client = mint.ServiceClient(base_url=server.base_url, api_key=key)
        try:
            caps = client.get_server_capabilities()
            assert caps.supported_models[0].model_name == SMALL
        finally:
            client.holder.close()
        with pytest.raises((tinker.AuthenticationError, tinker.APIStatusError)):
            mint.ServiceClient(base_url=server.base_url, api_key="sk-not-the-key")


def test_deep_json_and_huge_integers_are_a_400_on_every_body_route() -> None:
    deep = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge = b'{"seq_id": ' + b"9" * 4300 + b"}"
    body_routes = [spec for spec in ROUTES if spec.body]
    assert len(body_routes) >= 13
    with fake_server() as (server, _):
        for spec in body_routes:
            for raw in (deep, huge):
                r = httpx.post(
                    server.base_url + spec.path,
                    content=raw,
                    headers={"Content-Type": "application/json"},
                )
                assert r.status_code == 400, (spec.name, r.text[:200])


def test_a_dot_dot_run_id_in_a_delete_names_the_run_id() -> None:
    with fake_server() as (server, _):
        r = httpx.delete(f"{server.base_url}/api/v1/training_runs/%2e%2e/checkpoints/weights/a")
        assert r.status_code == 422 and "training run id" in r.json()["error"]


def test_a_checkpoint_cannot_make_the_server_load_a_model_it_does_not_serve() -> None:
    with fake_server() as (server, engine):
        model_id = create_model(server)
        saved = post(server, "save_weights", {"model_id": model_id, "path": "a", "seq_id": 1})
        path = wait_future(server, saved.json()["request_id"])["path"]
        engine.weights_info = lambda p: {"base_model": "someone/huge-model", "model_id": model_id}
        r = post(
            server,
            "create_sampling_session",
            {"session_id": "s", "sampling_session_seq_id": 0, "model_path": path},
        )
        assert (
            r.status_code == 422 and "does not serve" in r.text and "someone/huge-model" in r.text
        )
        prompt = {"chunks": [{"tokens": [1], "type": "encoded_text"}]}
        body = {"model_path": path, "prompt": prompt, "sampling_params": {}}
        failed = wait_future(server, post(server, "asample", body).json()["request_id"])
        assert "does not serve" in failed["error"]
        assert not any(name == "create_sampler" and p == path for name, p in engine.calls)


def test_the_checkpoint_listing_shows_only_this_servers_runs() -> None:
    with fake_server() as (server, engine):
        model_id = create_model(server)
        saved = post(server, "save_weights", {"model_id": model_id, "path": "mine", "seq_id": 1})
        wait_future(server, saved.json()["request_id"])
        # another project's run in the same state directory
        engine.checkpoints["tinker://other-run/weights/theirs"] = {
            "model_id": "other-run",
            "time": 0.0,
        }
        listed = httpx.get(f"{server.base_url}/api/v1/checkpoints").json()["checkpoints"]
        assert [c["tinker_path"] for c in listed] == [f"tinker://{model_id}/weights/mine"]
        by_id = httpx.get(f"{server.base_url}/api/v1/training_runs/other-run/checkpoints")
        assert by_id.status_code == 200
