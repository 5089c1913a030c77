"""Problem sources: jsonl/csv/parquet files and datasets.Dataset, read lazily by DatasetBuilder."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from mint_envkit import ConfigError, DatasetBuilder, ProblemError, SingleTurnEnv
from mint_envkit.builders.lazy import LazyProblemDataset
from mint_envkit.builders.sources import ProblemSource, problems_from
from mint_envkit.rendering import TINY_MODEL_NAME

ROWS = [{"problem": f"What is {i} + 1?", "solution": str(i + 1), "level": i % 3} for i in range(23)]
FIELDS = {"question": "problem", "answer": "solution"}
PROBLEMS = [{"question": r["problem"], "answer": r["solution"]} for r in ROWS]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n\n" for row in rows))  # blank lines skipped
    return path


def builder(problems, **kwargs) -> DatasetBuilder:
    settings = {
        "env": SingleTurnEnv,
        "problems": problems,
        "batch_size": 4,
        "group_size": 2,
        "model_name": TINY_MODEL_NAME,
        "seed": 7,
    }
    settings.update(kwargs)
    return DatasetBuilder(**settings)


def snapshot(dataset) -> list[list[tuple[int, dict]]]:
    return [[(g.index, g.problem) for g in dataset.get_batch(i)] for i in range(len(dataset))]


class CountingRows:
    """A datasets-like row store that counts the rows read (stands in for a huge file)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows, self.reads = rows, []

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict:
        self.reads.append(index)
        return self.rows[index]


def test_jsonl_source_maps_fields(tmp_path: Path) -> None:
    source = problems_from(write_jsonl(tmp_path / "train.jsonl", ROWS), fields=FIELDS)
    assert len(source) == 23
    assert source[5] == PROBLEMS[5]
    assert problems_from(tmp_path / "train.jsonl")[0] == ROWS[0]
    with pytest.raises(IndexError, match="row 23"):
        source[23]


@pytest.mark.parametrize(
    ("kwargs", "settings"),
    [
        ({}, {}),
        ({"test_fraction": 0.25}, {}),
        ({"n_epochs": 2, "drop_last": True}, {}),
        ({"shuffle": False, "test_problems": PROBLEMS[:3]}, {}),
    ],
)
async def test_lazy_batches_equal_the_list_batches(tmp_path: Path, kwargs, settings) -> None:
    path = write_jsonl(tmp_path / "train.jsonl", ROWS)
    lazy_train, lazy_test = await builder(path, fields=FIELDS, **kwargs)()
    train, test = await builder(PROBLEMS, **kwargs)()
    assert isinstance(lazy_train, LazyProblemDataset)
    assert snapshot(lazy_train) == snapshot(train)
    assert (lazy_test is None) == (test is None)
    if test is not None:
        assert snapshot(lazy_test) == snapshot(test)


async def test_rows_are_checked_once_then_read_when_their_batch_is_asked_for() -> None:
    rows = CountingRows([{"question": r["problem"], "answer": r["solution"]} for r in ROWS])
    train, _ = await builder(ProblemSource(rows=rows, description="counting"))()
    assert rows.reads == list(range(23))  # every row checked once, before the first step
    batch = train.get_batch(2)
    assert len(rows.reads) == 23 + 4
    assert [g.index for g in batch] == rows.reads[23:]


async def test_a_bad_row_fails_when_the_builder_is_called_naming_its_line(
    tmp_path: Path,
) -> None:
    rows = [*ROWS[:5], {"problem": "no solution here"}, *ROWS[6:]]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    with pytest.raises(ProblemError, match=r"line 11 \(row 5\): no column\(s\) 'solution'"):
        await builder(path, fields=FIELDS, shuffle=False)()


async def test_a_wrong_mapping_fails_at_build_time(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    with pytest.raises(ProblemError, match="'question'"):
        await builder(path, fields={"answer": "solution"})()
    with pytest.raises(ProblemError, match="the problem has \\['level', 'problem', 'solution'\\]"):
        await builder(path)()  # without fields every column is a field


async def test_fields_function(tmp_path: Path) -> None:
    source = problems_from(write_jsonl(tmp_path / "t.jsonl", ROWS), fields=to_problem)
    train, _ = await builder(source, shuffle=False)()
    assert train.get_batch(0)[1].problem == {"question": "What is 1 + 1?", "answer": "2"}


def to_problem(row: dict) -> dict:
    return {"question": row["problem"], "answer": row["solution"]}


async def test_builder_and_datasets_pickle(tmp_path: Path) -> None:
    made = builder(write_jsonl(tmp_path / "t.jsonl", ROWS), fields=FIELDS, test_fraction=0.2)
    train, test = await made()
    copy = pickle.loads(pickle.dumps(made))
    train_copy, test_copy = await copy()
    assert snapshot(train_copy) == snapshot(train) and snapshot(test_copy) == snapshot(test)
    assert snapshot(pickle.loads(pickle.dumps(train))) == snapshot(train)


async def test_csv_parquet_and_hf_dataset(tmp_path: Path) -> None:
    import datasets  # the datasets extra: scripts/test.sh installs it

    table = datasets.Dataset.from_list(ROWS)
    table.to_csv(str(tmp_path / "t.csv"), index=False)
    table.to_parquet(str(tmp_path / "t.parquet"))
    expected = snapshot((await builder(PROBLEMS)())[0])
    for problems in (tmp_path / "t.csv", str(tmp_path / "t.parquet"), table):
        train, _ = await builder(problems, fields=FIELDS)()
        got = snapshot(train)
        # csv reads the answers back as integers
        assert [[(i, p["question"], str(p["answer"])) for i, p in b] for b in got] == [
            [(i, p["question"], p["answer"]) for i, p in b] for b in expected
        ]
    csv_builder = builder(tmp_path / "t.csv", fields=FIELDS)
    assert snapshot((await pickle.loads(pickle.dumps(csv_builder))())[0]) == snapshot(
        (await csv_builder())[0]
    )


def test_streaming_datasets_are_refused() -> None:
    import datasets  # the datasets extra: scripts/test.sh installs it

    stream = datasets.Dataset.from_list(ROWS).to_iterable_dataset()
    with pytest.raises(ConfigError, match="IterableDataset has no random access"):
        problems_from(stream)


@pytest.mark.parametrize(
    ("problems", "kwargs", "match"),
    [
        ("train.txt", {}, "problems must be"),
        ("missing.jsonl", {}, "does not exist"),
        (PROBLEMS, {"fields": FIELDS}, "fields= maps the columns"),
        ("t.jsonl", {"fields": {"question": 3}}, "fields must map"),
    ],
)
def test_bad_sources(tmp_path: Path, problems, kwargs, match) -> None:
    write_jsonl(tmp_path / "t.jsonl", ROWS)
    if isinstance(problems, str):
        problems = tmp_path / problems
    with pytest.raises(ConfigError, match=match):
        builder(problems, **kwargs)


async def test_invalid_json_row(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"question": "a", "answer": "1"}\n{oops\n')
    with pytest.raises(ProblemError, match="line 2 \\(row 1\\): not valid JSON"):
        await builder(path, shuffle=False, batch_size=1)()
