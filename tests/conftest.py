"""Session-wide test settings, shared by every test under ``tests/``.

- ``MINT_ENVKIT_CACHE`` points at a fresh temporary directory for the whole
  session, so tests never read or write ``~/.cache`` and the tiny tokenizer
  is built locally, inside the test suite (subprocesses inherit it).
- ``TINKER_TELEMETRY=0``: no telemetry from the SDK.
- ``MKL_CBWR=AVX2,STRICT`` (unless already set): MKL's conditional numerical
  reproducibility, so the tests that compare results bit for bit (batch invariance,
  a seeded run reproduced) give one verdict on every CPU. Without it MKL picks its
  kernels by instruction set, and a row of a matrix product rounds differently by the
  number of rows beside it on some sets (measured in docs/architecture.md, "Numerics
  in the tests"). It must be set before MKL initialises, so before torch is imported:
  this module is imported before any test module, and it refuses to run when torch is
  already loaded.
- An SDK session a test opened ends with the test: the SDK keeps a heartbeat for each
  ``ServiceClient`` until it is closed, and one left open warns every 10 s for the rest
  of the worker's life that its (stopped) server does not answer.
- A skip is a decision: the session fails when a test skipped for a reason that is not
  on :data:`ALLOWED_SKIPS` (a missing Chromium or extra would otherwise pass as green).

Set at import and in ``pytest_configure``, before any test module is imported.

Envs shared by several test files live in ``tests/shared_envs.py`` (``from shared_envs
import ArithmeticEnv``): this directory is on ``sys.path`` while pytest runs, since it
holds this conftest and has no ``__init__.py``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import sys
import tempfile
import weakref

import pytest

MKL_PIN = "AVX2,STRICT"
"""MKL's reproducible code path for the suite: on AVX2 and AVX-512 CPUs a row of a
product is then the same whatever the number of rows (the engine's ``CPU_MIN_ROWS``
covers CPUs limited to SSE4.2, where MKL falls back to its own kernels)."""

if "torch" in sys.modules and "MKL_CBWR" not in os.environ:  # pragma: no cover
    raise RuntimeError(
        "torch was imported before tests/conftest.py could set MKL_CBWR; run the suite "
        "with `python -m pytest` from the repo root, or export MKL_CBWR=AVX2,STRICT"
    )
os.environ.setdefault("MKL_CBWR", MKL_PIN)

ALLOWED_SKIPS: tuple[tuple[str, str, str], ...] = (
    (
        "tests/local/engine/test_engine_cuda.py",
        "needs a CUDA device",
        "the GPU path runs only where torch sees a CUDA device; CI machines have none",
    ),
)
"""(test file, text in the skip reason, why that skip is acceptable). Any other skip
fails the session: install what the test needs instead (``bash scripts/test.sh`` installs
every extra; ``.ci/run`` installs Chromium)."""

_SAVED: dict[str, str | None] = {}
_CACHE: list[str] = []
_UNEXPECTED_SKIPS: list[str] = []


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


def skip_is_allowed(nodeid: str, reason: str) -> bool:
    """Whether a skip of ``nodeid`` for ``reason`` is on :data:`ALLOWED_SKIPS`.

    Example::

        skip_is_allowed("tests/local/engine/test_engine_cuda.py::t", "needs a CUDA device")
    """
    return any(nodeid.startswith(path) and text in reason for path, text, _why in ALLOWED_SKIPS)


def pytest_runtest_logreport(report):
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report)
    if not skip_is_allowed(report.nodeid, reason):
        _UNEXPECTED_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if _UNEXPECTED_SKIPS and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _UNEXPECTED_SKIPS:
        terminalreporter.section("skips that are not on tests/conftest.py's ALLOWED_SKIPS")
        for line in _UNEXPECTED_SKIPS:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            "the session fails: install what these tests need (bash scripts/test.sh; "
            "apt-get install chromium), or add the skip to ALLOWED_SKIPS with its reason"
        )


_SDK_HOLDERS: weakref.WeakSet = weakref.WeakSet()
"""The SDK's client holders (one per ``ServiceClient``) made since the SDK was imported."""


def _watch_sdk_holders() -> bool:
    """Once the SDK is imported: record every client holder it makes in :data:`_SDK_HOLDERS`.

    True when the SDK was imported already. The first time it is, the holders made
    before (in the test that imported it) are found once among the live objects.
    """
    module = sys.modules.get("tinker.lib.internal_client_holder")
    holder = getattr(module, "InternalClientHolder", None)
    if holder is None:
        return False
    if getattr(holder, "_watched_by_the_suite", False):
        return True
    import gc

    # type(), not isinstance(): an ABC's isinstance reads every object's __class__,
    # which warns on torch's deprecated module attributes
    _SDK_HOLDERS.update(obj for obj in gc.get_objects() if issubclass(type(obj), holder))
    init = holder.__init__

    @functools.wraps(init)
    def watched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _SDK_HOLDERS.add(self)

    holder.__init__ = watched
    holder._watched_by_the_suite = True
    return True


@pytest.fixture(autouse=True)
def _sdk_sessions_end_with_their_test():
    """Close the SDK sessions the test opened and left open (fixtures of a wider scope
    are set up before this one, so theirs stay open for the tests that share them)."""
    before = set(_SDK_HOLDERS) if _watch_sdk_holders() else set()
    yield
    _watch_sdk_holders()
    for holder in [h for h in _SDK_HOLDERS if h not in before]:
        _SDK_HOLDERS.discard(holder)
        with contextlib.suppress(Exception):
            holder.close()


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
    from mint_envkit.local.server import LocalServer
    from mint_envkit.rendering import TINY_MODEL_NAME

    state = tmp_path_factory.mktemp("tiny-server-state")
    with LocalServer(models=[TINY_MODEL_NAME], state_dir=str(state)) as server:
        assert server.preload_errors(timeout=300) == {}
        yield server
