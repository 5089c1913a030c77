"""Run files: whole JSON lines, crash-cut lines skipped, resume trimming."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import subprocess

import pytest

from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.runs.files import (
    RunFiles,
    append_jsonl,
    check_writable,
    code_state,
    read_jsonl,
    write_json_atomic,
    write_text_atomic,
)


def test_append_and_read_round_trip(tmp_path):
    path = tmp_path / "metrics.jsonl"
    records = [{"step": 0, "reward": 0.5}, {"step": 1, "reward": 1.0, "tags": ["a", "b"]}]
    for record in records:
        append_jsonl(path, record)
    assert read_jsonl(path) == records
    assert path.read_text().count("\n") == 2


def test_missing_file_reads_as_empty(tmp_path):
    assert read_jsonl(tmp_path / "nope.jsonl") == []


def test_a_truncated_last_line_is_skipped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, {"step": 0})
    append_jsonl(path, {"step": 1})
    with open(path, "a") as handle:
        handle.write('{"step": 2, "rew')
    assert read_jsonl(path) == [{"step": 0}, {"step": 1}]


def test_a_cut_line_in_the_middle_is_skipped_too(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n{"step": 1, "rew\n{"step": 2}\n')
    assert read_jsonl(path) == [{"step": 0}, {"step": 2}]


def test_a_record_appended_after_a_cut_line_is_kept(tmp_path):
    path = tmp_path / "checkpoints.jsonl"
    append_jsonl(path, {"step": 0})
    with open(path, "a") as handle:
        handle.write('{"step": 1, "state_pa')
    append_jsonl(path, {"step": 2})
    assert read_jsonl(path) == [{"step": 0}, {"step": 2}]


def test_blank_lines_are_ignored(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n')
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_non_finite_and_odd_values_are_written_as_json(tmp_path):
    path = tmp_path / "x.jsonl"
    append_jsonl(path, {"nan": math.nan, "inf": math.inf, "tuple": (1, 2), "obj": {1: object}})
    (record,) = read_jsonl(path)
    assert record["nan"] is None and record["inf"] is None
    assert record["tuple"] == [1, 2]
    assert record["obj"] == {"1": repr(object)}
    json.loads(path.read_text())  # strict JSON, no NaN literal


def test_run_files_metrics_and_checkpoints(tmp_path):
    files = RunFiles(tmp_path / "run")
    files.ensure()
    files.write_config({"seed": 0, "lr": 1e-4})
    assert json.loads(files.config.read_text()) == {"seed": 0, "lr": 1e-4}
    assert files.last_checkpoint() is None
    files.append_metrics({"step": 0})
    files.append_checkpoint({"step": 0, "state_path": "tinker://a"})
    files.append_checkpoint({"step": 1, "sampler_path": "tinker://s"})
    files.append_checkpoint({"step": 2, "state_path": "tinker://b"})
    files.append_checkpoint({"step": 3})
    assert files.metrics() == [{"step": 0}]
    assert len(files.checkpoints()) == 4
    assert files.last_checkpoint() == {"step": 2, "state_path": "tinker://b"}


def test_append_rollouts_writes_one_line_each(tmp_path):
    files = RunFiles(tmp_path)
    files.append_rollouts([])
    assert not files.rollouts_path.exists()
    files.append_rollouts([{"step": 0, "i": 0}, {"step": 0, "i": 1}])
    assert read_jsonl(files.rollouts_path) == [{"step": 0, "i": 0}, {"step": 0, "i": 1}]


def test_forget_after_drops_later_steps(tmp_path):
    files = RunFiles(tmp_path)
    for step in range(5):
        files.append_metrics({"step": step, "reward": step / 10})
        files.append_rollouts([{"step": step, "i": 0}, {"step": step, "i": 1}])
    files.append_checkpoint({"step": 2, "state_path": "tinker://c"})
    files.forget_after(3)
    assert [r["step"] for r in files.metrics()] == [0, 1, 2]
    assert [r["step"] for r in read_jsonl(files.rollouts_path)] == [0, 0, 1, 1, 2, 2]
    assert files.last_checkpoint() == {"step": 2, "state_path": "tinker://c"}
    assert not list(tmp_path.glob("*.tmp"))
    files.append_metrics({"step": 3, "reward": 0.9})
    assert [r["step"] for r in files.metrics()] == [0, 1, 2, 3]


def test_forget_after_without_files(tmp_path):
    files = RunFiles(tmp_path / "fresh")
    files.ensure()
    files.forget_after(0)
    assert files.metrics() == []


# ------------------------------------------------------------------ disk problems


def test_check_writable_names_a_directory_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="not writable") as info:
        check_writable(blocker / "run", what="the run's log directory")
    assert str(blocker / "run") in str(info.value)


def test_check_writable_refuses_a_nearly_full_disk(tmp_path, monkeypatch):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage._replace(free=1024))
    with pytest.raises(ConfigError, match=r"only 0\.0 MiB free") as info:
        check_writable(tmp_path / "run", what="the run's log directory")
    assert str(tmp_path / "run") in str(info.value)


def test_run_files_ensure_checks_the_directory_first(tmp_path):
    (tmp_path / "runs").write_text("")
    with pytest.raises(ConfigError, match=r"Config\.log_path"):
        RunFiles(tmp_path / "runs" / "demo").ensure()
    RunFiles(tmp_path / "ok").ensure()
    assert (tmp_path / "ok").is_dir() and not list((tmp_path / "ok").iterdir())


def _fill_the_disk_after(monkeypatch, n_bytes: int) -> None:
    """os.write writes at most ``n_bytes``, then raises ENOSPC (a disk that fills up)."""
    real_write = os.write

    def write(fd, data):
        if len(data) <= n_bytes:
            return real_write(fd, data)
        real_write(fd, data[:n_bytes])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_leaves_no_torn_line_and_names_the_directory(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, {"step": 0})
    before = path.read_bytes()
    _fill_the_disk_after(monkeypatch, 5)
    with pytest.raises(MintEnvkitError, match="ENOSPC") as info:
        append_jsonl(path, {"step": 1, "env/all/reward/total": 0.5})
    monkeypatch.undo()
    assert str(tmp_path) in str(info.value) and "metrics.jsonl" in str(info.value)
    assert path.read_bytes() == before  # cut back: no half line
    append_jsonl(path, {"step": 1})
    assert [r["step"] for r in read_jsonl(path)] == [0, 1]


def test_a_failed_atomic_write_leaves_neither_a_partial_nor_an_empty_file(tmp_path, monkeypatch):
    def no_space(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(MintEnvkitError, match="ENOSPC"):
        write_json_atomic(tmp_path / "config.json", {"a": 1})
    with pytest.raises(MintEnvkitError, match="ENOSPC"):
        write_text_atomic(tmp_path / "error.txt", "Traceback ...")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_forget_after_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    files = RunFiles(tmp_path)
    for step in range(3):
        files.append_metrics({"step": step})
    monkeypatch.setattr(os, "replace", _raise_erofs)
    with pytest.raises(MintEnvkitError, match="EROFS"):
        files.forget_after(1)
    monkeypatch.undo()
    assert [m["step"] for m in files.metrics()] == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl"]


def _raise_erofs(*_args):
    raise OSError(errno.EROFS, "Read-only file system")


def test_a_run_in_a_git_repository_records_its_commit_and_diff(tmp_path):
    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *argv],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q")
    (repo / "env.py").write_text("REWARD = 1.0\n")
    git("add", "env.py")
    git("commit", "-q", "-m", "first")
    (repo / "env.py").write_text("REWARD = 0.5\n")
    files = RunFiles(tmp_path / "run")
    files.ensure()

    state = files.write_code_state(repo)

    assert state is not None and state["commit"] == git("rev-parse", "HEAD") and state["dirty"]
    assert json.loads((files.root / "git.json").read_text())["commit"] == state["commit"]
    diff = (files.root / "code.diff").read_text()
    assert "-REWARD = 1.0" in diff and "+REWARD = 0.5" in diff
    # outside a repository: nothing is written
    elsewhere = RunFiles(tmp_path / "other")
    elsewhere.ensure()
    outside = tmp_path / "plain"
    outside.mkdir()
    assert code_state(outside) is None  # /tmp is in no repository
    assert elsewhere.write_code_state(outside) is None
    assert not (elsewhere.root / "code.diff").exists()
