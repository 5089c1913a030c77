"""Fixtures of the rollout-layer tests: rollouts built by hand."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mint_envkit.rollouts.types import GroupRollout
from shared_envs import hand_made_rollout


@pytest.fixture
def make_group() -> Callable[..., GroupRollout]:
    """``make_group(index, rewards, error=None, correct=None, tags=())``: one group's rollout."""
    return hand_made_rollout
