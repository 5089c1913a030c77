"""On-policy distillation through the real SDK against the embedded backend."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv, first_number
from mint_envkit.errors import ConfigError
from mint_envkit.rendering import get_tokenizer
from mint_envkit.rl import run_distillation
from mint_envkit.runs.files import RunFiles

MODEL = "mint-envkit/tiny-qwen3-small"


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.25


class ShownTheAnswer(AddEnv):
    def teacher_messages(self, messages):
        return [{"role": "system", "content": f"The answer is {self.answer}."}, *messages[1:]]


def _problems(n: int) -> list[dict[str, str]]:
    return [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(n)]


def _config(tmp_path: Path, server, env=AddEnv, **fields) -> Config:
    builder = DatasetBuilder(
        env=env,
        problems=_problems(4),
        test_problems=_problems(2),
        batch_size=2,
        group_size=2,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=6,  # the builder owns the reply limit
    )
    values = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "distill"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 2,
        "base_url": server.base_url,
        "backend": "local",
        "save_every": 0,
        **fields,
    }
    return Config(**values)


@pytest.mark.parametrize(("teacher", "temperature"), [("", 1.0), (None, 1.0), ("m", 0.0)])
async def test_bad_teacher_or_temperature_fails_before_any_work(
    tmp_path, phase_config, teacher, temperature
):
    with pytest.raises(ConfigError, match="run_distillation"):
        await run_distillation(phase_config, teacher=teacher, temperature=temperature)
    assert not Path(phase_config.log_path).exists()


@pytest.fixture
def sent(monkeypatch):
    """The reverse-KL datums the loop sends, captured on their way to the SDK."""
    import mint.mint as mint_mint

    calls: list[dict] = []
    real = mint_mint.forward_backward_reverse_kl_async

    async def spy(training, **kwargs):
        calls.append(kwargs)
        return await real(training, **kwargs)

    monkeypatch.setattr(mint_mint, "forward_backward_reverse_kl_async", spy)
    return calls


@pytest.mark.integration
async def test_a_privileged_teacher_reads_the_answer_and_the_students_reply(tmp_path, server, sent):
    # the random model is cut off at every limit: no uncut evals (tests/rl/test_evals.py)
    config = _config(tmp_path, server, env=ShownTheAnswer, eval_every=1, uncut_evals=False)
    result = await run_distillation(config, teacher=MODEL, temperature=1.0)
    assert result.steps == 2 and result.backend == "local"
    assert len(sent) == 2 and sent[0]["reference_model_path"] == MODEL
    tokenizer = get_tokenizer(MODEL)
    for datum in sent[0]["data"]:
        student = datum.student_input.to_ints()
        teacher = datum.reference_input.to_ints()
        weights = datum.weights.data
        reply = len([w for w in weights if w])
        assert weights == [0.0] * (len(student) - reply) + [1.0] * reply
        assert datum.target_tokens.data[: len(student) - 1] == student[1:]
        # the reply is the common suffix; only the teacher's prompt holds the answer
        shared = reply - 1  # the reply's tokens in the inputs (its last one is a target only)
        assert teacher[len(teacher) - shared :] == student[len(student) - shared :]
        assert len(teacher) != len(student)
        assert "The answer is" in tokenizer.decode(teacher)
        assert "The answer is" not in tokenizer.decode(student)
        assert "Reply with only" not in tokenizer.decode(teacher)  # the hook dropped it
    metrics = RunFiles(result.log_path).metrics()
    assert [m["step"] for m in metrics] == [0, 1]
    for step in metrics:
        assert step["distill/reverse_kl"] > 0
        assert step["env/all/reward/total"] is not None
        assert step["distill/replies"] == 4
    assert "test/env/all/reward/total" in metrics[0]
    assert "test_final/env/all/reward/total" in metrics[1]
    records = [
        json.loads(x) for x in RunFiles(result.log_path).rollouts_path.read_text().splitlines()
    ]
    assert {r["split"] for r in records} == {"train", "test", "test_final"}
    assert result.final_checkpoint["name"] == "final"
    saved = json.loads(RunFiles(result.log_path).config.read_text())
    assert saved["distill_teacher"] == MODEL


@pytest.mark.integration
async def test_the_base_model_as_its_own_teacher_has_zero_reverse_kl_before_training(
    tmp_path, server
):
    # A new LoRA adapter starts at zero: the student is the base model, so when the teacher
    # is the same base model reading the same tokens, KL(student || teacher) is exactly 0.
    result = await run_distillation(_config(tmp_path, server, max_steps=1), teacher=MODEL)
    assert result.final_metrics["distill/reverse_kl"] == pytest.approx(0.0, abs=1e-5)


@pytest.mark.integration
async def test_a_finished_run_resumes_without_training(tmp_path, server, sent):
    config = _config(tmp_path, server, max_steps=1)
    await run_distillation(config, teacher=MODEL)
    again = await run_distillation(config, teacher=MODEL)
    assert again.resumed_from == 1 and len(sent) == 1


@pytest.mark.integration
async def test_distillation_can_start_from_a_fine_tuned_checkpoint(tmp_path, server, capsys):
    from mint_envkit.rl import fine_tune_on_rollouts
    from mint_envkit.rl.sft import SupervisedExample

    config = _config(tmp_path, server, max_steps=1)
    sft = await fine_tune_on_rollouts(
        attrs.evolve(config, log_path=str(tmp_path / "sft")), [SupervisedExample([1, 2], [3])]
    )
    warm = attrs.evolve(config, load_checkpoint_path=sft.state_path)
    result = await run_distillation(warm, teacher=MODEL)
    assert result.steps == 1
    assert f"starting from the weights of {sft.state_path}" in capsys.readouterr().err
    # the student is no longer the base model, so its reverse KL to the base model is not 0
    assert result.final_metrics["distill/reverse_kl"] > 1e-4
