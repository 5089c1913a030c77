"""Session-wide test settings, shared by every test under ``tests/``.

- ``MINT_ENVKIT_CACHE`` points at a fresh temporary directory for the whole
  session, so tests never read or write ``~/.cache`` and the tiny tokenizer
  is built locally, inside the test suite (subprocesses inherit it).
- ``TINKER_TELEMETRY=0``: no telemetry from the SDK.

Set in ``pytest_configure``, before any test module is imported.

Envs shared by several test files live in ``tests/shared_envs.py`` (``from shared_envs
import ArithmeticEnv``): this directory is on ``sys.path`` while pytest runs, since it
holds this conftest and has no ``__init__.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_SAVED: dict[str, str | None] = {}
_CACHE: list[str] = []


def pytest_configure(config):
    cache = tempfile.mkdtemp(prefix="mint-envkit-test-cache-")
    _CACHE.append(cache)
    for name, value in (("MINT_ENVKIT_CACHE", cache), ("TINKER_TELEMETRY", "0")):
        _SAVED[name] = os.environ.get(name)
        os.environ[name] = value


def pytest_unconfigure(config):
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    for cache in _CACHE:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def tiny_local_server(tmp_path_factory):
    """An embedded server on the tiny model (``mint-envkit/tiny-qwen3``, loaded), per test module.

    For the test modules that sample from the real tiny model through the SDK
    (evaluation, the eval command): the tests of a module share it, so the model loads
    once per module; it stops at the module's end (other modules check that no server
    thread outlives them). Its state directory is temporary. Pass
    ``base_url=tiny_local_server.base_url`` (and ``backend="local"``).

    Example::

        def test_x(tiny_local_server):
            await evaluate(env, model_name=TINY_MODEL_NAME, base_url=tiny_local_server.base_url)
    """
    from mint_envkit import TINY_MODEL_NAME
    from mint_envkit.local.server import LocalServer

    state = tmp_path_factory.mktemp("tiny-server-state")
    with LocalServer(models=[TINY_MODEL_NAME], state_dir=str(state)) as server:
        assert server.preload_errors(timeout=300) == {}
        yield server
