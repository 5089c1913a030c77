"""Backend choice: one resolution of backend, endpoint and key; the embedded server."""

from __future__ import annotations

import pytest

from mint_envkit import BackendError, ConfigError
from mint_envkit.rollouts import backend
from mint_envkit.rollouts.backend import (
    BackendSettings,
    close_session,
    connect,
    local_api_key,
    resolve_connection,
    service_client,
    shared_local_backend,
)


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("MINT_API_KEY", "TINKER_API_KEY", "MINT_BASE_URL", "MINT_ENVKIT_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_local_without_a_url_starts_its_own_server(clean_env):
    connection = resolve_connection("auto")
    assert (connection.backend, connection.base_url) == ("local", None)
    assert connection.api_key == local_api_key()
    assert connection.describe() == "the embedded local backend (offline, no account)"


def test_local_with_a_url_uses_it(clean_env):
    connection = resolve_connection("local", "http://127.0.0.1:9")
    assert connection.base_url == "http://127.0.0.1:9"


def test_mint_uses_the_key_and_mint_base_url(clean_env):
    clean_env.setenv("MINT_API_KEY", "sk-test")
    clean_env.setenv("MINT_BASE_URL", "https://mint.example")
    connection = resolve_connection("auto")
    assert (connection.backend, connection.base_url) == ("mint", "https://mint.example")
    assert connection.api_key == "sk-test"
    assert connection.describe() == "MinT (https://mint.example)"


def test_an_explicit_url_wins_over_mint_base_url(clean_env):
    clean_env.setenv("MINT_BASE_URL", "https://mint.example")
    clean_env.setenv("TINKER_API_KEY", "sk-tinker")
    connection = resolve_connection("mint", "https://other.example")
    assert connection.base_url == "https://other.example" and connection.api_key == "sk-tinker"


async def test_mint_without_a_key_fails_before_any_network_call(clean_env):
    with pytest.raises(BackendError, match="MINT_API_KEY"):
        async with connect(BackendSettings(backend="mint")):
            pass


async def test_local_runs_inside_a_shared_block_use_its_server(clean_env, monkeypatch):
    import contextlib

    started = []

    @contextlib.asynccontextmanager
    async def fake_server(models, *, latency_ms=0.0, batch_invariant=False, threads=None):
        started.append((list(models), latency_ms, batch_invariant, threads))
        yield "http://127.0.0.1:7"

    monkeypatch.setattr(backend, "local_backend", fake_server)
    async with shared_local_backend(["m"], latency_ms=2.0, batch_invariant=True, threads=2) as url:
        assert resolve_connection("local").base_url == url
        assert resolve_connection("local", "http://x:1").base_url == "http://x:1"
    assert resolve_connection("local").base_url is None
    assert started == [(["m"], 2.0, True, 2)]


async def test_the_embedded_server_gets_the_runs_torch_threads(clean_env, tmp_path, monkeypatch):
    from mint_envkit.local import server as local_server

    made = []

    class FakeServer:
        base_url = "http://127.0.0.1:7"

        def __init__(self, **kwargs):
            made.append(kwargs)

        def start(self):
            pass

        def close(self):
            pass

    clean_env.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(local_server, "LocalServer", FakeServer)
    async with backend.local_backend(["m"], threads=3):
        pass
    async with backend.local_backend(["m"]):
        pass
    assert [m["num_threads"] for m in made] == [3, None]  # None: the engine's default
    assert BackendSettings(local_threads=2).local_threads == 2
    with pytest.raises(ConfigError, match="local_threads"):
        BackendSettings(local_threads=0)


async def test_a_read_only_state_dir_fails_before_the_server_starts(clean_env, tmp_path):
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state dir should be")
    clean_env.setenv("MINT_ENVKIT_STATE_DIR", str(blocker / "inner"))
    with pytest.raises(ConfigError, match="MINT_ENVKIT_STATE_DIR") as info:
        async with backend.local_backend(["mint-envkit/tiny-qwen3-small"]):
            pass
    assert str(blocker / "inner") in str(info.value)


async def test_an_embedded_server_the_loop_starts_requires_the_run_key(clean_env, tmp_path):
    import httpx

    clean_env.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    async with backend.local_backend(["mint-envkit/tiny-qwen3-small"]) as url:
        body = {"tags": [], "user_metadata": {}, "sdk_version": "0"}
        async with httpx.AsyncClient(base_url=url) as client:
            stranger = await client.post(
                "/api/v1/create_session", json=body, headers={"X-API-Key": "sk-guess"}
            )
            run = await client.post(
                "/api/v1/create_session", json=body, headers={"X-API-Key": local_api_key()}
            )
    assert stranger.status_code in (401, 403), stranger.text
    assert run.status_code == 200, run.text


class _Holder:
    def __init__(self, fails: bool = False) -> None:
        self.closed, self.fails = 0, fails

    def close(self) -> None:
        self.closed += 1
        if self.fails:
            raise RuntimeError("already closed")


def test_close_session_closes_the_holder_and_never_raises():
    service = type("Service", (), {})()
    service.holder = _Holder()
    close_session(service)
    assert service.holder.closed == 1
    service.holder = _Holder(fails=True)
    close_session(service)  # swallowed: closing is best effort at the end of a run
    close_session(object())  # no holder: nothing to do


async def test_service_client_closes_its_session_also_after_an_error(clean_env, monkeypatch):
    import mint

    made = []

    class FakeService:
        def __init__(self, *, base_url, api_key) -> None:
            self.holder, self.base_url, self.api_key = _Holder(), base_url, api_key
            made.append(self)

    monkeypatch.setattr(mint, "ServiceClient", FakeService)
    connection = resolve_connection("local", "http://127.0.0.1:9")
    with pytest.raises(RuntimeError, match="boom"):
        async with service_client(connection) as service:
            assert (service.base_url, service.api_key) == ("http://127.0.0.1:9", local_api_key())
            assert service.holder.closed == 0
            raise RuntimeError("boom")
    assert [s.holder.closed for s in made] == [1]


def test_an_idle_machine_gives_a_real_model_its_cores_and_a_tiny_one_a_thread(monkeypatch):
    import os

    from mint_envkit.rollouts import idle_machine_threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert idle_machine_threads("mint-envkit/smollm2-135m-instruct") == 4  # at most 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert idle_machine_threads("/models/my-model") == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert idle_machine_threads("Qwen/Qwen3-0.6B") == 2
    assert idle_machine_threads("mint-envkit/tiny-qwen3") == 1
