"""Steps that overlap by their waiting (rl/train.py ``run_steps``): a step submits its
update, and the next step samples, scores and submits its own before the first one's
results are awaited. The service runs a client's calls in order, so the run must be the
same as one step at a time, bit for bit, and a failing step must not lose the one before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mint_envkit import Config, DatasetBuilder, MessageStepResult, SingleTurnEnv
from mint_envkit.rl import train
from mint_envkit.rl.train import main
from mint_envkit.runs.files import RunFiles

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"


class FirstCharEnv(SingleTurnEnv):
    """1 when the reply starts with a lowercase vowel: groups differ, so every step trains."""

    def score(self, message):
        hit = message["content"][:1] in set("aeiou")
        return MessageStepResult(reward=float(hit), episode_done=True, metrics={})


class FailsAtStepTwo(FirstCharEnv):
    """Raises while scoring the problems of step 2 (the questions mention 'boom')."""

    def score(self, message):
        if "boom" in self.problem["question"]:
            raise RuntimeError("scorer crashed on purpose")
        return super().score(message)


def _config(tmp_path: Path, env=FirstCharEnv, problems=None, **overrides) -> Config:
    builder = DatasetBuilder(
        env=env,
        problems=problems or [{"question": f"Say {i}.", "answer": str(i)} for i in range(8)],
        batch_size=2,
        group_size=4,
        score_truncated=True,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=3,
    )
    fields = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 3,
        "backend": "local",
        "save_every": 2,
    }
    return Config(**{**fields, **overrides})


async def _one_step_at_a_time(run, steps, pipeline, task):
    """The loop before the overlap: each step finished before the next one starts."""
    checkpoint = None
    for step in steps:
        submitted = await train.submit_step(run, step, pipeline)
        checkpoint = await train.finish_step(run, submitted, task) or checkpoint
    return checkpoint


def _run_files(log_path: str) -> tuple[list[dict], list[dict], list[str]]:
    files = RunFiles(log_path)
    metrics = [{k: v for k, v in m.items() if not k.startswith("time/")} for m in files.metrics()]
    rollouts = [json.loads(line) for line in files.rollouts_path.read_text().splitlines()]
    names = [c["name"] for c in files.checkpoints()]
    return metrics, rollouts, names


async def _sampled_logprobs(log_path: str, server_url: str) -> list[list[float]]:
    """Every checkpoint's logprobs of a fixed sequence: the weights each one holds."""
    import mint
    import tinker

    service = mint.ServiceClient(base_url=server_url, api_key="sk-test")
    tokens = tinker.ModelInput.from_ints(list(range(5, 25)))
    out = []
    for record in RunFiles(log_path).checkpoints():
        client = await service.create_sampling_client_async(model_path=record["sampler_path"])
        out.append(list(await client.compute_logprobs_async(tokens)))
    return out


@pytest.mark.parametrize("off_policy", [0, 1])
async def test_overlapped_steps_train_the_same_run_as_one_step_at_a_time(
    tmp_path, monkeypatch, off_policy
):
    from mint_envkit.local.server import LocalServer

    runs = []
    for name in ("overlapped", "sequential"):
        if name == "sequential":
            monkeypatch.setattr(train, "run_steps", _one_step_at_a_time)
        with LocalServer(models=[MODEL], state_dir=str(tmp_path / name / "state")) as server:
            config = _config(
                tmp_path / name, base_url=server.base_url, max_steps_off_policy=off_policy
            )
            result = await main(config)
            runs.append(
                (
                    _run_files(result.log_path),
                    await _sampled_logprobs(result.log_path, server.base_url),
                )
            )
    (files, logprobs), (files_seq, logprobs_seq) = runs
    assert files == files_seq
    assert logprobs == logprobs_seq  # the same weights in every checkpoint, bit for bit
    assert logprobs[0] != logprobs[1]  # and the two checkpoints do differ
    metrics, _, names = files
    assert [m["step"] for m in metrics] == [0, 1, 2]
    assert all(m["train/datums"] > 0 for m in metrics)  # every step really trained
    assert names == ["step000002", "final"]


async def test_a_failing_step_still_writes_the_step_before_it(tmp_path, server):
    problems = [{"question": f"Say {i}.", "answer": str(i)} for i in range(4)]
    problems += [{"question": "Say boom.", "answer": "boom"}] * 2
    config = _config(
        tmp_path,
        env=FailsAtStepTwo,
        problems=problems,
        fail_fast=True,
        base_url=server.base_url,
        save_every=0,
    )
    with pytest.raises(RuntimeError, match="on purpose"):
        await main(config)
    # step 1 was submitted, not finished, when step 2's scoring failed: it is kept
    assert [m["step"] for m in RunFiles(config.log_path).metrics()] == [0, 1]
