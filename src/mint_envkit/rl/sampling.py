"""The loop's sampling phase: one batch of groups rolled out with the step's sampling client.

Example::

    # not run: needs a sampling client (a running backend)
    batch = await sample_batch(config, sampling_client, train.get_batch(step), salt=step)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.rl.config import Config
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import ClientSampler
from mint_envkit.rollouts.types import GroupRollout

logger = logging.getLogger(__name__)


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
    settings = config.sampling
    sampler = ClientSampler.from_settings(client, settings, salt=salt)
    rollouts = await rollout_groups(
        groups,
        sampler,
        max_concurrent=settings.max_concurrent_groups,
        fail_fast=settings.fail_fast,
        timeout_s=settings.rollout_timeout_s,
    )
    return SampledBatch(rollouts=rollouts, requests=sampler.calls)


def preload_renderers(*datasets: Any) -> list[Any]:
    """Build the renderers the first batch of each dataset renders with; those renderers.

    A renderer loads its tokenizer (and ``transformers``) the first time a
    group asks for it, about a second in a fresh process. The loop calls this
    in a thread while it waits for the service to open its training client, so
    that second is not spent inside the first step. ``None`` or empty datasets
    and groups without a ``renderer()`` (a cookbook-style group builder) are
    skipped; an error is logged and left to the first rollout, which reports it
    as it always has.

    Example::

        from mint_envkit import DatasetBuilder, SingleTurnEnv

        class Echo(SingleTurnEnv):
            def score(self, message):
                return 0.0

        builder = DatasetBuilder(env=Echo, problems=[{"question": "hi", "answer": "hi"}],
                                 batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
        import asyncio
        train, test = asyncio.run(builder())
        preload_renderers(train, test)  # [Renderer(name='qwen3', ...)]: one for both
    """
    built: dict[int, Any] = {}
    for data in datasets:
        try:
            if data is None or len(data) == 0:
                continue
            for group in data.get_batch(0):
                renderer = getattr(group, "renderer", None)
                if callable(renderer):
                    made = renderer()
                    built.setdefault(id(made), made)
        except Exception as err:  # the first rollout reports it, with its group
            logger.debug("preloading a renderer failed (%s: %s)", type(err).__name__, err)
    return list(built.values())
