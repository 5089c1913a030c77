"""``scaffold()``: an env package written with its golden transcripts, or nothing at all."""

from __future__ import annotations

import sys

import pytest

import mint_envkit.replay.scaffold as scaffolding
from mint_envkit.errors import ConfigError


def test_a_failed_recording_leaves_nothing_behind(tmp_path, monkeypatch):
    async def broken(builder):
        raise ConfigError("recording failed")

    monkeypatch.setattr(scaffolding, "golden_records", broken)

    with pytest.raises(ConfigError, match="recording failed"):
        scaffolding.scaffold("units-demo", str(tmp_path / "out"))
    assert list(tmp_path.iterdir()) == []
    assert not any(name.startswith("units_demo") for name in sys.modules)
