"""The distillation and SFT-then-RL examples run end to end offline (on the small tiny model)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import distill_arithmetic
import sft_then_rl

from mint_envkit.runs.files import RunFiles

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"


def test_the_privileged_env_shows_its_teacher_the_answer():
    env = distill_arithmetic.PrivilegedArithmeticEnv(question="What is 2 + 3?", answer="5")
    opening = [
        {"role": "system", "content": "Reply with only the final number."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    view = env.teacher_messages(opening)
    assert view[0]["content"] == "Reply with only the final number. The correct answer is 5."
    assert view[1:] == opening[1:]
    assert opening[0]["content"] == "Reply with only the final number."  # unchanged
    no_system = env.teacher_messages(opening[1:])
    assert no_system[0] == {"role": "system", "content": "The correct answer is 5."}


async def test_distill_arithmetic_runs(tmp_path, capsys):
    args = distill_arithmetic.parse_args(
        ["--steps", "2", "--model", MODEL, "--out", str(tmp_path / "run")]
    )
    await distill_arithmetic.main(args)
    out = capsys.readouterr().out
    assert f"{MODEL} before: correct" in out and f"{MODEL} after 2 steps: correct" in out
    assert "reverse KL per reply token, by step:" in out
    metrics = RunFiles(tmp_path / "run").metrics()
    assert [m["step"] for m in metrics] == [0, 1]
    assert all(m["distill/reverse_kl"] > 0 for m in metrics)  # the teacher knows more


async def test_sft_then_rl_runs(tmp_path, capsys):
    args = sft_then_rl.parse_args(
        ["--steps", "1", "--problems", "4", "--model", MODEL, "--out", str(tmp_path)]
    )
    await sft_then_rl.main(args)
    out = capsys.readouterr().out
    assert "fine-tuning on 16 episodes" in out  # 4 problems x 4 samples, all kept (tiny model)
    sft = RunFiles(tmp_path / "sft").last_checkpoint()
    config = json.loads((tmp_path / "rl" / "config.json").read_text())
    assert config["load_checkpoint_path"] == sft["state_path"]
    assert [m["step"] for m in RunFiles(tmp_path / "rl").metrics()] == [0]
