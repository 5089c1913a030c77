"""The loop's sampling phase: one batch of groups rolled out with the step's sampling client.

Example::

    # not run: needs a sampling client (a running backend)
    batch = await sample_batch(config, sampling_client, train.get_batch(step), salt=step)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.rl.config import Config
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import ClientSampler
from mint_envkit.rollouts.types import GroupRollout


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
