"""``mint-envkit serve``: its options reach the server, its help and startup line say the truth.

No server starts here: a stand-in replaces LocalServer.
"""

from __future__ import annotations

import pytest

from mint_envkit.cli import main, serve
from mint_envkit.errors import ConfigError

SEEN: dict = {}


class _Refused:
    """Stands in for LocalServer: records its options in SEEN and refuses to start."""

    def __init__(self, models, **options) -> None:
        SEEN.clear()
        SEEN.update(models=models, **options)

    def start(self) -> None:
        raise ConfigError("not started in this test")


class _Started(_Refused):
    """Starts, announces itself, and has stopped at once (no thread)."""

    base_url = "http://127.0.0.1:1"
    _thread = None

    def start(self) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.fixture
def restore_root_logger():
    """serve calls logging.basicConfig; keep the root logger as it was."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.mark.parametrize(("argv", "expected"), [([], False), (["--batch-invariant"], True)])
def test_batch_invariant_reaches_the_server(
    monkeypatch, capsys, restore_root_logger, argv, expected
):
    monkeypatch.setattr(serve, "LocalServer", _Refused)
    assert main(["serve", "--port", "0", *argv]) == 2
    assert SEEN["batch_invariant"] is expected
    assert "not started in this test" in capsys.readouterr().err


def test_help_names_every_built_in_model_and_the_real_thread_default(capsys):
    assert main(["serve", "--help"]) == 0
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines at hyphens
    for name in ("mint-envkit/tiny-qwen3", "mint-envkit/tiny-qwen3-small", "smollm2-135m-instruct"):
        assert name in text
    assert "torchCPUthreads(default:$MINT_ENVKIT_NUM_THREADS,else1)" in text


def test_the_docs_table_gives_the_same_thread_default():
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "local-backend.md").read_text()
    assert "| `--threads N` | `MINT_ENVKIT_NUM_THREADS`, else 1 |" in docs


def test_startup_line_says_the_default_state_dir_is_shared(
    monkeypatch, capsys, restore_root_logger, tmp_path
):
    monkeypatch.setattr(serve, "LocalServer", _Started)
    monkeypatch.delenv("MINT_ENVKIT_STATE_DIR", raising=False)
    monkeypatch.setenv("MINT_ENVKIT_CACHE", str(tmp_path / "cache"))
    assert main(["serve", "--port", "0", "--no-preload"]) == 0
    line = capsys.readouterr().out
    assert f"state dir {(tmp_path / 'cache' / 'state').resolve()} (the default: shared" in line
    assert "--state-dir or MINT_ENVKIT_STATE_DIR gives one its own" in line
    assert main(["serve", "--port", "0", "--no-preload", "--state-dir", str(tmp_path / "s")]) == 0
    line = capsys.readouterr().out
    assert f"state dir {tmp_path / 's'})." in line and "shared" not in line
