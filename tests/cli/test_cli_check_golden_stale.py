"""Issue 48 item 6: golden transcripts carry a fingerprint of what produced them (the
env's source, problems, parser, renderer, model); replaying them against a changed env
says "stale: re-record" with the difference, even where the recorded replies still score
as recorded."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from mint_envkit.cli import main

MODULE = """
from mint_envkit import DatasetBuilder, SingleTurnEnv, first_number, last_number


class SumEnv(SingleTurnEnv):
    system_prompt = "PROMPT"
    parser = PARSER


builder = DatasetBuilder(
    env=SumEnv,
    problems=[{"question": f"What is {a} + QUESTION?", "answer": str(a + 1)} for a in range(3)],
    batch_size=3,
    group_size=2,
    model_name="MODEL",
    shuffle=False,
)
"""
DEFAULTS = {
    "PROMPT": "Reply with the sum.",
    "PARSER": "first_number",
    "QUESTION": "1",
    "MODEL": "mint-envkit/tiny-qwen3",
}


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = set(sys.modules)
    yield
    for name in set(sys.modules) - saved:
        if name.startswith("_mint_envkit_check_"):
            del sys.modules[name]


def _write(path, **changes):
    text = textwrap.dedent(MODULE)
    for name, value in {**DEFAULTS, **changes}.items():
        text = text.replace(name, value)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({}, None),
        ({"QUESTION": "2"}, "the problems: 3 recorded (sha "),
        ({"PROMPT": "Add them."}, "the env's source changed (sha "),
        ({"PARSER": "last_number"}, "the parser: 'first_number' -> 'last_number'"),
        (
            {"MODEL": "mint-envkit/smollm2-135m-instruct"},
            "the model: 'mint-envkit/tiny-qwen3' -> 'mint-envkit/smollm2-135m-instruct'",
        ),
    ],
    ids=["unchanged", "problems", "prompt", "parser", "model"],
)
def test_a_changed_env_makes_its_golden_transcripts_stale(change, said, tmp_path, capsys):
    """The trap: the scaffold's golden test passed after every problem, the prompt, the
    parser and the model were replaced."""
    module, golden = tmp_path / "summing.py", tmp_path / "golden.jsonl"
    _write(module)
    assert main(["check", f"{module}:builder", "--reply", "2", "--record", str(golden)]) == 0
    header = json.loads(golden.read_text().splitlines()[0])
    assert header["fingerprint"]["parser"] == "first_number"
    assert header["fingerprint"]["problems"]["count"] == 3
    capsys.readouterr()
    _write(module, **change)
    code = main(["check", "--replay", str(golden)])
    out = capsys.readouterr().out
    if said is None:
        assert code == 0 and "stale" not in out
        return
    assert code == 1, out
    assert f"stale: re-record (mint-envkit check {module}:builder --record {golden})" in out
    assert said in out
