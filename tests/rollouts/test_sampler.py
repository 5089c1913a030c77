"""Weight snapshots (rollouts/sampler.py ``begin_snapshot``): a snapshot asked for before an
update holds the weights before it, even when the update is submitted before the snapshot
is ready; a client without the SDK's two halves says its snapshot is not placed yet."""

from __future__ import annotations

import pytest

from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts.sampler import begin_snapshot


async def _logprobs(client) -> list[float]:
    import tinker

    return list(
        await client.compute_logprobs_async(tinker.ModelInput.from_ints(list(range(3, 19))))
    )


async def _update(training) -> None:
    """One real update (submitted, not awaited): cross entropy on a fixed sequence."""
    import tinker

    tokens = list(range(3, 19))
    datum = tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=tokens[1:], dtype="int64", shape=[15]),
            "weights": tinker.TensorData(data=[1.0] * 15, dtype="float32", shape=[15]),
        },
    )
    await training.forward_backward_async([datum], "cross_entropy")
    return await training.optim_step_async(tinker.AdamParams(learning_rate=0.05))


@pytest.mark.integration
async def test_a_snapshot_begun_before_an_update_holds_the_weights_before_it(tiny_local_server):
    import mint

    service = mint.ServiceClient(base_url=tiny_local_server.base_url, api_key="sk-test")
    training = await service.create_lora_training_client_async(
        base_model=TINY_MODEL_NAME, rank=4, seed=0
    )
    before, placed = begin_snapshot(training)
    assert placed  # the pinned SDK: the save is numbered before begin_snapshot returns
    optim = await _update(training)  # submitted before the snapshot is ready
    after, _ = begin_snapshot(training)
    await optim
    base = await service.create_sampling_client_async(base_model=TINY_MODEL_NAME)
    # a fresh LoRA is the base model exactly; the update moves it
    assert await _logprobs(await before) == await _logprobs(base)
    assert await _logprobs(await after) != await _logprobs(base)


async def test_a_client_without_the_sdks_halves_gets_the_public_call_and_is_not_placed():
    class StandIn:
        def save_weights_and_get_sampling_client(self):
            return "client"

    task, placed = begin_snapshot(StandIn())
    assert placed is False  # the caller must await it before changing the weights
    assert await task == "client"
