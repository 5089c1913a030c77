"""Sampling a batch: the SDK-backed rollout sampler and the loop's sampling phase.

Example::

    # not run: needs a sampling client (a running backend)
    sampler = ClientSampler(sampling_client, max_tokens=32, temperature=0.7, seed=0, salt=step)
    rollouts = await rollout_groups(groups, sampler)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.rl.config import Config
from mint_envkit.rl.rollouts import SampleRequest, rollout_groups
from mint_envkit.rl.types import GroupRollout, SampledTokens


def _seed(*parts: Any) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class ClientSampler:
    """A rollout sampler backed by a ``mint`` sampling client.

    Each request gets its own seed, derived from ``seed``, ``salt`` (the step),
    the request count and the prompt, so a run is reproducible. ``calls``
    counts the sample requests sent.

    Example::

        # not run: needs a sampling client (a running backend)
        sampler = ClientSampler(sampling_client, max_tokens=32, temperature=0.7, seed=0, salt=step)
        rollouts = await rollout_groups(groups, sampler)
    """

    def __init__(
        self,
        client: Any,
        *,
        max_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        seed: int = 0,
        salt: int = 0,
    ) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.seed = seed
        self.salt = salt
        self.calls = 0

    @classmethod
    def for_config(cls, client: Any, config: Config, salt: int) -> ClientSampler:
        """A sampler with ``config``'s sampling fields and seed.

        Example::

            # not run: needs a sampling client (a running backend)
            sampler = ClientSampler.for_config(sampling_client, config, salt=step)
        """
        return cls(
            client,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            seed=config.sampling_seed,
            salt=salt,
        )

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        import tinker

        self.calls += 1
        params = tinker.SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop=list(request.stop),
            seed=_seed(self.seed, self.salt, self.calls, request.prompt[-8:]),
        )
        response = await self.client.sample_async(
            prompt=tinker.ModelInput.from_ints(request.prompt),
            num_samples=request.num_samples,
            sampling_params=params,
        )
        return [
            SampledTokens(
                tokens=list(seq.tokens),
                logprobs=list(seq.logprobs or [0.0] * len(seq.tokens)),
                stop_reason=str(seq.stop_reason),
            )
            for seq in response.sequences
        ]


@attrs.frozen
class SampledBatch:
    """What sampling one batch gave: a rollout per group, and the sample requests sent.

    Example::

        # not run: needs a sampling client (a running backend)
        batch = await sample_batch(config, sampling_client, groups, salt=step)
        batch.requests, len(batch.rollouts)  # (4, 4)
    """

    rollouts: Sequence[GroupRollout]
    requests: int


async def sample_batch(
    config: Config, client: Any, groups: Sequence[Any], *, salt: int
) -> SampledBatch:
    """Roll out ``groups`` with ``client`` under ``config``'s sampling and concurrency settings.

    ``salt`` seeds the batch (the step; evaluation uses negative salts).

    Example::

        # not run: needs a sampling client (a running backend)
        batch = await sample_batch(config, sampling_client, train.get_batch(step), salt=step)
    """
    sampler = ClientSampler.for_config(client, config, salt=salt)
    rollouts = await rollout_groups(
        groups,
        sampler,
        max_concurrent=config.max_concurrent_groups,
        fail_fast=config.fail_fast,
        timeout_s=config.rollout_timeout_s,
    )
    return SampledBatch(rollouts=rollouts, requests=sampler.calls)


async def sampler_snapshot(training: Any) -> Any:
    """A sampling client of ``training``'s current weights (an unnamed snapshot).

    The SDK's ``save_weights_and_get_sampling_client`` waits on a future, so it runs
    in a daemon thread of its own, not in the event loop's default executor: when the
    backend dies mid-call the run fails on time (the health watchdog) and the process
    can exit, instead of ``asyncio.run`` waiting for that thread while the SDK retries.

    Example::

        # not run: needs a training client
        client = await sampler_snapshot(training_client)
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        result, error = None, None
        try:
            result = training.save_weights_and_get_sampling_client()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        # RuntimeError: the loop has closed, nobody waits for this snapshot
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="mint-envkit-sampler-snapshot", daemon=True).start()
    return await done
