"""``mint-envkit eval``: a table of figures, the files, comparisons, and readable errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mint_envkit.cli import main
from mint_envkit.rendering import TINY_MODEL_NAME

EXAMPLE = f"{Path(__file__).resolve().parents[2] / 'examples' / 'arithmetic_env.py'}:ArithmeticEnv"
PROBLEMS = ["--problem", '{"question": "What is 2 + 3?", "answer": "5"}']
PROBLEMS += ["--problem", '{"question": "What is 4 + 4?", "answer": "8"}']


def _args(server, out, *more):
    return [
        "eval",
        EXAMPLE,
        "--model",
        TINY_MODEL_NAME,
        *PROBLEMS,
        "--samples",
        "2",
        "--max-tokens",
        "6",
        "--base-url",
        server.base_url,
        "--backend",
        "local",
        "--out",
        str(out),
        *more,
    ]


@pytest.mark.integration
def test_eval_prints_the_figures_and_writes_the_files(tmp_path, tiny_local_server, capsys):
    assert main(_args(tiny_local_server, tmp_path / "ev")) == 0
    out, err = capsys.readouterr()
    assert "on 2 problems x 2 samples (from --problem, local backend, seed 0, reply limit" in out
    for row in ("mean reward", "pass@1", "pass@2", "parse failures"):
        assert row in out
    assert "eval base: 2/2 problems" in err
    assert "split" not in out.splitlines()[0]  # --problem given: no split of a builder
    assert (tmp_path / "ev" / "view.html").is_file() and "view.html" in out
    lines = (tmp_path / "ev" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["problem"]["answer"] for line in lines] == ["5", "8"]


@pytest.mark.integration
def test_compare_puts_base_and_checkpoint_side_by_side(tmp_path, tiny_local_server, capsys):
    import mint

    service = mint.ServiceClient(base_url=tiny_local_server.base_url, api_key="sk-test")
    training = service.create_lora_training_client(base_model=TINY_MODEL_NAME, rank=4)
    path = training.save_weights_for_sampler("cli-eval").result().path
    service.holder.close()
    argv = _args(tiny_local_server, tmp_path / "cmp", "--checkpoint", path, "--compare")
    assert main([*argv, "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "metric" in out and "base" in out and "cli-eval" in out and "cli-eval-base" in out
    # an untrained adapter samples like the base model on the same seeds: every problem ties
    assert "correct): cli-eval better on 0, worse on 0, tied on 2" in out
    assert "reward): cli-eval better on 0, worse on 0, tied on 2" in out
    assert "not a significance test" in out
    # the before/after claim: the base is cut off at this limit (the random model), so the
    # line says so, and that no limit up to 8x was found where it is not
    claim = next(line for line in out.splitlines() if line.startswith("cli-eval vs base: "))
    assert "BASE TRUNCATED" in claim and "compares reply lengths, not the task" in claim
    assert "best baseline" in out  # the baseline's name row
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    assert [run["label"] for run in summary["runs"]] == ["base", "cli-eval"]


@pytest.mark.integration
def test_a_missing_checkpoint_exits_2_naming_it(tmp_path, tiny_local_server, capsys):
    missing = "tinker://nope/sampler_weights/x"
    argv = _args(tiny_local_server, tmp_path / "x", "--checkpoint", missing)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert missing in err and "mint-envkit checkpoints list" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "nowhere/env.py:Env", "--model", "m"], "no such file: nowhere/env.py"),
        (["eval", "no_colon", "--model", "m"], "expected MODULE:NAME"),
        (["eval", EXAMPLE, "--model", "m"], "needs problems"),
        (["eval", EXAMPLE, "--model", "m", *PROBLEMS, "--samples", "0"], "--samples must be"),
        (["eval", EXAMPLE, "--model", "m", "--problem", "{bad"], "is not JSON"),
        (["eval", EXAMPLE, *PROBLEMS], "needs model_name"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.integration
def test_a_model_the_backend_does_not_serve_is_a_message_not_a_traceback(
    tmp_path, tiny_local_server, capsys
):
    """The server's 404 (which names the model and the fix) is the whole output, rc 2."""
    argv = _args(tiny_local_server, tmp_path / "m")
    argv[argv.index(TINY_MODEL_NAME)] = "Qwen/Qwen3-0.6B-not-here"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mint-envkit eval: ") and "Traceback" not in err
    assert "unknown base model 'Qwen/Qwen3-0.6B-not-here'" in err and "--model" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.integration
def test_a_problems_file_is_named_not_called_split_train(tmp_path, tiny_local_server, capsys):
    problems = tmp_path / "mine.jsonl"
    problems.write_text('{"question": "What is 2 + 3?", "answer": "5"}\n')
    argv = [a for a in _args(tiny_local_server, tmp_path / "f", "--no-report") if a not in PROBLEMS]
    assert main([*argv, "--problems", str(problems)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"on 1 problems x 2 samples (from {problems}, local backend" in first


@pytest.mark.integration
def test_the_documented_builder_spec_evaluates(tmp_path, tiny_local_server, capsys, monkeypatch):
    """docs/reference.md and this command's help evaluate examples/rl_hyperparameters.py:builder."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    argv = ["eval", "examples/rl_hyperparameters.py:builder", "--model", TINY_MODEL_NAME]
    argv += ["--samples", "1", "--limit", "1", "--max-tokens", "4", "--no-report"]
    argv += ["--base-url", tiny_local_server.base_url, "--backend", "local"]
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert "on 1 problems x 1 samples (split test, local backend" in capsys.readouterr().out
