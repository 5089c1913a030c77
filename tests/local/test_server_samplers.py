"""Unnamed sampler snapshots: kept up to a cap, then released loudly."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"


def test_oldest_unnamed_sampler_is_released_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TINKER_TELEMETRY", "0")
    import mint

    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[MODEL], state_dir=tmp_path, max_unnamed_samplers=2) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        training = service.create_lora_training_client(base_model=MODEL, rank=4, seed=0)
        clients = [training.save_weights_and_get_sampling_client() for _ in range(3)]
        prompt = mint.ModelInput.from_ints([5, 6, 7])
        params = mint.SamplingParams(max_tokens=2, seed=0)
        for client in clients[1:]:  # the two newest still sample
            assert len(client.sample(prompt, 1, params).result().sequences) == 1
        with pytest.raises(Exception, match="was released") as info:
            clients[0].sample(prompt, 1, params).result()
        assert "--max-unnamed-samplers" in str(info.value)
        named = training.save_weights_for_sampler("keep").result()
        for _ in range(3):  # named weights never count against the cap
            training.save_weights_and_get_sampling_client()
        kept = service.create_sampling_client(model_path=named.path)
        assert len(kept.sample(prompt, 1, params).result().sequences) == 1


def test_the_cap_must_be_positive():
    from mint_envkit.errors import ConfigError
    from mint_envkit.local.http.state import Backend

    with pytest.raises(ConfigError, match="max_unnamed_samplers"):
        Backend(models=[MODEL], max_unnamed_samplers=0, preload=False)


async def test_concurrent_sample_requests_share_engine_batches(tmp_path, monkeypatch):
    """One request per env (tinker-cookbook's way) is batched on the server, results unchanged."""
    import asyncio

    import httpx

    monkeypatch.setenv("TINKER_TELEMETRY", "0")
    import mint

    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[MODEL], state_dir=tmp_path) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        client = await service.create_sampling_client_async(base_model=MODEL)
        prompts = [[5, 6, 7 + i] for i in range(8)]

        def params(i: int):
            return mint.SamplingParams(max_tokens=4, seed=100 + i)

        together = await asyncio.gather(
            *(
                client.sample_async(mint.ModelInput.from_ints(p), 1, params(i))
                for i, p in enumerate(prompts)
            )
        )
        alone = [
            await client.sample_async(mint.ModelInput.from_ints(p), 1, params(i))
            for i, p in enumerate(prompts)
        ]
        stats = httpx.get(f"{server.base_url}/api/v1/mint_envkit/stats").json()
    assert [r.sequences[0].tokens for r in together] == [r.sequences[0].tokens for r in alone]
    assert max(stats["sample_batches"]) > 1  # some engine batch served several requests
    assert sum(stats["sample_batches"]) == 16
