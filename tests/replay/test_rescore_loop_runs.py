"""``rescore`` takes every run the loop writes: its held-out evals at several reply limits
(the uncut evals) included. Before the records carried their reply limit, the uncut
ladder's evaluations of one split at one step wrote the same group ids twice and rescore
refused the run ("the file was cut or edited", exit 2)."""

from __future__ import annotations

import asyncio
import json
import re

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, KLReferenceConfig
from mint_envkit.cli import main
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.replay import rescore
from mint_envkit.rl.evals import evaluate_split
from mint_envkit.rl.train import run_training
from mint_envkit.runs.files import RunFiles, read_jsonl
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv, TextClient

PROBLEMS = [{"question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)} for i in range(6)]


def _verbose(prompt: str, _limit: int) -> str:
    """Longer replies for larger numbers: cut off at 8, 16 and 32 tokens in turn."""
    a, b = map(int, re.findall(r"What is (\d+) \+ (\d+)", prompt)[-1])
    return "so " * (5 * a) + str(a + b)


async def _ladder_run(tmp_path) -> tuple[str, list[dict]]:
    """A run's held-out evals whose first one is cut off: the uncut ladder runs."""
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[ARITHMETIC_PROBLEM],
        test_problems=PROBLEMS,
        batch_size=1,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        max_generation_tokens=8,
    )
    config = Config(dataset_builder=builder, log_path=str(tmp_path / "run"), eval_every=1)
    files = RunFiles(config.log_path)
    files.ensure()
    files.write_config(config.public_dict())
    test, _ = await attrs.evolve(builder, test_problems=None, problems=PROBLEMS, batch_size=6)()
    before = await evaluate_split(config, files, test, TextClient(_verbose), step=0)
    after = await evaluate_split(
        config, files, test, TextClient(_verbose), step=0, final=True, current=before
    )
    files.append_metrics({"step": 0, **before, **after})
    return config.log_path, read_jsonl(files.rollouts_path)


def test_the_uncut_ladder_writes_groups_rescore_reads(tmp_path, capsys):
    log_path, records = asyncio.run(_ladder_run(tmp_path))
    tried = sorted({r["max_tokens"] for r in records if r["split"] == "test_uncut"})
    assert len(tried) >= 2, tried  # the ladder evaluated one split at several limits
    assert {r["max_tokens"] for r in records if r["split"] == "test"} == {8}

    code = main(["rescore", log_path, "shared_envs:ArithmeticEnv"])
    out = capsys.readouterr().out
    assert code == 0, out
    report = asyncio.run(rescore(log_path, "shared_envs:ArithmeticEnv"))
    assert report.records == len(records) and not report.changes


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_run_with_every_loop_option_rescores_unchanged(tmp_path, tiny_local_server, capsys):
    """The tiny model cut off at 4 tokens (uncut evals), two steps sampled one step
    ahead (off-policy), constant groups dropped, a checkpoint every step, a KL penalty
    against the base model, held-out evals every step, then rescored from the CLI."""
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[ARITHMETIC_PROBLEM] * 4,
        test_problems=PROBLEMS[:3],
        batch_size=2,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        max_generation_tokens=4,
    )
    run = asyncio.run(
        run_training(
            Config(
                dataset_builder=builder,
                log_path=str(tmp_path / "run"),
                learning_rate=1e-3,
                lora_rank=4,
                max_steps=2,
                eval_every=1,
                save_every=1,
                max_steps_off_policy=1,
                remove_constant_reward_groups=True,
                kl_penalty_coef=0.01,
                kl_reference_config=KLReferenceConfig(base_model=TINY_MODEL_NAME),
                base_url=tiny_local_server.base_url,
                backend="local",
            )
        )
    )
    # the run records the code it ran: this checkout's commit and its uncommitted changes
    assert json.loads((tmp_path / "run" / "git.json").read_text())["commit"]
    splits = {r["split"] for r in read_jsonl(f"{run.log_path}/rollouts.jsonl")}
    assert {"train", "test", "test_final"} <= splits
    code = main(["rescore", run.log_path, "shared_envs:ArithmeticEnv", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert '"changed_records": 0' in out
