"""Fixtures of the RL tests: rollouts built by hand, and a minimal training config."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv, first_number
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts.types import GroupRollout
from shared_envs import hand_made_rollout


@pytest.fixture
def make_group() -> Callable[..., GroupRollout]:
    """``make_group(index, rewards, error=None, correct=None, tags=())``: one group's rollout.

    Each episode is one transition: prompt ``[1, 2, 3]``, a two-token reply
    with logprobs ``[-0.5, -0.25]``, the given reward.
    """
    return hand_made_rollout


class _AddEnv(SingleTurnEnv):
    parser = first_number


@pytest.fixture
def phase_config(tmp_path) -> Config:
    """A small config for the phase tests (no backend is started)."""
    builder = DatasetBuilder(
        env=_AddEnv,
        problems=[{"question": "What is 1 + 1?", "answer": "2"}],
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    return Config(
        dataset_builder=builder,
        model_name=TINY_MODEL_NAME,
        log_path=tmp_path / "run",
        learning_rate=1e-3,
        save_every=2,
    )


SMALL_MODEL = "mint-envkit/tiny-qwen3-small"
"""The model of the loop tests that train through the embedded backend."""


@pytest.fixture(scope="module")
def server():
    """An embedded server on the small tiny model, one per test module (the loop tests).

    Example::

        async def test_x(tmp_path, server):
            await main(Config(..., base_url=server.base_url, backend="local"))
    """
    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[SMALL_MODEL]) as running:
        yield running
