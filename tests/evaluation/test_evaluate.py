"""Evaluating the tiny model through the SDK on the embedded backend; comparing a checkpoint."""

from __future__ import annotations

import json

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, MessageStepResult, evaluate, run_training
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation import comparison_table, evaluate_many
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import BackendSettings, SamplingSettings
from mint_envkit.runs.files import RunFiles
from mint_envkit.runs.record import AnswerFigures
from mint_envkit.view import write_report
from shared_envs import ArithmeticEnv, YesNoEnv, yes_no_problems

pytestmark = pytest.mark.integration

PROBLEMS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(3)]


class OddLengthEnv(ArithmeticEnv):
    """Correct when the reply has an odd number of characters: the untrained model's rewards
    vary within a group, so one training step changes the weights."""

    def score(self, message):
        hit = float(len(message.get("content") or "") % 2)
        return MessageStepResult(reward=hit, episode_done=True, metrics={"correct": hit})


def _options(server, seed=0):
    return {
        "model_name": TINY_MODEL_NAME,
        "samples": 4,
        "sampling": SamplingSettings(max_tokens=6, seed=seed),
        "backend": BackendSettings(base_url=server.base_url, backend="local"),
    }


async def test_an_evaluation_writes_results_summary_and_a_viewer_run(
    tmp_path, tiny_local_server, capsys
):
    out = tmp_path / "eval"
    result = await evaluate(
        ArithmeticEnv, problems=PROBLEMS, out_dir=str(out), **_options(tiny_local_server)
    )
    summary = result.summary
    assert (summary["problems"], summary["episodes"], summary["errors"]) == (3, 12, 0)
    assert set(summary["pass@"]) == {"1", "2", "4"} and summary["backend"] == "local"
    assert 0.0 <= result.pass_at(1) <= result.pass_at(2) <= result.pass_at(4) <= 1.0
    assert 0.0 <= result.parse_failure_rate <= 1.0
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2]
    assert {"problem", "replies", "rewards", "parse_status", "correct", "pass@"} <= set(lines[0])
    assert len(lines[0]["replies"]) == 4 and lines[0]["label"] == "base"
    assert json.loads((out / "summary.json").read_text())["pass@"] == summary["pass@"]
    episodes = (out / "base" / "rollouts.jsonl").read_text().splitlines()
    assert len(episodes) == 12 and all(json.loads(e)["split"] == "eval" for e in episodes)
    err = capsys.readouterr().err
    assert "eval base: started (3 problems)" in err and "eval base: finished 3/3 problems" in err
    assert summary["max_tokens"] == 6 and summary["samples"] == 4
    page = write_report(out).read_text()
    assert "eval/mean_reward" in page and lines[0]["replies"][0][:3] in page


async def test_a_fixed_seed_gives_the_same_samples(tmp_path, tiny_local_server, capsys):
    first = await evaluate(ArithmeticEnv, problems=PROBLEMS, **_options(tiny_local_server))
    capsys.readouterr()
    again = await evaluate(
        ArithmeticEnv,
        problems=PROBLEMS,
        label="again",
        quiet=True,
        out_dir=str(tmp_path),
        **_options(tiny_local_server),
    )
    # label and quiet hold without a client too (they were dropped on the way)
    assert (tmp_path / "again" / "rollouts.jsonl").is_file() and not (tmp_path / "base").exists()
    assert "eval " not in capsys.readouterr().err
    other = await evaluate(ArithmeticEnv, problems=PROBLEMS, **_options(tiny_local_server, seed=1))
    assert [p.replies for p in first.problems] == [p.replies for p in again.problems]
    assert [p.replies for p in first.problems] != [p.replies for p in other.problems]


async def test_a_checkpoint_against_the_base_model(tmp_path, tiny_local_server):
    builder = DatasetBuilder(
        env=OddLengthEnv,
        problems=PROBLEMS,
        batch_size=3,
        group_size=4,
        model_name=TINY_MODEL_NAME,
        score_truncated=True,
    )
    run = await run_training(
        Config(
            dataset_builder=attrs.evolve(builder, max_generation_tokens=6),
            model_name=TINY_MODEL_NAME,
            log_path=str(tmp_path / "run"),
            learning_rate=5e-2,
            lora_rank=4,
            max_steps=1,
            base_url=tiny_local_server.base_url,
            backend="local",
        )
    )
    final = run.final_checkpoint
    base, sampler, state = await evaluate_many(
        builder,
        checkpoints=[None, final["sampler_path"], final["state_path"]],
        out_dir=str(tmp_path / "compare"),
        **_options(tiny_local_server),
    )
    assert [r.summary["checkpoint"] for r in (base, sampler, state)] == [
        None,
        final["sampler_path"],
        final["state_path"],
    ]
    # the same weights (as sampler weights and as a training state) on the same seeds
    assert [p.replies for p in sampler.problems] == [p.replies for p in state.problems]
    assert [p.replies for p in sampler.problems] != [p.replies for p in base.problems]
    summary = json.loads((tmp_path / "compare" / "summary.json").read_text())
    assert len(summary["runs"]) == 3 and set(summary["per_problem"]) == {
        sampler.summary["label"],
        state.summary["label"],
    }
    assert sum(summary["per_problem"][sampler.summary["label"]]["reward"].values()) == 3
    assert len(write_report(tmp_path / "compare").read_text()) > 0


async def test_a_missing_checkpoint_says_how_to_list_them(tiny_local_server):
    with pytest.raises(ConfigError, match="one distinct name per checkpoint"):
        await evaluate_many(
            ArithmeticEnv,
            problems=PROBLEMS,
            checkpoints=[None, None],
            names=["a", "a"],
            **_options(tiny_local_server),
        )
    missing = "tinker://no-such-run/sampler_weights/final"
    with pytest.raises(ConfigError, match="mint-envkit checkpoints list") as err:
        await evaluate(
            ArithmeticEnv,
            problems=PROBLEMS,
            checkpoint=missing,
            **_options(tiny_local_server),
        )
    assert missing in str(err.value)
    with pytest.raises(ConfigError, match="not a tinker:// path"):
        await evaluate(
            ArithmeticEnv, problems=PROBLEMS, checkpoint="final", **_options(tiny_local_server)
        )


async def test_an_evaluation_reports_the_answer_figures(tmp_path, tiny_local_server):
    out = tmp_path / "eval"
    problems = yes_no_problems(no=3, yes=1)  # the always-"no" baseline is 0.75
    result = await evaluate(
        YesNoEnv, problems=problems, out_dir=str(out), **_options(tiny_local_server)
    )
    summary = result.summary
    keys = [f"answers/{field.name}" for field in attrs.fields(AnswerFigures)]
    assert set(keys) <= set(summary)
    assert summary["answers/baseline_correct"] == 0.75
    assert summary["answers/truncated"] == summary["truncated_rate"]
    assert 0 <= summary["answers/distinct"] <= 16 and 0.0 <= summary["answers/top_share"] <= 1.0
    assert summary["answers/entropy"] >= 0.0
    assert summary["answers/collapse"] in (0.0, 1.0)
    if summary["answers/beats_baseline"] == 1.0:  # beyond noise, so above it
        assert summary["correct"] > 0.75
    written = json.loads((out / "summary.json").read_text())
    assert {key: written[key] for key in keys} == {key: summary[key] for key in keys}
    line = json.loads((out / "base" / "metrics.jsonl").read_text())
    assert line["eval/answers/baseline_correct"] == 0.75
    table = comparison_table([result])
    for row in ("correct", "baseline correct", "distinct answers", "top answer", "collapse"):
        assert any(r.startswith(row + " ") for r in table.splitlines()), row


def _said_exactly(completion: str, answer: str) -> float:
    return float(completion.strip().lower() == str(answer).lower())


async def test_a_plain_function_reward_keeps_the_baseline_and_collapse_figures(tiny_local_server):
    """Issue 44: the first reward the docs teach reports no `correct`; the figures then
    judge a reply right when it earns the correct reply's reward, and say so."""

    class SaidEnv(YesNoEnv):
        reward_fn = _said_exactly

    result = await evaluate(
        SaidEnv, problems=yes_no_problems(no=3, yes=1), **_options(tiny_local_server)
    )
    summary = result.summary
    assert summary["correct"] is None  # the env reports none
    assert summary["answers/baseline_correct"] == 0.75
    assert summary["answers/beats_baseline"] in (0.0, 1.0)  # None before: dropped
    assert summary["answers/collapse"] in (0.0, 1.0)
    assert summary["answers/judged_by"] == "reward"
    assert summary["answers/reward_correct"] is not None
    assert result.headline().startswith("earning the correct reply's reward ")


async def test_the_loop_evals_report_the_answer_figures(tmp_path, tiny_local_server):
    """Every eval of the loop: before the first update (step 0) and the final one."""
    builder = DatasetBuilder(
        env=YesNoEnv,
        problems=yes_no_problems(no=2, yes=2),
        test_problems=yes_no_problems(no=3, yes=1),
        batch_size=2,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    run = await run_training(
        Config(
            dataset_builder=attrs.evolve(builder, max_generation_tokens=4),
            model_name=TINY_MODEL_NAME,
            log_path=str(tmp_path / "run"),
            learning_rate=1e-3,
            lora_rank=4,
            max_steps=1,
            eval_every=1,
            save_every=0,
            base_url=tiny_local_server.base_url,
            backend="local",
        )
    )
    (metrics,) = RunFiles(run.log_path).metrics()
    for split in ("test", "test_final"):
        assert metrics[f"{split}/env/all/answers/baseline_correct"] == 0.75
        texts = ("baseline_name", "top", "position", "judged_by")
        for field in attrs.fields(AnswerFigures):
            value = metrics.get(f"{split}/env/all/answers/{field.name}")
            kind = str if field.name in texts else int | float
            assert value is None or isinstance(value, kind), (split, field.name)
        assert metrics[f"{split}/env/all/answers/baseline_name"] == "constant 'no'"
        assert metrics[f"{split}/max_tokens"] == 4
