"""``mint-envkit checkpoints``: list and delete through the SDK REST routes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "local"))  # server_helpers

from server_helpers import fake_server

from mint_envkit.cli import main
from mint_envkit.cli.checkpoints import default_state_dir


def saved(engine, run: str, name: str, kind: str = "weights") -> str:
    path = f"tinker://{run}/{kind}/{name}"
    engine.models.setdefault(run, {"base_model": "m", "lora_rank": 4})
    engine.checkpoints[path] = {"model_id": run, "time": 1_700_000_000.0 + len(engine.checkpoints)}
    return path


def test_list_and_delete_against_a_running_server(capsys) -> None:
    with fake_server(list_all_checkpoints=True) as (server, engine):
        a1 = saved(engine, "run-a", "step-1")
        a2 = saved(engine, "run-a", "step-2", kind="sampler_weights")
        b1 = saved(engine, "run-b", "step-1")
        url = ["--base-url", server.base_url]

        assert main(["checkpoints", "list", *url]) == 0
        out = capsys.readouterr().out
        assert all(path in out for path in (a1, a2, b1)) and "3 checkpoint(s)" in out

        assert main(["checkpoints", "list", "--run", "run-a", "--json", *url]) == 0
        records = json.loads(capsys.readouterr().out)
        assert sorted(r["tinker_path"] for r in records) == sorted([a1, a2])

        assert main(["checkpoints", "delete", b1, *url]) == 0
        assert b1 not in engine.checkpoints

        assert main(["checkpoints", "delete", "--run", "run-a", *url]) == 1  # needs --yes
        assert "add --yes" in capsys.readouterr().out and a1 in engine.checkpoints
        assert main(["checkpoints", "delete", "--run", "run-a", "--yes", *url]) == 0
        assert engine.checkpoints == {}


def test_bad_delete_requests(capsys) -> None:
    with fake_server() as (server, _engine):
        url = ["--base-url", server.base_url]
        assert main(["checkpoints", "delete", *url]) == 2
        assert "nothing to delete" in capsys.readouterr().err
        assert main(["checkpoints", "delete", "weights/step-1", *url]) == 2
        assert "not a checkpoint path" in capsys.readouterr().err
        assert main(["checkpoints", "delete", "tinker://nope/weights/x", *url]) == 2
        assert "nope" in capsys.readouterr().err
    assert main(["checkpoints", "list", "--base-url", "http://x", "--state-dir", "/tmp"]) == 2


def test_default_state_dir_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    assert default_state_dir() == (tmp_path / "state").resolve()
    monkeypatch.delenv("MINT_ENVKIT_STATE_DIR")
    monkeypatch.setenv("MINT_ENVKIT_CACHE", str(tmp_path / "cache"))
    assert default_state_dir() == (tmp_path / "cache" / "state").resolve()


@pytest.mark.integration
def test_local_state_dir_through_an_embedded_server(monkeypatch, tmp_path: Path, capsys) -> None:
    state = tmp_path / "state"
    for name in ("step-1", "step-2"):
        folder = state / "run-x" / "weights" / name
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text("{}")
        (folder / "adapter.bin").write_bytes(b"\0" * 2048)
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(state))
    assert main(["checkpoints", "list"]) == 0
    out = capsys.readouterr().out
    assert f"checkpoints in {state.resolve()}" in out
    assert "tinker://run-x/weights/step-1" in out and "2 checkpoint(s)" in out
    assert main(["checkpoints", "delete", "tinker://run-x/weights/step-1"]) == 0
    assert not (state / "run-x" / "weights" / "step-1").exists()
    assert (state / "run-x" / "weights" / "step-2" / "meta.json").exists()
