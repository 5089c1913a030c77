"""``mint-envkit rescore RUN_DIR ENV_SPEC``: a run's recorded replies scored by the env as it is now.

Each test writes a run folder the way a training step does (the envs' groups rolled out
with scripted replies through :func:`~mint_envkit.rollouts.run.rollout_groups`, one
``rollouts.jsonl`` line per episode from
:func:`~mint_envkit.rollouts.records.rollout_records`, ``config.json`` with the
builder's description), then rewrites the envs' module and rescores: an unchanged env
exits 0, a changed reward or parser exits 1 naming the records, bad input exits 2
naming the record and the fix. One test rescores what ``mint-envkit eval`` wrote from
the tiny model's sampled replies on the embedded backend.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.cli import main
from mint_envkit.evaluation.spec import load_target
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rendering.renderer import get_renderer
from mint_envkit.replay.runs import reply_text
from mint_envkit.rollouts.records import rollout_records
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import ScriptedPolicy
from mint_envkit.runs.files import RunFiles

ENVS = '''
"""Envs for the rescore tests."""

from mint_envkit import DatasetBuilder, Feedback, MultiTurnEnv, SingleTurnEnv, ToolEnv, tool
from mint_envkit import exact, first_number


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = PARSER
    reward_incorrect = REWARD_INCORRECT


PROBLEMS = [{"question": f"What is {a} + 2?", "answer": str(a + 2)} for a in range(4)]
add_builder = DatasetBuilder(env=AddEnv, problems=PROBLEMS, batch_size=2, group_size=3,
                             model_name="mint-envkit/tiny-qwen3", shuffle=False)


class CountdownEnv(MultiTurnEnv):
    """Count down to 0, one number per turn."""

    max_turns = 4

    async def respond(self, message):
        text = message["content"].strip()
        if text == "0":
            return Feedback(reward=DONE_REWARD, done=True)
        return Feedback(reply="Lower.", reward=-0.1, done=text == STOP_AT)


@tool
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return str(a + b)


class AdderEnv(ToolEnv):
    system_prompt = "Use the add tool, then reply with the number."
    tools = [add]
    parser = first_number
    max_turns = 3
'''

DEFAULTS = {
    "PARSER": "first_number",
    "REWARD_INCORRECT": "0.0",
    "DONE_REWARD": "1.0",
    "STOP_AT": '"never"',
}
REPLIES = ["<think>2 plus 2</think>4", "seven", "3"]
"""Each group's three replies: thinking then a number, no number, a number."""

ROW = re.compile(r"^  (?P<record>\d+)\s+(?P<step>\d+)\s+(?P<rest>\S.*)$", re.MULTILINE)


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch):
    """``path.py:NAME`` adds the file's folder to ``sys.path`` and a private module."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("MINT_ENVKIT_PROGRESS", "off")
    saved = set(sys.modules)
    yield
    for name in set(sys.modules) - saved:
        if name.startswith("_mint_envkit_check_"):
            del sys.modules[name]


@pytest.fixture
def envs(tmp_path):
    """The envs module, written with the defaults; call it with constants to write it again."""
    path = tmp_path / "rescore_envs.py"
    version = [0]

    def write(**values: str) -> Path:
        text = textwrap.dedent(ENVS)
        for name, value in {**DEFAULTS, **values}.items():
            text = text.replace(name, value)
        version[0] += 1  # a new size each time, so the module is imported again
        path.write_text(text + "\n" + "#" * version[0] + "\n", encoding="utf-8")
        return path

    write()
    return write


def write_run(
    folder: Path,
    builder: DatasetBuilder,
    replies: list,
    *,
    steps: int = 2,
    split: str = "train",
    end_with_stop: bool = True,
) -> Path:
    """A run folder as a training run writes it: config.json, one rollouts line per episode."""

    async def roll() -> None:
        train, _ = await builder()
        files = RunFiles(folder)
        files.ensure()
        files.write_config({"dataset_builder": builder.describe(), "max_steps": steps})
        policy = ScriptedPolicy(replies, end_with_stop=end_with_stop)
        for step in range(steps):
            rollouts = await rollout_groups(train.get_batch(step % len(train)), policy)
            files.append_rollouts(rollout_records(step, rollouts, {}, split))

    asyncio.run(roll())
    return folder


def builder_of(
    path: Path, name: str = "add_builder", problem: dict | None = None, **settings
) -> DatasetBuilder:
    """The module's builder, or one on a single problem for an env class of it."""
    builder = load_target(f"{path}:{name}")
    if not isinstance(builder, DatasetBuilder):
        problems = [problem or {"question": "What is 2 + 3?", "answer": "5"}]
        builder = DatasetBuilder(
            env=builder, problems=problems, model_name=TINY_MODEL_NAME, batch_size=1, **settings
        )
    return builder


def invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[list[str]]:
    """Each change row of the table: record, step, split, group, member, problem, field, ..."""
    return [[m["record"], m["step"], *re.split(r"\s{2,}", m["rest"])] for m in ROW.finditer(out)]


def counts(out: str) -> dict[str, str]:
    found = re.findall(r"^  (error|reward|correct|parse_status|turns)\s+(\d+ of \d+)$", out, re.M)
    return dict(found)


# ------------------------------------------------------------------ unchanged, changed


def test_an_unchanged_env_exits_0(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES)

    code, out, err = invoke(["rescore", str(run), f"{path}:AddEnv"], capsys)

    assert (code, err) == (0, "")
    assert out.splitlines()[0] == (
        f"rescore {run}/rollouts.jsonl with {path}:AddEnv: 12 record(s) in 4 group(s) "
        f"(model {TINY_MODEL_NAME}, renderer qwen3)"
    )
    assert counts(out) == {f: "0 of 12" for f in ("reward", "correct", "parse_status", "turns")}
    assert rows(out) == []
    assert out.splitlines()[-1] == (
        "rescore: none of the 12 record(s) changed (reward, correct, parse_status, turns): "
        "the env scores the recorded replies as the run did"
    )


def test_a_changed_reward_incorrect_is_reported_record_by_record(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES)
    envs(REWARD_INCORRECT="-0.5")
    report = tmp_path / "rescore.json"

    code, out, _err = invoke(
        ["rescore", str(run), f"{path}:AddEnv", "--show", "3", "--out", str(tmp_path)], capsys
    )

    assert code == 1
    # wrong and unparsed replies (10 of 12: "3" is right for 1 + 2, "4" for 2 + 2) moved
    assert counts(out) == {
        "reward": "10 of 12",
        "correct": "0 of 12",
        "parse_status": "0 of 12",
        "turns": "0 of 12",
    }
    assert "the first 3 of 10 change(s), recorded -> now:" in out
    assert rows(out) == [
        ["1", "0", "train", "0", "0", "What is 0 + 2?", "reward", "0.0", "-0.5"],
        ["2", "0", "train", "0", "1", "What is 0 + 2?", "reward", "0.0", "-0.5"],
        ["3", "0", "train", "0", "2", "What is 0 + 2?", "reward", "0.0", "-0.5"],
    ]
    assert out.splitlines()[-2:] == [
        "rescore: 10 of 12 record(s) changed (reward 10); check the new scores before "
        "training with this env",
        f"wrote {report}",
    ]
    saved = json.loads(report.read_text())
    assert (saved["records"], saved["changed_records"], saved["changed"]["reward"]) == (12, 10, 10)
    assert len(saved["changes"]) == 10  # every change, not only the ones shown
    first = saved["changes"][0]
    assert (first["record"], first["field"], first["recorded"], first["now"]) == (
        1,
        "reward",
        0.0,
        -0.5,
    )
    assert first["problem"] == {"question": "What is 0 + 2?", "answer": "2"}
    line = (run / "rollouts.jsonl").read_text().splitlines()[first["record"] - 1]
    assert json.loads(line)["member"] == 0  # the record number is the file's JSON line


def test_a_changed_parser_changes_parse_statuses(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES)
    envs(PARSER="exact()")  # "seven" now parses (a wrong answer); "4" and "3" still do

    code, out, _err = invoke(["rescore", str(run), f"{path}:add_builder"], capsys)

    assert code == 1
    assert counts(out)["parse_status"] == "4 of 12" and counts(out)["reward"] == "0 of 12"
    changed = [row for row in rows(out) if row[6] == "parse_status"]
    assert changed[0][6:] == ["parse_status", "no_match", "ok"]
    assert changed[0][:6] == ["2", "0", "train", "0", "1", "What is 0 + 2?"]
    assert "(parse_status 4)" in out.splitlines()[-1]


def test_split_and_limit_choose_the_records(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES)
    envs(REWARD_INCORRECT="-0.5")

    code, out, _err = invoke(
        ["rescore", str(run), f"{path}:AddEnv", "--split", "train", "--limit", "1"], capsys
    )
    assert code == 1
    assert "3 record(s) in 1 group(s)" in out.splitlines()[0]
    assert counts(out)["reward"] == "3 of 3"

    code, _out, err = invoke(["rescore", str(run), f"{path}:AddEnv", "--split", "test"], capsys)
    assert code == 2
    assert "has no records of split 'test'; its splits: train" in err


# ------------------------------------------------------------------ multi-turn, tools, cut-off


def test_multi_turn_episodes_replay_every_turn(tmp_path, envs, capsys):
    path = envs()
    scripts = [["2", "1", "0"], ["1", "0"]]
    run = write_run(
        tmp_path / "run",
        builder_of(path, "CountdownEnv", {"question": "Count down to 0."}, group_size=2),
        scripts,
    )
    assert invoke(["rescore", str(run), f"{path}:CountdownEnv"], capsys)[0] == 0

    envs(DONE_REWARD="2.0", STOP_AT='"1"')  # "1" now ends the episode, before any "0"
    code, out, _err = invoke(["rescore", str(run), f"{path}:CountdownEnv"], capsys)

    assert code == 1
    assert counts(out) == {
        "reward": "4 of 4",
        "correct": "0 of 4",
        "parse_status": "0 of 4",
        "turns": "4 of 4",
    }
    first = [row for row in rows(out) if row[0] == "1"]
    assert [row[6:] for row in first] == [["reward", "0.8", "-0.2"], ["turns", "3", "2"]]
    second = [row for row in rows(out) if row[0] == "2"]  # "1", "0": now ends at "1"
    assert [row[6:] for row in second] == [["reward", "0.9", "-0.1"], ["turns", "2", "1"]]


def test_tool_calls_and_thinking_are_replayed_as_the_model_wrote_them(tmp_path, envs, capsys):
    path = envs()
    call = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    scripts = [[f"<think>use the tool</think>{call}", "5"], ["<tool_call>{oops}</tool_call>", "5"]]
    run = write_run(tmp_path / "run", builder_of(path, "AdderEnv", group_size=2), scripts)
    lines = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    assert lines[0]["messages"][2]["tool_calls"] and lines[1]["messages"][2]["unparsed_tool_calls"]
    assert lines[0]["metrics"]["tool_calls"] == 1.0

    code, out, _err = invoke(["rescore", str(run), f"{path}:AdderEnv"], capsys)

    assert code == 0, out  # with the calls lost, tool_calls and the turns would differ


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "5", "thinking": "2 + 3 is 5"},
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_0",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "unparsed_tool_calls": [
                {"raw_text": "{oops}", "error": "the tool call is not JSON (...)"},
                {
                    "raw_text": '{"name": "add"',
                    "error": "<tool_call> was opened but never closed with </tool_call>",
                },
            ],
        },
    ],
)
def test_reply_text_is_what_the_renderer_parses_back_into_the_message(message):
    renderer = get_renderer("qwen3", TINY_MODEL_NAME)
    tokens = renderer.tokenizer.encode(reply_text(message), add_special_tokens=False)
    parsed, ok = renderer.parse_response([*tokens, *renderer.get_stop_sequences()])
    assert ok
    if "unparsed_tool_calls" in message:  # the errors' wording is the parser's
        raw = [c["raw_text"] for c in parsed.pop("unparsed_tool_calls")]
        assert raw == [c["raw_text"] for c in message["unparsed_tool_calls"]]
        message = {k: v for k, v in message.items() if k != "unparsed_tool_calls"}
    assert parsed == message


def test_cut_off_replies_are_replayed_cut_off(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES, end_with_stop=False)
    record = json.loads((run / "rollouts.jsonl").read_text().splitlines()[0])
    assert record["stop_reasons"] == ["length"] and record["logs"] == {"end": "truncated"}

    code, out, _err = invoke(["rescore", str(run), f"{path}:AddEnv"], capsys)

    assert code == 0, out  # replayed as ended, each would be parsed and scored instead


# ------------------------------------------------------------------ several runs, bad input


def test_an_evaluation_directory_rescores_each_label(tmp_path, envs, capsys):
    path = envs()
    builder = builder_of(path)
    for label in ("base", "final"):
        write_run(tmp_path / "ev" / label, builder, REPLIES, steps=1, split="eval")
        config = tmp_path / "ev" / label / "config.json"  # an evaluation's: the model, no builder
        config.write_text(json.dumps({"model": TINY_MODEL_NAME, "label": label}))
    envs(REWARD_INCORRECT="-0.5")

    code, out, _err = invoke(["rescore", str(tmp_path / "ev"), f"{path}:AddEnv"], capsys)

    assert code == 1
    heads = [line for line in out.splitlines() if line.startswith("rescore ")]
    assert [h.split(" with ")[0] for h in heads[:2]] == [
        f"rescore {tmp_path}/ev/base/rollouts.jsonl",
        f"rescore {tmp_path}/ev/final/rollouts.jsonl",
    ]
    assert counts(out)["reward"] == "10 of 12"
    assert re.search(r"^  run\s+record\s+step", out, re.M)
    assert re.search(r"^  base\s+1\s+0\s+eval\s+0\s+0\s+What is 0 \+ 2\?\s+reward", out, re.M)


def test_records_from_before_the_problem_field_say_how_to_proceed(tmp_path, envs, capsys):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES, steps=1)
    rollouts = run / "rollouts.jsonl"
    old = [json.loads(line) for line in rollouts.read_text().splitlines()]
    rollouts.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "problem"}) + "\n" for r in old)
    )

    code, out, err = invoke(["rescore", str(run), f"{path}:AddEnv"], capsys)

    assert (code, out) == (2, "")
    assert err.startswith(f"mint-envkit rescore: {rollouts}: its records have no 'problem' field")
    assert "mint-envkit eval ENV_SPEC --checkpoint" in err and "check --replay" in err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: {k: v for k, v in r.items() if k != "reward"},
            "record 2 (step 0, split train, group 0, member 1) has no 'reward'; a rollouts.jsonl "
            "line is what a training run or `mint-envkit eval` writes (docs/rollouts.md): "
            "restore the line, or delete its group's lines",
        ),
        (
            lambda r: {**r, "problem": "What is 0 + 2?"},
            "record 2 (step 0, split train, group 0, member 1): 'problem' must be dict",
        ),
        (
            lambda r: {**r, "member": 5},
            "its group's members are [0, 2, 5], not 0 .. 2",
        ),
        (
            lambda r: {**r, "problem": {"question": "other", "answer": "1"}},
            "record 2 (step 0, split train, group 0, member 1): its problem differs from "
            "record 1's in the same group",
        ),
    ],
)
def test_a_bad_record_is_named_with_the_fix(tmp_path, envs, capsys, edit, message):
    path = envs()
    run = write_run(tmp_path / "run", builder_of(path), REPLIES, steps=1)
    rollouts = run / "rollouts.jsonl"
    lines = rollouts.read_text().splitlines()
    lines[1] = json.dumps(edit(json.loads(lines[1])))
    rollouts.write_text("\n".join(lines) + "\n")

    code, out, err = invoke(["rescore", str(run), f"{path}:AddEnv"], capsys)

    assert (code, out) == (2, "")
    assert f"mint-envkit rescore: {rollouts} " in err or f"mint-envkit rescore: {rollouts}:" in err
    assert message in err


def test_bad_arguments_exit_2(tmp_path, envs, capsys):
    path = envs()
    code, _out, err = invoke(["rescore", str(tmp_path / "nowhere"), f"{path}:AddEnv"], capsys)
    assert code == 2 and f"no such directory: {tmp_path / 'nowhere'}" in err
    (tmp_path / "empty").mkdir()
    code, _out, err = invoke(["rescore", str(tmp_path / "empty"), f"{path}:AddEnv"], capsys)
    assert code == 2 and "holds no rollouts.jsonl, and neither does any folder in it" in err
    run = write_run(tmp_path / "run", builder_of(path), REPLIES, steps=1)
    code, _out, err = invoke(["rescore", str(run), f"{path}:Nope"], capsys)
    assert code == 2 and "has no attribute 'Nope'" in err
    code, _out, err = invoke(["rescore", str(run), f"{path}:AddEnv", "--limit", "0"], capsys)
    assert code == 2 and "--limit must be >= 1, got 0" in err
    (run / "config.json").unlink()
    code, _out, err = invoke(["rescore", str(run), f"{path}:AddEnv"], capsys)
    assert code == 2 and "config.json names no model" in err
    assert invoke(["rescore", str(run), f"{path}:add_builder"], capsys)[0] == 0  # it names one


# ------------------------------------------------------------------ what eval wrote


@pytest.mark.integration
def test_an_evaluation_of_the_tiny_model_rescores_unchanged_then_changed(
    tmp_path, envs, tiny_local_server, capsys
):
    path = envs()
    out_dir = tmp_path / "ev"
    problems = ["--problem", '{"question": "What is 2 + 3?", "answer": "5"}']
    problems += ["--problem", '{"question": "What is 4 + 4?", "answer": "8"}']
    argv = [
        *("eval", f"{path}:AddEnv", "--model", TINY_MODEL_NAME, *problems),
        *("--samples", "3", "--max-tokens", "12", "--backend", "local"),
        *("--base-url", tiny_local_server.base_url, "--out", str(out_dir), "--no-report"),
    ]
    assert invoke(argv, capsys)[0] == 0
    lines = (out_dir / "base" / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 6  # 2 problems x 3 samples of the random tiny model

    code, out, _err = invoke(["rescore", str(out_dir), f"{path}:AddEnv"], capsys)
    assert code == 0, out
    assert "6 record(s) in 2 group(s)" in out

    envs(REWARD_INCORRECT="-0.5")
    code, out, _err = invoke(["rescore", str(out_dir), f"{path}:AddEnv"], capsys)
    assert code == 1  # the random replies are wrong, cut off or unparsed: each reward moves
    assert counts(out)["reward"] == "6 of 6", out
