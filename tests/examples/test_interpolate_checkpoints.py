"""The interpolation example runs offline: two short runs, then a resumable sweep of their mixes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import interpolate_checkpoints as demo

from mint_envkit.runs.files import read_jsonl

pytestmark = pytest.mark.integration


def test_the_tiny_model_tasks_are_opposites():
    speak = demo.SpeakUpEnv(question="Item 1.", answer="")
    silent = demo.StaySilentEnv(question="Item 1.", answer="")
    for content, said in (("hello", 1.0), ("", 0.0)):
        message = {"role": "assistant", "content": content}
        assert speak.score(message).reward == said
        assert silent.score(message).reward == 1.0 - said


# Two 2-step runs and 3 evaluated points on the small tiny model: measured 12 s on 2 busy cores.
def test_the_example_trains_two_runs_and_sweeps_their_mixes(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--model", "mint-envkit/tiny-qwen3-small", "--steps", "2", "--out", str(out)]
    argv += ["--batch", "2", "--group", "2", "--max-tokens", "4", "--eval-n", "3"]
    argv += ["--samples", "2", "--grid", "0,0.5,1"]
    assert demo.main(argv) == 0
    printed = capsys.readouterr().out
    assert "c1p0-0p0" in printed and "c0p5-0p5" in printed and "pass@2" in printed
    records = read_jsonl(out / "sweep" / "results.jsonl")
    assert [r["coefficients"] for r in records] == [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]
    assert all(r["status"] == "ok" for r in records)
    assert (out / "sweep" / "interpolation.csv").is_file()
