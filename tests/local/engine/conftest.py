"""Fixtures of the engine tests: one Engine shared by all of them (as in one module before)."""

from __future__ import annotations

import pytest

from mint_envkit.local.engine import Engine


@pytest.fixture(scope="session")
def engine(tmp_path_factory) -> Engine:
    # One thread: on a shared, loaded 2-core machine two OpenMP threads can be 10x slower.
    return Engine(state_dir=tmp_path_factory.mktemp("state"), num_threads=1)
