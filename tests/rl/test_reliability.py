"""A lost backend mid-run, the restart of an embedded one, checkpoint retention (issue #10)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv, first_number
from mint_envkit.errors import BackendError
from mint_envkit.local import server as server_module
from mint_envkit.rl.train import run_training
from mint_envkit.rollouts.backend import local_api_key
from mint_envkit.runs.files import RunFiles

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"


class KillSwitchEnv(SingleTurnEnv):
    """Scores like an arithmetic env; the n-th scored reply runs ``on_score`` (once)."""

    parser = first_number
    scored = 0
    kill_at: int | None = None
    on_score = None

    def score(self, message):
        cls = type(self)
        cls.scored += 1
        if cls.scored == cls.kill_at and cls.on_score is not None:
            cls.on_score()
        return super().score(message)


@pytest.fixture
def kill_switch():
    """``kill_switch(at, action)``: run ``action`` (in a thread) at the ``at``-th scored reply."""

    def arm(at: int, action) -> None:
        KillSwitchEnv.scored, KillSwitchEnv.kill_at = 0, at
        KillSwitchEnv.on_score = staticmethod(lambda: threading.Thread(target=action).start())

    yield arm
    KillSwitchEnv.kill_at, KillSwitchEnv.on_score = None, None


def _config(tmp_path, **fields) -> Config:
    builder = DatasetBuilder(
        env=KillSwitchEnv,
        problems=[{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(8)],
        batch_size=1,
        group_size=2,
        model_name=MODEL,
        score_truncated=True,
        seed=0,
        max_generation_tokens=4,  # the builder owns the reply limit
    )
    defaults = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "backend": "local",
        "save_every": 1,
        "backend_lost_after_s": 5.0,
    }
    return Config(**{**defaults, **fields})


async def test_a_killed_backend_fails_fast_naming_url_step_and_resume(tmp_path, kill_switch):
    server = server_module.LocalServer(models=[MODEL]).start()
    killed_at: list[float] = []

    def kill() -> None:
        killed_at.append(time.monotonic())
        server.close()

    kill_switch(3, kill)  # the first reply of step 2 (two replies per step)
    config = _config(tmp_path, base_url=server.base_url, max_steps=4)
    try:
        with pytest.raises(BackendError) as info:
            await run_training(config)
    finally:
        server.close()
    assert killed_at, f"failed before the kill: {info.value}"
    waited = time.monotonic() - killed_at[0]
    message = str(info.value)
    assert waited < 30, f"the loss took {waited:.1f} s to notice"
    assert server.base_url in message
    assert "step 2 of 4" in message
    assert f"log_path={config.log_path!r}" in message and "checkpoint, step 1" in message


async def test_an_embedded_server_that_dies_is_restarted_and_the_run_resumes(
    tmp_path, kill_switch, monkeypatch, capsys
):
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    started: list[server_module.LocalServer] = []
    real_start = server_module.LocalServer.start

    def recording_start(self, *args, **kwargs):
        started.append(self)
        return real_start(self, *args, **kwargs)

    monkeypatch.setattr(server_module.LocalServer, "start", recording_start)
    kill_switch(5, lambda: started[0].close())  # the first reply of step 3
    result = await run_training(_config(tmp_path, max_steps=3))

    assert len(started) == 2
    assert result.steps == 3 and result.final_checkpoint["name"] == "final"
    files = RunFiles(result.log_path)
    assert [m["step"] for m in files.metrics()] == [0, 1, 2]
    err = capsys.readouterr().err
    assert f"restarted it at {started[1].base_url}, resuming from step 2" in err


async def test_only_the_newest_checkpoints_and_the_final_stay_on_the_server(tmp_path):
    import mint

    with server_module.LocalServer(models=[MODEL], state_dir=str(tmp_path / "state")) as server:
        config = _config(tmp_path, base_url=server.base_url, max_steps=4, keep_checkpoints=1)
        result = await run_training(config)
        files = RunFiles(result.log_path)
        records = files.checkpoints()
        service = await asyncio.to_thread(
            mint.ServiceClient, base_url=server.base_url, api_key=local_api_key()
        )
        run_id = records[-1]["state_path"].removeprefix("tinker://").split("/")[0]
        listed = await service.create_rest_client().list_checkpoints_async(run_id)

    assert [(r["name"], bool(r.get("deleted"))) for r in records] == [
        ("step000001", True),
        ("step000002", True),
        ("step000003", False),
        ("final", False),
    ]
    kept = {r["state_path"] for r in records[2:]} | {r["sampler_path"] for r in records[2:]}
    assert {c.tinker_path for c in listed.checkpoints} == kept
    assert files.last_checkpoint()["name"] == "final"
