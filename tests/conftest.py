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

import copy
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


# --- tokenizers with other chat templates, built from the tiny tokenizer (no download) ---

CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""SmolLM2's chat template (plain ChatML with a default system prompt)."""

LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' "
    "+ message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}"
)
"""The shape of Llama 3's chat template (header tokens, ``<|eot_id|>`` ends a turn)."""


@pytest.fixture(scope="session")
def chatml_tokenizer():
    """The tiny tokenizer with SmolLM2's ChatML template (eos ``<|im_end|>``)."""
    from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, get_tokenizer

    tok = copy.deepcopy(get_tokenizer(TINY_MODEL_NAME))
    tok.chat_template = CHATML_TEMPLATE
    tok.eos_token = "<|im_end|>"
    return tok


@pytest.fixture(scope="session")
def llama3_tokenizer():
    """The tiny tokenizer with Llama 3's special tokens and template (eos ``<|end_of_text|>``)."""
    from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, get_tokenizer

    tok = copy.deepcopy(get_tokenizer(TINY_MODEL_NAME))
    tok.add_special_tokens(
        {
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|end_of_text|>",
            "additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        }
    )
    tok.chat_template = LLAMA3_TEMPLATE
    return tok


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
