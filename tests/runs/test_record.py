"""The run record (mint_envkit.runs.record): one typed value of an evaluation's figures, the
only owner of their names in the summary, the loop's metrics rows and an evaluation's line."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import attrs
import pytest

from mint_envkit.runs.record import (
    EVAL,
    FINAL,
    FINAL_UNCUT,
    TEST,
    UNCUT,
    AnswerFigures,
    CounterfactualFigures,
    Figures,
    find_eval,
    is_text_figure,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "mint_envkit"
RECORD = SRC / "runs" / "record.py"

FULL = Figures(
    max_tokens=32,
    problems=4,
    episodes=16,
    errors=0,
    mean_reward=0.25,
    correct=0.5,
    parse_failure_rate=0.25,
    truncated_rate=0.125,
    pass_at={"1": 0.5, "4": 0.75},
    answers=AnswerFigures(
        baseline_correct=0.5,
        baseline_name="constant 'no'",
        beats_baseline=False,
        distinct=2,
        entropy=0.5,
        top_share=0.75,
        top="no",
        truncated=0.125,
        concentrated=False,
        position="first quoted",
        position_share=0.5,
        position_reference_share=0.5,
        position_concentrated=False,
        collapse=True,
    ),
    counterfactual=CounterfactualFigures(
        problems=4, correct=0.25, pairs=8, same_content=0.25, same_position=0.75,
        position_following=True,
    ),
)  # fmt: skip


def test_a_summary_holds_every_figure_and_reads_back_the_same():
    summary = FULL.summary()
    assert summary["answers/baseline_name"] == "constant 'no'"
    assert summary["answers/collapse"] == 1.0  # flags are 1.0 / 0.0 in the files
    assert summary["counterfactual/position_following"] == 1.0
    assert summary["pass@"] == {"1": 0.5, "4": 0.75}
    assert Figures.from_summary(summary) == FULL


@pytest.mark.parametrize("split", [TEST, FINAL, UNCUT, FINAL_UNCUT])
def test_a_loop_row_reads_back_with_the_envs_own_metrics(split):
    row = FULL.metrics(split)
    assert row[f"{split}/max_tokens"] == 32
    assert row[f"{split}/env/all/answers/collapse"] == 1.0
    # correctness, parse and truncation shares, the mean reward: the env's metrics there
    row.update(
        {
            f"{split}/env/all/correct": 0.5,
            f"{split}/env/all/parsed": 0.75,
            f"{split}/env/all/truncated": 0.125,
            f"{split}/env/all/reward/total": 0.25,
            f"{split}/env/all/episodes": 16,
        }
    )
    expected = attrs.evolve(FULL, problems=None, errors=None, pass_at={})
    assert Figures.from_metrics(row, split) == expected
    others = {TEST, FINAL, UNCUT, FINAL_UNCUT} - {split}
    assert all(Figures.from_metrics(row, other) is None for other in others)


def test_an_evaluation_line_holds_the_figures_but_the_counts():
    line = FULL.metrics(EVAL)
    assert line["eval/pass@4"] == 0.75 and line["eval/answers/top"] == "no"
    assert not {"eval/max_tokens", "eval/problems", "eval/episodes"} & set(line)
    read = Figures.from_metrics(line, EVAL)
    assert read == attrs.evolve(FULL, max_tokens=None, problems=None, episodes=None, errors=None)


def test_an_odd_value_in_a_file_is_no_value():
    odd = {
        "correct": "0.5",  # a string
        "parse_failure_rate": 1.5,  # a rate above 1
        "mean_reward": float("nan"),
        "problems": 2.5,  # not a count
        "answers/collapse": 0.5,  # not a flag
        "answers/baseline_name": "",
        "answers/distinct": True,  # a bool is not a count
        "pass@": {"1": -0.1},
    }
    figures = Figures.from_summary(odd)
    assert figures == Figures(pass_at={"1": None})
    assert Figures.from_summary({"answers/collapse": True}).answers.collapse is True


def test_find_eval_takes_the_first_or_the_last_row_of_a_split():
    rows = [
        {"step": 0, "test/env/all/correct": 0.25, "test_uncut/max_tokens": 64},
        {"step": 5, "test/env/all/correct": 0.5, "test_final/env/all/correct": 0.75},
    ]
    assert find_eval(rows, TEST)[1].correct == 0.25
    assert find_eval(rows, TEST, last=True)[1].correct == 0.5
    assert find_eval(rows, FINAL)[0]["step"] == 5
    # a split is there only with its figures: the reply limit alone is not an eval
    assert find_eval(rows, UNCUT) is None
    assert is_text_figure("test/env/all/answers/top") and not is_text_figure("env/all/turns")


# ---- the record is the only owner of the names -----------------------------------------

SPLITS = (TEST, FINAL, UNCUT, FINAL_UNCUT, EVAL)
# a metric's prefix (``test/...``, ``eval/...``), or a split name no other word shares
# (``test`` and ``eval`` are also a data set's split and a command)
_SPLIT_NAME = re.compile(rf"^({'|'.join(SPLITS)})/|^({'|'.join(s for s in SPLITS if '_' in s)})$")
_FRAGMENTS = ("answers/", "counterfactual/", "/env/all/answers", "/max_tokens")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        # an attribute's or a constant's docstring: a string right after an assignment
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for before, after in itertools.pairwise(block):
                is_string = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                if isinstance(before, ast.Assign | ast.AnnAssign) and is_string:
                    found.add(id(after.value))
    return found


def names_outside_the_record(path: Path) -> list[str]:
    """The strings of ``path`` (not its docstrings) that write or parse a figure's name."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in skip:
            continue
        text = node.value
        if _SPLIT_NAME.match(text) or any(fragment in text for fragment in _FRAGMENTS):
            found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {text!r}")
    return found


def test_no_module_but_the_record_writes_or_parses_a_figures_name():
    broken = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path != RECORD
        for hit in names_outside_the_record(path)
    ]
    assert not broken, "use mint_envkit.runs.record (Figures, its splits):\n" + "\n".join(broken)


def test_the_check_finds_a_planted_name(tmp_path):
    planted = SRC / "planted_for_the_test.py"
    assert not planted.exists()
    source = (
        '"""A docstring may name test_final/env/all/answers/collapse."""\n'
        'KEY = f"{split}/env/all/answers/baseline_name"\n'
        'SPLIT = "test_uncut"\n'
        'ROW = {"eval/correct": 0.5}\n'
    )
    path = tmp_path / "planted.py"
    path.write_text(source)
    hits = [h.split(": ", 1)[1] for h in sorted(_hits(path))]
    assert hits == ["'/env/all/answers/baseline_name'", "'test_uncut'", "'eval/correct'"]


def _hits(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree)
    return [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and (_SPLIT_NAME.match(node.value) or any(f in node.value for f in _FRAGMENTS))
    ]


# The figures whose names are their own (``correct``, ``distinct`` or ``position`` are
# words of many modules), and the modules besides the record that name them: where each
# is computed, and where it is shown. A figure is added in three places: its field in the
# record, the code that computes it, the place that shows it.
PLACES = {
    "position_reference_share": 2,  # baselines.py computes, answers.py's note shows
    "position_concentrated": 2,  # baselines.py, answers.py (the collapse rule, its note)
    "position_share": 3,  # baselines.py, answers.py's note, compare.py's table
    "position_following": 3,  # counterfactual.py, the headline, the audit's finding
    "same_content": 4,  # counterfactual.py, the headline, compare.py, the audit's finding
    "same_position": 4,
    "top_share": 3,  # answers.py, compare.py, the sweep's held-out answers
    "concentrated": 3,  # answers.py, the sweep's held-out answers, the audit report
    "beats_baseline": 6,  # the headline, the claim, compare.py, the sweep, the audit
}


@pytest.mark.parametrize("name", sorted(PLACES))
def test_a_figure_is_named_where_it_is_computed_and_shown_only(name):
    fields = {f.name for cls in (AnswerFigures, CounterfactualFigures) for f in attrs.fields(cls)}
    assert name in fields
    files = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path != RECORD and re.search(rf"\b{name}\b", path.read_text())
    )
    assert len(files) <= PLACES[name], f"{name} is named in {files}: read it from the record"
