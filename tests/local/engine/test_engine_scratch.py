"""The scratch folders of checkpoint writes: which ones a new store sweeps, which it keeps.

The end-to-end case (a ``kill -9`` in the middle of a save, then a server restart) is
``tests/local/test_checkpoint_safety.py``; here each owner rule on plain folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mint_envkit.local.engine.checkpoints import CheckpointStore
from mint_envkit.local.engine.scratch import STALE_UNTAGGED_S, scratch_prefix, start_ticks, sweep


@pytest.fixture
def kind_dir(tmp_path: Path) -> Path:
    folder = tmp_path.resolve() / "state" / "run-1" / "weights"
    folder.mkdir(parents=True)
    return folder


def _state(kind_dir: Path) -> Path:
    return kind_dir.parent.parent


def _tagged(
    kind_dir: Path, kind: str, pid: int, host: str | None = None, tail: str = "abc123_x"
) -> Path:
    own_host = scratch_prefix(kind)[len(kind) :].rsplit("-", 2)[0]
    prefix = f"{kind}{host or own_host}-{pid}-"  # no start time: the liveness of the pid alone
    folder = kind_dir / f"{prefix}{tail}"
    folder.mkdir()
    (folder / "adapter_model.safetensors").write_bytes(b"partial")
    return folder


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=60)
    return proc.pid  # exited and reaped: no process has it (reuse this soon is unlikely)


def test_a_dead_owners_folders_go_and_a_live_ones_stay(kind_dir: Path) -> None:
    dead = [_tagged(kind_dir, kind, _dead_pid()) for kind in (".tmp-", ".del-")]
    mine = Path(tempfile.mkdtemp(prefix=scratch_prefix(".tmp-"), dir=kind_dir))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = _tagged(kind_dir, ".tmp-", sleeper.pid)
        elsewhere = _tagged(kind_dir, ".tmp-", _dead_pid(), host="another_host")
        assert sorted(sweep(_state(kind_dir))) == sorted(dead)
        assert mine.is_dir() and alive.is_dir() and elsewhere.is_dir()
        assert not any(d.exists() for d in dead)
    finally:
        sleeper.kill()
        sleeper.wait(timeout=60)


def test_untagged_folders_go_only_when_untouched_for_an_hour(kind_dir: Path) -> None:
    old, fresh = kind_dir / ".tmp-abcd1234", kind_dir / ".tmp-efgh5678"
    for folder in (old, fresh):
        folder.mkdir()
        (folder / "meta.json").write_text("{}")
    then = time.time() - STALE_UNTAGGED_S - 60
    for entry in (old / "meta.json", old):
        os.utime(entry, (then, then))
    assert sweep(_state(kind_dir)) == [old]
    assert fresh.is_dir() and not old.exists()


def _checkpoint(folder: Path, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"name": name, "base_model": "m"}))


def test_a_replaced_checkpoint_is_put_back_when_the_save_died_between_its_renames(
    kind_dir: Path,
) -> None:
    trash = _tagged(kind_dir, ".old-", _dead_pid())
    _checkpoint(trash / "x", "step-1")  # the old checkpoint, moved aside; the new never came
    kept = _tagged(kind_dir, ".old-", _dead_pid(), tail="def456_y")
    _checkpoint(kept / "x", "step-2")
    _checkpoint(kind_dir / "step-2", "step-2")  # the new one landed: the old goes
    assert set(sweep(_state(kind_dir))) == {trash, kept}
    assert json.loads((kind_dir / "step-1" / "meta.json").read_text())["name"] == "step-1"
    assert sorted(p.name for p in kind_dir.iterdir()) == ["step-1", "step-2"]


def test_the_sweep_never_leaves_the_state_directory(kind_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "weights"
    outside.mkdir(parents=True)
    foreign = _tagged(outside, ".tmp-", _dead_pid())
    (_state(kind_dir) / "linked-run").symlink_to(outside.parent)
    (kind_dir.parent / "sampler_weights").symlink_to(outside)
    assert sweep(_state(kind_dir)) == []
    assert foreign.is_dir()


def test_a_store_sweeps_when_it_opens(kind_dir: Path) -> None:
    dead = _tagged(kind_dir, ".tmp-", _dead_pid())
    store = CheckpointStore(_state(kind_dir))
    assert store.swept == [dead] and not dead.exists()


def test_a_folder_of_an_earlier_process_with_this_pid_is_swept(kind_dir: Path) -> None:
    """issue 46: a server that is pid 1 of its container counted itself as the owner of
    its killed predecessor's folders (also pid 1), so they were never removed. The tag
    holds the start time too: only this very process's folders are kept."""
    own_host = scratch_prefix(".tmp-")[len(".tmp-") :].rsplit("-", 2)[0]
    me, ticks = os.getpid(), start_ticks()
    assert ticks is not None
    older_format = kind_dir / f".tmp-{own_host}-{me}-abc123_x"  # a version before the start time
    predecessor = kind_dir / f".tmp-{own_host}-{me}.{ticks - 1}-abc123_y"
    mine = kind_dir / f".tmp-{own_host}-{me}.{ticks}-abc123_z"
    for folder in (older_format, predecessor, mine):
        folder.mkdir()
    assert sorted(sweep(_state(kind_dir))) == sorted([older_format, predecessor])
    assert mine.is_dir()


PID_1_SAVE = """
import os, sys, tempfile
from pathlib import Path
from mint_envkit.local.engine.scratch import scratch_prefix, sweep
assert os.getpid() == 1, os.getpid()
kind_dir = Path(sys.argv[1])
if sys.argv[2] == "save":  # a save killed before its rename: its scratch folder stays
    tmp = tempfile.mkdtemp(prefix=scratch_prefix(".tmp-"), dir=kind_dir)
    Path(tmp, "adapter_model.safetensors").write_bytes(b"partial")
    os._exit(137)  # as kill -9 would end it
print(len(sweep(kind_dir.parent.parent)))
"""


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0, reason="needs unshare")
def test_a_server_that_is_pid_1_sweeps_its_killed_predecessors_saves(kind_dir: Path) -> None:
    pid_1 = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        sys.executable,
        "-c",
        PID_1_SAVE,
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    killed = subprocess.run(
        [*pid_1, str(kind_dir), "save"], env=env, capture_output=True, text=True
    )
    assert killed.returncode == 137 and len(list(kind_dir.iterdir())) == 1, killed.stderr
    restarted = subprocess.run(
        [*pid_1, str(kind_dir), "open"], env=env, capture_output=True, text=True
    )
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.strip() == "1" and list(kind_dir.iterdir()) == []
