"""Checkpoint retention: which checkpoints are stale, deletion through the REST client."""

from __future__ import annotations

import attrs

from mint_envkit.rl.checkpoints import prune_checkpoints, stale_checkpoints
from mint_envkit.runs.files import RunFiles


def _record(name: str, step: int) -> dict:
    return {"name": name, "step": step, "state_path": f"tinker://r/weights/{name}",
            "sampler_path": f"tinker://r/sampler_weights/{name}"}  # fmt: skip


class FakeRest:
    """Deletes by path; answers 404 for paths in ``gone`` and refuses those in ``refuse``."""

    def __init__(self, gone=(), refuse=()) -> None:
        self.deleted: list[str] = []
        self.gone, self.refuse = set(gone), set(refuse)

    async def delete_checkpoint_from_tinker_path_async(self, path: str) -> None:
        if path in self.gone:
            raise type("NotFoundError", (Exception,), {"status_code": 404})("no such checkpoint")
        if path in self.refuse:
            raise RuntimeError("backend busy")
        self.deleted.append(path)


def test_stale_checkpoints_keep_the_newest_n_and_every_final():
    records = [_record("step000001", 1), _record("step000002", 2), _record("final", 2)]
    records += [_record("step000003", 3)]
    assert [r["name"] for r in stale_checkpoints(records, 1)] == ["step000001", "step000002"]
    assert [r["name"] for r in stale_checkpoints(records, 0)] == [
        "step000001",
        "step000002",
        "step000003",
    ]
    assert stale_checkpoints(records, None) == []
    assert stale_checkpoints(records, 5) == []


async def test_prune_deletes_through_the_sdk_and_marks_the_lines(tmp_path, phase_config):
    files = RunFiles(tmp_path)
    for step in (1, 2, 3):
        files.append_checkpoint(_record(f"step{step:06d}", step))
    rest = FakeRest(gone={"tinker://r/sampler_weights/step000001"})
    config = attrs.evolve(phase_config, keep_checkpoints=1)
    deleted = await prune_checkpoints(rest, config, files)
    assert [r["name"] for r in deleted] == ["step000001", "step000002"]
    assert sorted(rest.deleted) == [
        "tinker://r/sampler_weights/step000002",
        "tinker://r/weights/step000001",
        "tinker://r/weights/step000002",
    ]
    assert [(c["name"], bool(c.get("deleted"))) for c in files.checkpoints()] == [
        ("step000001", True),
        ("step000002", True),
        ("step000003", False),
    ]
    assert files.last_checkpoint()["name"] == "step000003"
    assert await prune_checkpoints(rest, config, files) == []  # nothing left to delete


async def test_a_refused_deletion_is_kept_and_retried_later(tmp_path, phase_config, caplog):
    files = RunFiles(tmp_path)
    for step in (1, 2):
        files.append_checkpoint(_record(f"step{step:06d}", step))
    config = attrs.evolve(phase_config, keep_checkpoints=1)
    refusing = FakeRest(refuse={"tinker://r/weights/step000001"})
    assert await prune_checkpoints(refusing, config, files) == []
    assert "could not delete checkpoint step000001" in caplog.text
    assert not any(c.get("deleted") for c in files.checkpoints())
    assert [r["name"] for r in await prune_checkpoints(FakeRest(), config, files)] == ["step000001"]
