"""evaluate(loggers=...): the summary's figures as one row in each tracker, read back."""

from __future__ import annotations

import sys

import pytest

from mint_envkit import evaluate
from mint_envkit.errors import ConfigError, MissingExtraError
from mint_envkit.evaluation.files import metric_line
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import BackendSettings, SamplingSettings
from shared_envs import ArithmeticEnv
from tracker_records import (
    mlflow_history,
    mlflow_run,
    offline_tracker_env,
    tensorboard_scalars,
    tensorboard_tensors,
    wandb_history,
    wandb_runs,
)

PROBLEMS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(3)]
ALL = ("tensorboard", "wandb", "mlflow")


def test_the_row_is_the_metrics_line_with_the_text_figures():
    row = metric_line({"mean_reward": 0.5, "pass@": {"1": 0.25}, "answers/top": "4"})
    assert row == {
        "step": 0,
        "eval/mean_reward": 0.5,
        "eval/pass@1": 0.25,
        "eval/answers/top": "4",
    }


async def test_loggers_are_checked_before_anything_is_sampled(monkeypatch):
    with pytest.raises(ConfigError, match="pass out_dir"):
        await evaluate(ArithmeticEnv, problems=PROBLEMS, loggers=("tensorboard",))
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"mint-envkit\[mlflow\]"):
        await evaluate(ArithmeticEnv, problems=PROBLEMS, loggers=("mlflow",), out_dir="x")


@pytest.mark.integration
async def test_an_evaluation_logs_its_summary_to_every_tracker(
    tmp_path, tiny_local_server, monkeypatch
):
    offline_tracker_env(monkeypatch, tmp_path / "home")
    out = tmp_path / "eval"
    options = {
        "problems": PROBLEMS,
        "model_name": TINY_MODEL_NAME,
        "samples": 4,
        "backend": BackendSettings(base_url=tiny_local_server.base_url, backend="local"),
        "out_dir": str(out),
        "loggers": ALL,
    }
    means = []
    for seed in (0, 1):  # the same folder evaluated again is a new tracker run
        result = await evaluate(
            ArithmeticEnv, sampling=SamplingSettings(max_tokens=6, seed=seed), **options
        )
        means.append(result.summary["mean_reward"])
    run = out / "base"  # the run folder of the base model
    assert tensorboard_scalars(run, "eval/mean_reward") == [(0, pytest.approx(means[1]))]
    name = result.summary.get("answers/top")
    if isinstance(name, str):
        assert tensorboard_tensors(run, "eval/answers/top") == [(0, name)]
    history = wandb_history(run)
    assert [(r["_step"], r["eval/mean_reward"]) for r in history] == [(0, m) for m in means]
    first, second = wandb_runs(run)
    assert first.run_id != second.run_id and first.run_group == second.run_group == "eval"
    assert mlflow_history(run, "eval/mean_reward") == [(0, means[1])]
    found = mlflow_run(run)
    assert found.data.params["samples"] == "4" and found.data.params["seed"] == "1"
    assert found.info.run_name == "base" and (out / "mlflow.db").is_file()
