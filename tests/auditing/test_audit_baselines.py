"""Issue 44: baselines read any list the prompt offers, and every guess is judged the way
the env judges a reply (its parser, its check, its reward), in the audit and the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lenient_envs

import lenient_envs as envs

from mint_envkit.auditing import audit
from mint_envkit.cli import main

ENVS = str(Path(__file__).parent / "lenient_envs.py")
OFFLINE = ["--sample-model", "none"]


@pytest.mark.parametrize(
    ("style", "name"),
    [
        ("numbered", "third option_text"),
        ("bullets", "third listed"),
        ("phrase", "third alternative"),
    ],
)
async def test_options_in_any_list_are_candidates_of_the_probes_and_baselines(style, name):
    # the case: the animal is the third of four numbered lines on 70% of problems
    report = await audit(envs.options_builder(style))
    assert (report.baseline_correct, report.baseline_name) == (0.7, name)
    options = next(p for p in report.probes if p.name == "enumerate_options")
    assert "horse" in options.example and options.mean_reward == 0.0  # every option listed
    # and a position right on 7 of 10 problems where a blind pick gets 25% is a shortcut
    failing = [f for f in report.findings if f.fails]
    assert [(f.kind, f.probe) for f in failing] == [("shortcut", name)], report.table()


@pytest.mark.parametrize(
    ("builder", "constant"),
    [
        (envs.lower_capital_builder, "Paris"),  # the docs' CapitalEnv: a lower-casing parser
        (envs.word_number_builder, "three"),  # a parser that reads "three" as "3"
    ],
    ids=["lower-case", "words-to-digits"],
)
async def test_a_baseline_guess_goes_through_the_env_parser(builder, constant):
    report = await audit(builder)
    # half the answers are the constant: right on 50%, not 0% (check on the raw guess)
    assert (report.baseline_correct, report.baseline_name) == (0.5, f"constant {constant!r}")
    # so the most common answer is no "shortcut" above the baseline
    assert not [f for f in report.findings if f.kind == "warning" and f.probe == "most_common"]
    assert report.ok, report.table()


async def test_a_plain_function_reward_keeps_its_baseline_and_says_what_it_used():
    report = await audit(envs.plain_reward_builder)
    assert report.basis == "reward" and report.baseline_correct == 0.6
    table = report.table()
    assert "best trivial baseline: 60.0% earn the correct reply's reward (constant 'no')" in table
    correct = next(p for p in report.probes if p.name == "correct")
    assert correct.correct_rate == 1.0  # right: earns the correct reply's reward


def test_exit_codes_pass_findings_usage_and_the_audit_failing(capsys, tmp_path, monkeypatch):
    assert main(["audit", f"{ENVS}:strict_city_builder", *OFFLINE]) == 0
    assert main(["audit", f"{ENVS}:raising_builder", *OFFLINE]) == 1
    out = capsys.readouterr()
    assert "CRASH: the env raises ValueError" in out.out and "Traceback" not in out.err
    broken = tmp_path / "broken_env.py"
    broken.write_text("from mint_envkit import no_such_name\n")
    assert main(["audit", f"{broken}:builder", *OFFLINE]) == 2
    assert "cannot import" in capsys.readouterr().err
    unbuildable = tmp_path / "unbuildable_env.py"
    unbuildable.write_text(
        "from mint_envkit import DatasetBuilder, SingleTurnEnv\n"
        "class NoInit(SingleTurnEnv):\n"
        "    def __init__(self, **problem):\n"
        "        raise KeyError('unit')\n"
        "builder = DatasetBuilder(env=NoInit, problems=[{'question': '2+3?', 'answer': '5'}],"
        " batch_size=1, group_size=1, model_name='mint-envkit/tiny-qwen3')\n"
    )
    assert main(["audit", f"{unbuildable}:builder", *OFFLINE]) == 2
    assert "the env cannot be built or opened" in capsys.readouterr().err

    async def fails(*args, **kwargs):
        raise ZeroDivisionError("a bug in the audit")

    monkeypatch.setattr("mint_envkit.auditing.audit", fails)
    assert main(["audit", f"{ENVS}:strict_city_builder", *OFFLINE]) == 3
    err = capsys.readouterr().err
    assert "ZeroDivisionError: a bug in the audit" in err and "Traceback" in err


def test_a_negative_search_is_a_usage_error(capsys):
    assert main(["audit", f"{ENVS}:strict_city_builder", *OFFLINE, "--search", "-1"]) == 2
    assert "--search must be >= 0" in capsys.readouterr().err
