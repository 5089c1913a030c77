"""Config.loggers: a training run's rows in TensorBoard, W&B (offline) and MLflow, read back
with their own readers, with no network and no account; the field's checks."""

from __future__ import annotations

import sys

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv, first_number
from mint_envkit.errors import ConfigError, MissingExtraError
from mint_envkit.rl.train import main
from mint_envkit.runs.files import RunFiles
from tracker_records import (
    mlflow_history,
    mlflow_run,
    offline_tracker_env,
    tensorboard_scalars,
    wandb_history,
    wandb_runs,
)

MODEL = "mint-envkit/tiny-qwen3-small"  # the server fixture's (tests/rl/conftest.py)
REWARD = "env/all/reward/total"
ALL = ("tensorboard", "wandb", "mlflow")


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.25


def _config(tmp_path, server, **overrides) -> Config:
    builder = DatasetBuilder(
        env=AddEnv,
        problems=[{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(8)],
        batch_size=2,
        group_size=4,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=6,
    )
    fields = {
        "dataset_builder": builder,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 2,
        "base_url": server.base_url if server is not None else None,
        "backend": "local",
        "save_every": 1,
        "loggers": ALL,
    }
    fields.update(overrides)
    return Config(**fields)


def test_loggers_are_checked_when_the_config_is_built(tmp_path, monkeypatch):
    assert _config(tmp_path, None, loggers=()).loggers == ()
    assert _config(tmp_path, None, loggers=["mlflow"]).loggers == ("mlflow",)
    assert _config(tmp_path, None).public_dict()["loggers"] == ALL
    with pytest.raises(ConfigError, match=r"Config\.loggers must be a tuple"):
        _config(tmp_path, None, loggers="wandb")
    with pytest.raises(ConfigError, match=r"Config\.loggers names 'comet'"):
        _config(tmp_path, None, loggers=("comet",))
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'mint-envkit\[wandb\]'"):
        _config(tmp_path, None, loggers=("tensorboard", "wandb"))


@pytest.mark.integration
async def test_a_run_logs_its_reward_to_every_tracker_offline_and_resumes_them(
    tmp_path, server, monkeypatch
):
    offline_tracker_env(monkeypatch, tmp_path / "home")  # no account, no network
    config = _config(tmp_path, server)
    await main(config)
    run = tmp_path / "run"
    rewards = [(m["step"], m[REWARD]) for m in RunFiles(run).metrics()]
    assert [step for step, _ in rewards] == [0, 1]

    def float32(pairs):  # TensorBoard keeps scalars as float32
        return [(step, pytest.approx(value, rel=1e-6)) for step, value in pairs]

    assert tensorboard_scalars(run, REWARD) == float32(rewards)
    assert [(r["_step"], r[REWARD]) for r in wandb_history(run)] == rewards
    assert mlflow_history(run, REWARD) == rewards
    assert mlflow_run(run).data.params["learning_rate"] == "0.003"

    # a longer run on the same log_path resumes at step 2: the same tracker runs, step 2 added
    await main(attrs.evolve(config, max_steps=3))
    rewards = [(m["step"], m[REWARD]) for m in RunFiles(run).metrics()]
    assert [step for step, _ in rewards] == [0, 1, 2]
    assert tensorboard_scalars(run, REWARD) == float32(rewards)
    assert [(r["_step"], r[REWARD]) for r in wandb_history(run)] == rewards
    first, second = wandb_runs(run)
    assert first.run_id == second.run_id
    assert mlflow_history(run, REWARD) == rewards
    assert mlflow_run(run).info.status == "FINISHED"


@pytest.mark.integration
async def test_a_distillation_run_logs_its_rows_too(tmp_path, server):
    from mint_envkit.rl import run_distillation

    config = _config(tmp_path, server, max_steps=1, loggers=("tensorboard",))
    await run_distillation(config, teacher=MODEL)
    (row,) = RunFiles(tmp_path / "run").metrics()
    found = tensorboard_scalars(tmp_path / "run", "distill/reverse_kl")
    assert found == [(0, pytest.approx(row["distill/reverse_kl"], rel=1e-6))]
