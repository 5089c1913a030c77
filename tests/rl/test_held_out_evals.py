"""The loop's held-out evals: the first one re-measured where nothing is cut off, the
final one at the same limit, and the run's claim from the two."""

from __future__ import annotations

import re

import attrs

from mint_envkit import Config, DatasetBuilder
from mint_envkit.rl.evals import evaluate_split, run_claim
from mint_envkit.rollouts import RunFiles, read_jsonl
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv, TextClient


def _problems(n: int) -> list[dict]:
    return [{"question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)} for i in range(n)]


def _reply(words: int):
    def reply(prompt: str, _limit: int) -> str:
        a, b = map(int, re.findall(r"What is (\d+) \+ (\d+)", prompt)[-1])
        return "so " * words + str(a + b)

    return reply


def _config(tmp_path, **fields) -> Config:
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[ARITHMETIC_PROBLEM],
        test_problems=_problems(6),
        batch_size=1,
        group_size=2,
        model_name="mint-envkit/tiny-qwen3",
        max_generation_tokens=8,
    )
    return Config(
        dataset_builder=builder,
        log_path=str(tmp_path / "run"),
        eval_every=1,
        **fields,
    )


async def test_a_first_eval_that_cuts_off_is_repeated_where_it_does_not(tmp_path):
    config = _config(tmp_path)
    files = RunFiles(config.log_path)
    files.ensure()
    test, _ = await attrs.evolve(config.dataset_builder, test_problems=None,
                                 problems=_problems(6), batch_size=6)()  # fmt: skip
    before = await evaluate_split(config, files, test, TextClient(_reply(8)), step=0)
    assert before["test/env/all/truncated"] == 1.0
    budget = before["test_uncut/max_tokens"]
    assert budget in (16, 32, 64) and before["test_uncut/env/all/truncated"] == 0.0
    after = await evaluate_split(
        config, files, test, TextClient(_reply(0)), step=0, final=True, current=before
    )
    assert after["test_final_uncut/max_tokens"] == budget
    files.append_metrics({"step": 0, **before, **after})
    claim = run_claim(config, files)
    assert claim.cut_off and claim.gain == 0.0  # at the uncut limit both are right
    assert "BASE TRUNCATED 100.0%" in claim.line()
    splits = {r["split"] for r in read_jsonl(files.rollouts_path)}
    assert splits == {"test", "test_uncut", "test_final", "test_final_uncut"}


async def test_no_uncut_evals_when_nothing_is_cut_off_or_when_turned_off(tmp_path):
    config = _config(tmp_path)
    files = RunFiles(config.log_path)
    files.ensure()
    test, _ = await attrs.evolve(config.dataset_builder, test_problems=None,
                                 problems=_problems(6), batch_size=6)()  # fmt: skip
    metrics = await evaluate_split(config, files, test, TextClient(_reply(0)), step=0)
    assert "test_uncut/max_tokens" not in metrics and metrics["test/env/all/correct"] == 1.0
    off = attrs.evolve(config, uncut_evals=False)
    metrics = await evaluate_split(off, files, test, TextClient(_reply(8)), step=0)
    assert "test_uncut/max_tokens" not in metrics


async def test_the_evals_reply_limit_can_be_larger_than_trainings(tmp_path):
    config = _config(tmp_path, eval_max_tokens=64)
    assert (config.max_tokens, config.eval_sampling.max_tokens) == (8, 64)
    files = RunFiles(config.log_path)
    files.ensure()
    test, _ = await attrs.evolve(config.dataset_builder, test_problems=None,
                                 problems=_problems(6), batch_size=6)()  # fmt: skip
    metrics = await evaluate_split(config, files, test, TextClient(_reply(8)), step=0)
    # cut off at the training limit (8), not at the evals' (64): nothing to re-measure
    assert metrics["test/env/all/truncated"] == 0.0 and "test_uncut/max_tokens" not in metrics
    files.append_metrics(
        {"step": 0, **metrics, **{k.replace("test/", "test_final/"): v for k, v in metrics.items()}}
    )
    assert run_claim(config, files).before.max_tokens == 64
