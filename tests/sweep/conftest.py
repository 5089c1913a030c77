"""Fixtures of the sweep tests: a minimal dataset builder and a Config factory."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from mint_envkit.rl.config import Config


@attrs.frozen
class Builder:
    """A minimal dataset builder: what Config and the sweep need from one."""

    group_size: int = 2
    batch_size: int = 4
    seed: int = 0

    def describe(self) -> dict[str, int]:
        return {"group_size": self.group_size, "batch_size": self.batch_size, "seed": self.seed}


def _make_config(**fields) -> Config:
    fields.setdefault("dataset_builder", Builder())
    fields.setdefault("model_name", "tiny-model")
    fields.setdefault("log_path", "unused")
    return Config(**fields)


@pytest.fixture
def make_config() -> Callable[..., Config]:
    """``make_config(**fields)``: a Config over :class:`Builder`; ``fields`` override."""
    return _make_config
