"""Issue 48 item 3: training health, loud. Each step logs the share of replies cut off, of
groups with signal, of datums with an advantage, and the gradient norm; a step that can
teach nothing says so on its progress line, with the likely fix, and so does the run's
summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mint_envkit import Config, DatasetBuilder, MessageStepResult, SingleTurnEnv
from mint_envkit.rl.teaching import StallWatch, health_summary, step_health
from mint_envkit.rl.train import main
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.record import TrainingHealth

MODEL = "mint-envkit/tiny-qwen3-small"


class SpeakEnv(SingleTurnEnv):
    """1 for a reply with some text, 0 for an empty one: at a reply limit of 1 token every
    reply is cut off (the token env pays it -0.1) or empty, and no group has signal."""

    def score(self, message):
        said = float(bool(message["content"].strip()))
        return MessageStepResult(reward=said, episode_done=True, metrics={"said": said})


def _config(tmp_path: Path, server, max_tokens: int) -> Config:
    builder = DatasetBuilder(
        env=SpeakEnv,
        problems=[{"question": f"Item {i}.", "answer": ""} for i in range(8)],
        batch_size=2,
        group_size=4,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=max_tokens,
    )
    return Config(
        dataset_builder=builder,
        log_path=str(tmp_path / "run"),
        learning_rate=3e-3,
        lora_rank=4,
        max_steps=2,
        base_url=server.base_url,
        backend="local",
        save_every=0,
        temperature=1.0,
    )


@pytest.mark.integration
async def test_a_run_where_everything_is_cut_off_says_it_is_not_learning_and_why(
    tmp_path, server, capfd, monkeypatch
):
    """The trap: at a 16-token limit, truncation 94% -> 100%, every group constant,
    grad_norm 0.0, and the progress line showed only the reward rising."""
    monkeypatch.setenv("MINT_ENVKIT_PROGRESS", "plain")
    result = await main(_config(tmp_path, server, max_tokens=1))
    rows = RunFiles(result.log_path).metrics()
    healths = [TrainingHealth.from_metrics(row) for row in rows]
    assert all(h is not None for h in healths)
    records = [
        json.loads(x) for x in Path(result.log_path, "rollouts.jsonl").read_text().split("\n") if x
    ]
    cut = sum(r.get("stop_reason") == "length" or "truncated" in str(r.get("end")) for r in records)
    assert healths[0].truncated == 1.0, (cut, len(records))
    assert all(h.signal == 0.0 and h.advantaged == 0.0 for h in healths)
    err = capfd.readouterr().err
    assert (
        "NOT LEARNING: every sampled reply was cut off at the reply limit: raise the reply limit"
        in err
    )
    assert "NOT LEARNING (2 steps in a row):" in err
    assert result.not_learning.startswith("NOT LEARNING on 2 of 2 steps: every sampled reply")
    assert "(DatasetBuilder(max_generation_tokens=...))" in result.not_learning
    assert "NOT LEARNING on 2 of 2 steps" in err  # the run's summary repeats it


def test_the_health_of_a_step_and_its_words():
    healthy = step_health(
        {"env/all/by_group/frac_mixed": 0.5, "train/datums": 8, "train/zero_advantage_datums": 2,
         "optim/grad_norm": 0.7}, truncated=0.25)  # fmt: skip
    assert healthy == TrainingHealth(truncated=0.25, signal=0.5, advantaged=0.75, grad_norm=0.7)
    assert healthy.stuck() == [] and TrainingHealth.from_metrics(healthy.metrics()) == healthy
    watch = StallWatch()
    assert watch.note(healthy) is None
    constant = TrainingHealth(truncated=0.0, signal=0.0, advantaged=0.0, grad_norm=0.0)
    said = watch.note(constant)
    assert said.startswith("NOT LEARNING: every group's rewards are the same")
    assert "a worked example (few_shot)" in said and "a reward that separates" in said
    assert watch.note(constant).startswith("NOT LEARNING (2 steps in a row):")
    zero = TrainingHealth(truncated=0.0, signal=0.5, advantaged=0.5, grad_norm=0.0)
    assert zero.stuck()[0][0] == "the gradient was zero"
    rows = [healthy.metrics(), constant.metrics(), {"step": 3}]
    assert health_summary(rows).startswith("NOT LEARNING on 1 of 2 steps: every group's")
    assert health_summary([healthy.metrics()]) is None
