"""Where the embedded backend keeps checkpoints by default."""

from __future__ import annotations

from pathlib import Path

from mint_envkit.local.state_dir import resolved_state_dir


def test_the_default_state_dir_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    assert resolved_state_dir() == (tmp_path / "state").resolve()
    monkeypatch.delenv("MINT_ENVKIT_STATE_DIR")
    monkeypatch.setenv("MINT_ENVKIT_CACHE", str(tmp_path / "cache"))
    assert resolved_state_dir() == (tmp_path / "cache" / "state").resolve()
    assert resolved_state_dir(tmp_path / "given") == (tmp_path / "given").resolve()
