"""``mint-envkit checkpoints``: list and delete through the SDK REST routes.

The checkpoints are the ones the real engine saves (``save_state`` and
``save_weights_for_sampler`` through the ``mint`` SDK), on one embedded server
for the module that, like one the training loop starts, requires
``local_api_key()``: the CLI must send that key to a loopback ``--base-url``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from mint_envkit.cli import main
from mint_envkit.rollouts.backend import local_api_key

MODEL = "mint-envkit/tiny-qwen3-small"
RECORD_KEYS = {"tinker_path", "checkpoint_type", "time", "size_bytes", "log_dir"}
TYPES = {"weights": "training", "sampler_weights": "sampler"}  # folder -> checkpoint_type


@attrs.frozen
class Served:
    base_url: str
    state_dir: Path
    service: Any  # mint.ServiceClient


@attrs.frozen
class SavedRun:
    """One training run with a training checkpoint and a sampler checkpoint, both ``step-1``."""

    run_id: str
    training: str  # tinker://<run_id>/weights/step-1
    sampler: str  # tinker://<run_id>/sampler_weights/step-1
    saved_after: float  # time.time() before the saves


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real LocalServer (tiny model, loaded) that lists every run and requires the local key."""
    import mint

    from mint_envkit.local.server import LocalServer

    state = tmp_path_factory.mktemp("state")
    with LocalServer(
        models=[MODEL], state_dir=str(state), api_key=local_api_key(), list_all_checkpoints=True
    ) as server:
        assert server.preload_errors(timeout=300) == {}
        service = mint.ServiceClient(base_url=server.base_url, api_key=local_api_key())
        try:
            yield Served(server.base_url, state, service)
        finally:
            service.holder.close()  # stop its heartbeat before the server goes away


@pytest.fixture
def url(served: Served, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``--base-url`` of the module's server; no MINT_API_KEY, so the CLI sends the local key."""
    monkeypatch.delenv("MINT_API_KEY", raising=False)
    return ["--base-url", served.base_url]


def save_run(served: Served) -> SavedRun:
    """A new LoRA run on the real engine, saved once with each kind of checkpoint."""
    before = time.time()
    training = served.service.create_lora_training_client(base_model=MODEL, rank=4, seed=0)
    state = training.save_state("step-1").result().path
    sampler = training.save_weights_for_sampler("step-1").result().path
    run_id = training.model_id
    assert (state, sampler) == (
        f"tinker://{run_id}/weights/step-1",
        f"tinker://{run_id}/sampler_weights/step-1",
    )
    return SavedRun(run_id, state, sampler, before)


def folder(served: Served, path: str) -> Path:
    """The state-dir folder of ``tinker://<run>/<kind>/<name>``."""
    return served.state_dir / path.removeprefix("tinker://")


def listed(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The records of ``checkpoints list --json`` with ``args``."""
    assert main(["checkpoints", "list", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def paths(records: list[dict[str, Any]]) -> list[str]:
    return sorted(r["tinker_path"] for r in records)


@pytest.mark.integration
def test_list_shows_the_checkpoints_the_engine_saved(served, url, capsys) -> None:
    a, b = save_run(served), save_run(served)
    saved_before = time.time()

    everything = listed(url, capsys)
    ours = [r for r in everything if r["tinker_path"].split("/")[2] in (a.run_id, b.run_id)]
    assert paths(ours) == sorted([a.training, a.sampler, b.training, b.sampler])
    for record in ours:
        assert set(record) == RECORD_KEYS
        kind = record["tinker_path"].split("/")[3]
        assert record["checkpoint_type"] == TYPES[kind]
        # the engine writes an aware ISO time: when meta.json was written
        when = datetime.fromisoformat(record["time"])
        assert when.utcoffset() == timedelta(0)
        assert a.saved_after - 2 <= when.timestamp() <= saved_before + 2
        on_disk = folder(served, record["tinker_path"])
        assert (on_disk / "meta.json").is_file()
        files = [f for f in on_disk.rglob("*") if f.is_file()]
        assert record["size_bytes"] == sum(f.stat().st_size for f in files) > 1000

    assert main(["checkpoints", "list", *url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"checkpoints in {served.base_url}:"
    for record in ours:  # its path, its type and its time as the engine recorded it
        (line,) = [x for x in lines if x.split()[:1] == [record["tinker_path"]]]
        when = datetime.fromisoformat(record["time"]).strftime("%Y-%m-%d %H:%M:%S")
        assert line.split()[1:4] == [record["checkpoint_type"], *when.split()]
        assert line.endswith(" KB")  # ~76 KB each, shown in KB
    runs = {r["tinker_path"].split("/")[2] for r in everything}
    assert lines[1 + len(everything)] == "log directories:"
    assert len(lines) == 1 + len(everything) + 1 + len(runs) + 1
    assert lines[-1].startswith(f"{len(everything)} checkpoint(s), ")

    assert paths(listed(["--run", a.run_id, *url], capsys)) == sorted([a.training, a.sampler])


@pytest.mark.integration
def test_delete_one_checkpoint_then_a_whole_run(served, url, capsys) -> None:
    a, b = save_run(served), save_run(served)

    assert main(["checkpoints", "delete", a.training, *url]) == 0
    out = capsys.readouterr().out
    assert f"deleted {a.training}" in out and "1 checkpoint(s) deleted" in out
    assert paths(listed(["--run", a.run_id, *url], capsys)) == [a.sampler]
    assert not folder(served, a.training).exists()
    assert (folder(served, a.sampler) / "meta.json").is_file()

    assert main(["checkpoints", "delete", "--run", b.run_id, *url]) == 1  # needs --yes
    out = capsys.readouterr().out
    assert b.training in out and b.sampler in out
    assert "2 checkpoint(s) would be deleted; add --yes to delete them" in out
    assert paths(listed(["--run", b.run_id, *url], capsys)) == sorted([b.training, b.sampler])

    assert main(["checkpoints", "delete", "--run", b.run_id, "--yes", *url]) == 0
    out = capsys.readouterr().out
    assert f"deleted {b.training}" in out and f"deleted {b.sampler}" in out
    assert "2 checkpoint(s) deleted" in out
    assert listed(["--run", b.run_id, *url], capsys) == []
    assert not folder(served, b.training).exists() and not folder(served, b.sampler).exists()
    assert paths(listed(["--run", a.run_id, *url], capsys)) == [a.sampler]  # untouched


@pytest.mark.integration
def test_bad_delete_requests(served, url, capsys) -> None:
    a = save_run(served)
    assert main(["checkpoints", "delete", *url]) == 2
    assert "nothing to delete" in capsys.readouterr().err
    assert main(["checkpoints", "delete", "weights/step-1", *url]) == 2
    assert "not a checkpoint path" in capsys.readouterr().err
    assert main(["checkpoints", "delete", a.training, "--run", a.run_id, "--yes", *url]) == 2
    assert "not several" in capsys.readouterr().err
    assert main(["checkpoints", "delete", "tinker://nope/weights/x", *url]) == 2
    assert "NotFoundError" in capsys.readouterr().err

    assert main(["checkpoints", "delete", a.training, *url]) == 0
    capsys.readouterr()
    assert main(["checkpoints", "delete", a.training, *url]) == 2  # gone already
    assert "NotFoundError" in capsys.readouterr().err
    assert paths(listed(["--run", a.run_id, *url], capsys)) == [a.sampler]

    assert main(["checkpoints", "list", "--base-url", "http://x", "--state-dir", "/tmp"]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.mark.integration
def test_mint_api_key_is_sent_when_set(served, url, capsys, monkeypatch) -> None:
    """A server that requires a key refuses the CLI when MINT_API_KEY (sent first) is wrong."""
    monkeypatch.setenv("MINT_API_KEY", "sk-not-the-key")
    assert main(["checkpoints", "list", *url]) == 2
    assert "AuthenticationError" in capsys.readouterr().err
    monkeypatch.setenv("MINT_API_KEY", local_api_key())
    assert main(["checkpoints", "list", *url]) == 0


@pytest.mark.integration
def test_local_state_dir_through_an_embedded_server(
    served, monkeypatch, tmp_path: Path, capsys
) -> None:
    """Without --base-url: the CLI starts its own server on the state dir (a copy of a run
    the real engine saved)."""
    saved = save_run(served)
    state = tmp_path / "state"
    shutil.copytree(served.state_dir / saved.run_id, state / saved.run_id)
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(state))
    assert main(["checkpoints", "list"]) == 0
    out = capsys.readouterr().out
    assert f"checkpoints in {state.resolve()} (local state directory):" in out
    assert saved.training in out and saved.sampler in out and "2 checkpoint(s)" in out
    assert main(["checkpoints", "delete", saved.training]) == 0
    assert f"deleted {saved.training}" in capsys.readouterr().out
    assert not (state / saved.run_id / "weights" / "step-1").exists()
    assert (state / saved.run_id / "sampler_weights" / "step-1" / "meta.json").is_file()
    assert folder(served, saved.training).exists()  # the copy was deleted, not the original


@pytest.mark.integration
def test_list_links_each_run_to_its_log_directory(served, url, capsys, tmp_path: Path) -> None:
    """A run's log directory is the one whose checkpoints.jsonl names its checkpoints."""
    a, b = save_run(served), save_run(served)
    log_dir = tmp_path / "runs" / "demo"
    log_dir.mkdir(parents=True)
    line = {"name": "step-1", "state_path": a.training, "sampler_path": a.sampler}
    (log_dir / "checkpoints.jsonl").write_text(json.dumps(line) + "\n{torn")
    runs = ["--runs", str(tmp_path / "runs")]
    assert main(["checkpoints", "list", "--run", a.run_id, *runs, *url]) == 0
    assert f"  {a.run_id}  {log_dir}" in capsys.readouterr().out.splitlines()
    assert main(["checkpoints", "list", "--run", b.run_id, *runs, *url]) == 0
    out = capsys.readouterr().out
    assert f"  {b.run_id}  (none under {tmp_path / 'runs'}/; --runs DIR looks elsewhere)" in out
    records = listed(["--run", a.run_id, *runs, *url], capsys)
    assert {r["log_dir"] for r in records} == {str(log_dir)}


# ---------------------------------------------------------------- issue 48: du, prune


@pytest.mark.integration
def test_du_shows_the_store_and_prune_deletes_by_run_and_orphans(
    served, url, capsys, tmp_path
) -> None:
    a, b = save_run(served), save_run(served)
    logs = tmp_path / "runs" / "kept"
    logs.mkdir(parents=True)
    (logs / "checkpoints.jsonl").write_text(json.dumps({"state_path": b.training}) + "\n")
    where = [*url, "--runs", str(tmp_path / "runs")]

    assert main(["checkpoints", "du", "--json", *where]) == 0
    usage = json.loads(capsys.readouterr().out)
    assert (
        usage["runs"][a.run_id]["checkpoints"] == 2 and usage["runs"][a.run_id]["log_dir"] is None
    )
    assert usage["runs"][b.run_id]["log_dir"] == str(logs)
    assert usage["size_bytes"] == sum(r["size_bytes"] for r in usage["runs"].values()) > 0
    assert main(["checkpoints", "du", *where]) == 0
    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .startswith(f"{usage['checkpoints']} checkpoint(s) of ")
    )

    runs = ["--run", a.run_id, "--run", b.run_id]
    assert main(["checkpoints", "prune", "--orphaned", *runs, *where]) == 1  # needs --yes
    out = capsys.readouterr().out
    assert a.training in out and b.training not in out and "would be deleted; add --yes" in out
    assert main(["checkpoints", "prune", "--orphaned", *runs, "--yes", *where]) == 0
    assert "pruned 2 checkpoint(s)" in capsys.readouterr().out
    assert listed(["--run", a.run_id, *url], capsys) == []
    assert paths(listed(["--run", b.run_id, *url], capsys)) == sorted([b.training, b.sampler])
    assert main(["checkpoints", "prune", *where]) == 2
    assert "prune what?" in capsys.readouterr().err
