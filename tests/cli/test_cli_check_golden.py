"""``mint-envkit check --record FILE`` / ``--replay FILE``: golden transcripts.

Each test records episodes of an env with scripted replies, then replays the file:
unchanged envs exit 0; an env whose reward, ``correct``, parse status or turns moved
exits 1 with a row per change naming the transcript; a file that is not a golden
file exits 2 naming the file and the line. The envs live in a module written to
``tmp_path`` (loaded as ``path.py:NAME``, executed again on every load, so rewriting
the file between record and replay changes the env), or in ``tests/shared_envs.py``.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

import mint_envkit
from mint_envkit import exact
from mint_envkit.cli import main
from mint_envkit.replay.golden import FORMAT
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv

ENVS = '''
"""Envs for the golden-transcript tests."""

from mint_envkit import (
    DatasetBuilder, Feedback, MultiTurnEnv, Parser, SingleTurnEnv, choice,
)


def yes_or_no(text):
    word = text.strip().strip(".!").lower()
    return word if word in ("yes", "no") else None


class YesNoEnv(SingleTurnEnv):
    system_prompt = "Answer yes or no."
    parser = Parser.from_function(yes_or_no)
    reward_incorrect = REWARD_INCORRECT


class ChoiceEnv(SingleTurnEnv):
    system_prompt = "Answer with the letter of the right option."
    parser = choice(OPTIONS)


choice_builder = DatasetBuilder(
    env=ChoiceEnv,
    problems=[
        {"question": "2 + 2? (A) 3 (B) 4 (C) 5", "answer": "B"},
        {"question": "Capital of Peru? (A) Lima (B) Quito (C) La Paz", "answer": "A"},
    ],
    batch_size=2,
    group_size=3,
    model_name="mint-envkit/tiny-qwen3",
    shuffle=False,
)


class CountdownEnv(MultiTurnEnv):
    """Count down to 0, one number per turn; no notion of `correct`."""

    max_turns = 4

    async def respond(self, message):
        text = message["content"].strip()
        if text == "0":
            return Feedback(reward=DONE_REWARD, done=True)
        return Feedback(reply="Lower.", reward=-0.1, done=text == STOP_AT)


class BrokenEnv(SingleTurnEnv):
    def score(self, message):
        if BROKEN:
            raise RuntimeError("the scorer broke")
        return super().score(message)
'''

DEFAULTS = {
    "REWARD_INCORRECT": "0.0",
    "OPTIONS": '"ABC"',
    "DONE_REWARD": "1.0",
    "STOP_AT": '"never"',
    "BROKEN": "False",
}
REPO = Path(__file__).resolve().parents[2]
ROW_RE = re.compile(r"^  (?P<index>\d+)\s+(?P<line>\d+)\s+(?P<rest>.*)$", re.MULTILINE)


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch):
    """``check path.py:NAME`` adds the file's folder to ``sys.path`` and a private module."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = set(sys.modules)
    yield
    for name in set(sys.modules) - saved:
        if name.startswith("_mint_envkit_check_"):
            del sys.modules[name]


@pytest.fixture
def envs(tmp_path):
    """The envs module, written with the defaults; call it with constants to write it again."""
    path = tmp_path / "golden_envs.py"

    def write(**values: str) -> Path:
        text = textwrap.dedent(ENVS)
        for name, value in {**DEFAULTS, **values}.items():
            text = text.replace(name, value)
        path.write_text(text, encoding="utf-8")
        return path

    write()
    return write


def spec(path: Path, name: str) -> str:
    return f"{path}:{name}"


def invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def record(capsys, golden: Path, *argv: str) -> list[dict]:
    code, out, err = invoke(["check", *argv, "--record", str(golden)], capsys)
    assert code == 0, out + err
    assert f"to {golden} (re-score them with: mint-envkit check --replay {golden})" in out
    return [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]


def replay(capsys, golden: Path, *argv: str) -> tuple[int, str, str]:
    return invoke(["check", "--replay", str(golden), *argv], capsys)


def changes(out: str) -> list[tuple[int, int, list[str]]]:
    """(transcript index, line, [problem..., field, recorded, replayed]) of each table row."""
    return [
        (int(m["index"]), int(m["line"]), re.split(r"\s{2,}", m["rest"]))
        for m in ROW_RE.finditer(out)
    ]


# ------------------------------------------------------------------ record, replay


def test_record_writes_a_header_and_one_line_per_episode(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    problem = json.dumps(ARITHMETIC_PROBLEM)
    lines = record(capsys, golden, "shared_envs:ArithmeticEnv", "--problem", problem)

    header, *records = lines
    assert header["format"] == FORMAT and header["format_version"] == 1
    assert header["builder"] == "shared_envs:ArithmeticEnv"
    assert header["mint_envkit"] == mint_envkit.__version__ and header["transcripts"] == 3
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", header["time"])
    assert [(r["replies"], r["reward"], r["correct"], r["parse_status"]) for r in records] == [
        (["5"], 1.0, 1.0, "ok"),
        (["0"], -0.25, 0.0, "ok"),
        (["I am not sure."], -0.5, 0.0, "no_match"),
    ]
    first = records[0]
    assert first["problem"] == ARITHMETIC_PROBLEM
    assert first["env_class"] == "shared_envs:ArithmeticEnv"
    assert (first["group"], first["env"], first["turns"]) == (0, 0, 1)
    assert (first["model"], first["renderer"]) == ("mint-envkit/tiny-qwen3", "qwen3")
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert first["messages"][-1]["content"] == "5"
    assert first["metrics"]["correct"] == 1.0 and first["metrics"]["parsed"] == 1.0


def test_replay_of_an_unchanged_env_exits_0(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    second = json.dumps({"question": "What is 3 * 4?", "answer": "12"})
    argv = ["shared_envs:ArithmeticEnv", "--problem", json.dumps(ARITHMETIC_PROBLEM)]
    record(capsys, golden, *argv, "--problem", second, "--reply", "5", "--reply", "12")

    code, out, err = replay(capsys, golden)

    assert (code, err) == (0, "")
    assert out.startswith(
        f"replay {golden}: 6 transcript(s) of shared_envs:ArithmeticEnv, all match "
        "(reward, correct, parse_status, turns; recorded "
    )
    assert changes(out) == []


def test_replay_names_the_transcript_when_the_parser_changes(tmp_path, monkeypatch, capsys):
    golden = tmp_path / "golden.jsonl"
    record(capsys, golden, "shared_envs:ArithmeticEnv", "--problem", json.dumps(ARITHMETIC_PROBLEM))
    monkeypatch.setattr(ArithmeticEnv, "parser", exact())  # "I am not sure." now parses

    code, out, _err = replay(capsys, golden)

    assert code == 1
    assert out.startswith(f"replay {golden}: 1 of 3 transcript(s) of shared_envs:ArithmeticEnv")
    assert "transcript  line  problem" in out
    assert changes(out) == [
        (2, 4, ["What is 2 + 3?", "reward", "-0.5", "-0.25"]),
        (2, 4, ["What is 2 + 3?", "parse_status", "no_match", "ok"]),
    ]


# ------------------------------------------------------------- yes/no, multiple choice


def test_yes_no_env_replays_and_a_new_reward_is_named(envs, tmp_path, capsys):
    golden = tmp_path / "yes_no.jsonl"
    path = envs()
    problem = json.dumps({"question": "Is 7 prime?", "answer": "yes"})
    argv = [spec(path, "YesNoEnv"), "--problem", problem]
    records = record(capsys, golden, *argv, "--reply", "Yes.", "--reply", "no", "--reply", "maybe")[
        1:
    ]
    assert [(r["reward"], r["correct"], r["parse_status"]) for r in records] == [
        (1.0, 1.0, "ok"),
        (0.0, 0.0, "ok"),
        (0.0, 0.0, "no_match"),
    ]
    assert records[0]["env_class"].endswith("golden_envs.py:YesNoEnv")
    assert replay(capsys, golden)[0] == 0

    envs(REWARD_INCORRECT="-0.5")  # also the unparsed reward, which follows it
    code, out, _err = replay(capsys, golden)

    assert code == 1
    assert "2 of 3 transcript(s)" in out
    assert changes(out) == [
        (1, 3, ["Is 7 prime?", "reward", "0.0", "-0.5"]),
        (2, 4, ["Is 7 prime?", "reward", "0.0", "-0.5"]),
    ]


def test_multiple_choice_builder_replays_each_group(envs, tmp_path, capsys):
    golden = tmp_path / "choice.jsonl"
    path = envs()
    records = record(capsys, golden, spec(path, "choice_builder"))[1:]
    assert [(r["group"], r["env"], r["replies"], r["reward"]) for r in records] == [
        (0, 0, ["B"], 1.0),
        (0, 1, ["0"], 0.0),
        (0, 2, ["I am not sure."], 0.0),
        (1, 0, ["A"], 1.0),
        (1, 1, ["0"], 0.0),
        (1, 2, ["I am not sure."], 0.0),
    ]
    assert replay(capsys, golden)[0] == 0

    envs(OPTIONS='"AC"')  # B is no option any more
    code, out, _err = replay(capsys, golden)

    assert code == 1
    assert "1 of 6 transcript(s)" in out
    assert changes(out) == [
        (0, 2, ["2 + 2? (A) 3 (B) 4 (C) 5", "reward", "1.0", "0.0"]),
        (0, 2, ["2 + 2? (A) 3 (B) 4 (C) 5", "correct", "1", "0"]),
        (0, 2, ["2 + 2? (A) 3 (B) 4 (C) 5", "parse_status", "ok", "no_match"]),
    ]


# ------------------------------------------------------------------------ multi-turn


def test_multi_turn_env_replays_every_turn_and_records_no_correct(envs, tmp_path, capsys):
    golden = tmp_path / "countdown.jsonl"
    path = envs()
    argv = [spec(path, "CountdownEnv"), "--problem", json.dumps({"question": "Count from 2."})]
    argv += ["--reply", '["2", "1", "0"]', "--reply", '["1", "0"]', "--group-size", "2"]
    records = record(capsys, golden, *argv)[1:]
    assert [(r["replies"], r["turns"], r["correct"], r["parse_status"]) for r in records] == [
        (["2", "1", "0"], 3, None, None),
        (["1", "0"], 2, None, None),
    ]
    assert [round(r["reward"], 6) for r in records] == [0.8, 0.9]
    assert [m["role"] for m in records[1]["messages"]] == ["user", "assistant", "user", "assistant"]
    assert replay(capsys, golden)[0] == 0

    envs(STOP_AT='"1"')  # the episode now ends at "1", before the recorded "0"
    code, out, _err = replay(capsys, golden)

    assert code == 1
    rows = [(i, row[-3:]) for i, _line, row in changes(out)]
    assert rows == [
        (0, ["reward", "0.8", "-0.2"]),
        (0, ["turns", "3", "2"]),
        (1, ["reward", "0.9", "-0.1"]),
        (1, ["turns", "2", "1"]),
    ]
    assert all(row[0] == "Count from 2." for _i, _line, row in changes(out))


def test_tool_env_under_two_renderers_replays_each_renderers_turns(tmp_path, capsys):
    golden = tmp_path / "calculator.jsonl"
    call = '<tool_call>{"name": "calculate", "arguments": {"expression": "2 + 3"}}</tool_call>'
    argv = [f"{REPO / 'examples' / 'calculator_tools.py'}:CalculatorEnv"]
    argv += ["--problem", json.dumps(ARITHMETIC_PROBLEM), "--reply", json.dumps([call, "5"])]
    argv += ["--reply", "4", "--group-size", "2"]
    argv += ["--renderer", "qwen3", "--renderer", "qwen3_disable_thinking"]
    records = record(capsys, golden, *argv)[1:]
    assert [(r["renderer"], r["env"], r["turns"], r["reward"]) for r in records] == [
        ("qwen3", 0, 2, 1.0),
        ("qwen3", 1, 1, 0.0),
        ("qwen3_disable_thinking", 0, 2, 1.0),
        ("qwen3_disable_thinking", 1, 1, 0.0),
    ]
    roles = [m["role"] for m in records[0]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert records[0]["messages"][2]["tool_calls"][0]["function"]["name"] == "calculate"
    assert records[0]["messages"][3]["content"] == "5"

    code, out, _err = replay(capsys, golden)

    assert code == 0, out
    assert "4 transcript(s)" in out and "all match" in out


def test_an_env_that_now_raises_is_a_change_not_a_crash(envs, tmp_path, capsys):
    golden = tmp_path / "broken.jsonl"
    path = envs()
    argv = [spec(path, "BrokenEnv"), "--problem", json.dumps(ARITHMETIC_PROBLEM), "--reply", "5"]
    record(capsys, golden, *argv, "--group-size", "1")
    envs(BROKEN="True")

    code, out, _err = replay(capsys, golden)

    assert code == 1
    [(index, line, row)] = changes(out)
    assert (index, line, row[:3]) == (0, 2, ["What is 2 + 3?", "error", "none"])
    assert "RuntimeError: the scorer broke" in row[3]


def test_replay_takes_another_target_over_the_headers(envs, tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    argv = ["shared_envs:ArithmeticEnv", "--problem", json.dumps(ARITHMETIC_PROBLEM)]
    record(capsys, golden, *argv, "--reply", "0", "--group-size", "1")

    code, out, _err = replay(capsys, golden, spec(envs(), "YesNoEnv"))

    assert code == 1
    assert "of " + spec(envs(), "YesNoEnv") in out
    assert [row[-3:] for _i, _line, row in changes(out)] == [
        ["reward", "-0.25", "0.0"],
        ["parse_status", "ok", "no_match"],
    ]


# ----------------------------------------------------------------------- bad files


def _golden_lines(tmp_path, capsys) -> tuple[Path, list[str]]:
    golden = tmp_path / "golden.jsonl"
    argv = ["shared_envs:ArithmeticEnv", "--problem", json.dumps(ARITHMETIC_PROBLEM)]
    record(capsys, golden, *argv, "--group-size", "2")
    return golden, golden.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: [*lines[:2], lines[2][:40]], "line 3: not JSON"),
        (lambda lines: [lines[0], "[1, 2]", lines[2]], "line 2: expected a transcript"),
        (
            lambda lines: [lines[0], lines[1].replace('"replies"', '"replys"'), lines[2]],
            "line 2: the transcript has no 'replies'",
        ),
        (
            lambda lines: [
                lines[0],
                lines[1],
                lines[2].replace('"reward": ', '"reward": "x", "_": '),
            ],
            "line 3: 'reward' must be int or float, got 'x'",
        ),
        (lambda lines: ['{"builder": "x:y"}', *lines[1:]], "line 1: expected the header line"),
        (lambda lines: lines[:2], "the header says 2 transcripts but the file holds 1"),
        (lambda lines: lines[:1], "holds no transcripts, only its header"),
        (lambda lines: [], "is empty"),
        (
            lambda lines: [lines[0], lines[1], lines[2].replace("2 + 3", "2 + 4")],
            "line 3: its problem differs from line 2's, in the same group 0",
        ),
    ],
    ids=[
        "cut-short",
        "not-an-object",
        "missing-field",
        "wrong-type",
        "no-header",
        "count",
        "header-only",
        "empty",
        "group-problems",
    ],
)
def test_a_bad_golden_file_exits_2_naming_the_file_and_line(edit, message, tmp_path, capsys):
    golden, lines = _golden_lines(tmp_path, capsys)
    golden.write_text("".join(line + "\n" for line in edit(lines)), encoding="utf-8")

    code, out, err = replay(capsys, golden)

    assert code == 2
    assert out == ""
    assert err.startswith(f"mint-envkit check: {golden}")
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_missing_golden_file_exits_2(tmp_path, capsys):
    code, _out, err = replay(capsys, tmp_path / "nowhere.jsonl")

    assert code == 2
    assert err.strip() == f"mint-envkit check: no such golden file: {tmp_path / 'nowhere.jsonl'}"


@pytest.mark.parametrize(
    "extra", [["--problem", "{}"], ["--reply", "5"], ["--renderer", "qwen3"], ["--local"]]
)
def test_replay_refuses_options_its_file_decides(extra, tmp_path, capsys):
    code, _out, err = replay(capsys, tmp_path / "golden.jsonl", *extra)

    assert code == 2
    assert "--replay takes the problems, replies, model and renderers from its file" in err
    assert extra[0] in err


def test_record_and_replay_together_or_no_target_are_usage_errors(tmp_path, capsys):
    golden = str(tmp_path / "golden.jsonl")
    code, _out, err = invoke(["check", "x:y", "--record", golden, "--replay", golden], capsys)
    assert code == 2 and "not allowed with argument" in err

    code, _out, err = invoke(["check"], capsys)
    assert code == 2 and "give the env or builder to check (MODULE:NAME), or --replay FILE" in err
