"""The audit's real parts on the embedded backend: samples, the learning check, the cost."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # audit_envs

import audit_envs as envs

from mint_envkit.auditing import audit

pytestmark = pytest.mark.integration

SMALL = "mint-envkit/tiny-qwen3-small"
PRICES = {"sample": 2.0, "prefill": 0.5, "train": 3.0}


async def test_samples_learning_and_cost(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    report = await audit(
        envs.add_builder,
        sample_model=SMALL,
        samples=2,
        max_tokens=4,
        learn_steps=1,
        learn_options={"learning_rate": 1e-3, "lora_rank": 4},
        planned_steps=10,
        prices=PRICES,
        out_dir=tmp_path,
        loggers=("mlflow",),
    )
    # the audit's learning run and its summary row: one tracker store, in the audit's folder
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("mlflow.db")] == [Path("mlflow.db")]
    samples = report.samples
    assert samples["model"] == SMALL and samples["episodes"] == report.problems * 2
    assert sum(samples["parse_status"].values()) == pytest.approx(1.0)
    assert 0.0 <= samples["truncated_rate"] <= 1.0
    assert samples["baseline_correct"] == report.baseline_correct  # the same problems
    assert samples["distinct"] is not None and samples["headline"] in report.table()
    lines = (tmp_path / "samples.jsonl").read_text().splitlines()
    assert len(lines) == samples["episodes"]  # every sampled reply is kept, readable
    first = json.loads(lines[0])
    assert {"problem", "reply", "reward", "correct", "parse_status"} <= set(first)

    cost = report.cost
    per_step = (
        cost["sampled_tokens_per_step"]
        + cost["prefill_tokens_per_step"]
        + cost["trained_tokens_per_step"]
    )
    assert cost["planned_steps"] == 10 and cost["total_tokens"] == 10 * per_step
    assert (cost["batch_size"], cost["group_size"]) == (2, 2)
    assert cost["sampled_tokens_per_step"] > 0 and cost["prefill_tokens_per_step"] > 0
    expected_usd = (
        10
        * (
            cost["sampled_tokens_per_step"] * PRICES["sample"]
            + cost["prefill_tokens_per_step"] * PRICES["prefill"]
            + cost["trained_tokens_per_step"] * PRICES["train"]
        )
        / 1e6
    )
    assert cost["total_usd"] == pytest.approx(expected_usd)

    learned = report.learn
    assert learned["steps"] == 1 and learned["model"] == SMALL
    assert learned["before"]["correct"] is not None and learned["after"]["correct"] is not None
    assert learned["claim"]["line"] in report.table()
    # one step of a random model learns nothing: the verdict says so, once, everywhere
    assert {f.kind for f in report.findings} & {"no_gain", "collapse", "warning"}
    assert report.table().splitlines()[-1] == report.verdict.line
    assert (Path(learned["log_path"]) / "metrics.jsonl").exists()
    record = json.loads((tmp_path / "audit.json").read_text())
    assert record["cost"]["total_tokens"] == cost["total_tokens"]
    assert record["verdict"] == report.verdict.line and record["ok"] == report.ok
    assert "MinT cost preview" in report.table() and "learning check" in report.table()


async def test_no_money_without_prices():
    report = await audit(envs.capital_builder, sample_model=SMALL, samples=1, max_tokens=2)
    assert report.cost["total_usd"] is None
    assert "$" not in report.table()
