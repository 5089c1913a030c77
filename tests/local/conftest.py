"""Shared fixtures of the local-backend tests: a real server and an SDK client on it, and a
small tied Llama model built here (no download).

Both are module-scoped: the tests of one module share one server (the tiny
test model, a temporary state directory). The fake-engine server and the HTTP
helpers are in ``server_helpers.py`` beside this file.

Example::

    def test_x(service_client):
        service_client.create_lora_training_client(base_model=SMALL, rank=4)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from server_helpers import SMALL

from mint_envkit.local.server import LocalServer
from sdk_sessions import record_service_clients
from tiny_llama import tiny_llama


@pytest.fixture(autouse=True)
def _close_sdk_sessions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close the SDK sessions a server test opened and left open, when the test ends.

    The SDK heartbeats each ``ServiceClient``'s session for the life of the process, so a
    test that drives a server it then stops made the suite warn "Session heartbeat failed"
    minutes later. Product code closes its own sessions (tested in tests/rl and tests/cli);
    here the tests' own clients are closed for them.
    """
    made = record_service_clients(monkeypatch)
    yield
    for client in made:
        client.holder.close()


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """A LocalServer on the real engine and the tiny test model (loaded), shared by a test module.

    The model is loaded before the first test: on a busy machine loading can
    take longer than the server waits for the engine on a direct endpoint
    (``create_sampling_session`` then answers with a pending id, not an error).

    Example::

        def test_x(real_server):
            httpx.get(real_server.base_url + "/api/v1/healthz")
    """
    state = tmp_path_factory.mktemp("state")
    with LocalServer(models=[SMALL], state_dir=str(state)) as server:
        assert server.preload_errors(timeout=300) == {}
        yield server


@pytest.fixture(scope="module")
def service_client(real_server: LocalServer) -> Iterator[Any]:
    """``mint.ServiceClient`` on ``real_server`` with an ``sk-`` key (base_url always explicit).

    Example::

        def test_x(service_client):
            service_client.create_lora_training_client(base_model=SMALL, rank=4)
    """
    import mint

    client = mint.ServiceClient(base_url=real_server.base_url, api_key="sk-test")
    yield client
    client.holder.close()  # stop its heartbeat before the server goes away


@pytest.fixture(scope="session")
def tied_model_dir(tmp_path_factory, chatml_tokenizer):
    """A tiny Llama with tied input/output embeddings and a ChatML tokenizer, as a HF directory.

    Like SmolLM2 (Llama architecture, ``tie_word_embeddings=True``, ChatML), at
    hidden 64 and 2 layers over the tiny 2048-token tokenizer; weights from seed 0.
    """
    tok = chatml_tokenizer
    model = tiny_llama(
        vocab_size=len(tok),
        tied=True,
        bos=tok.convert_tokens_to_ids("<|im_start|>"),
        eos=tok.eos_token_id,
        pad=tok.eos_token_id,
    )
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 0.125)
    target = tmp_path_factory.mktemp("models") / "tied" / "tiny-llama-tied"
    model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target
