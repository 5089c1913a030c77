"""Hostile problem files: every error names the file and the line (or parquet row), and comes
when the DatasetBuilder is called, before the first training step; huge files stream."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mint_envkit import DatasetBuilder, ProblemError, SingleTurnEnv
from mint_envkit.builders import datafiles
from mint_envkit.builders.sources import problems_from
from mint_envkit.rendering import TINY_MODEL_NAME

GOOD = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(40)]
TWO_GB = 2 * 1024**3


def builder(problems, **kwargs) -> DatasetBuilder:
    settings = {
        "env": SingleTurnEnv,
        "problems": problems,
        "batch_size": 4,
        "group_size": 2,
        "model_name": TINY_MODEL_NAME,
        "seed": 0,
    }
    settings.update(kwargs)
    return DatasetBuilder(**settings)


async def refused(path: Path, match: str, **kwargs) -> str:
    """Call a builder on ``path``; the ProblemError's message, which must name the file."""
    with pytest.raises(ProblemError, match=match) as caught:
        await builder(path, **kwargs)()
    assert str(path) in str(caught.value)
    return str(caught.value)


def jsonl_lines(rows: list) -> list[str]:
    """One row a line, each followed by a blank line (which an editor counts)."""
    return [line for row in rows for line in (json.dumps(row), "")]


# -- jsonl ---------------------------------------------------------------------------------


async def test_a_bad_jsonl_line_is_named_as_an_editor_counts_it(tmp_path: Path) -> None:
    lines = jsonl_lines(GOOD)
    lines[30] = '{"question": "What is 15 + 1?", "answer": }'  # row 15, line 31
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    await refused(
        path, r"train.jsonl, line 31 \(row 15\): not valid JSON \(Expecting value at column 43\)"
    )


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("[1, 2]", r"line 9 \(row 4\): must be a JSON object of fields, got list"),
        ('{"question": "q"}', r"line 9 \(row 4\): SingleTurnEnv needs field\(s\) 'answer'"),
        ('{"question": "q", "answer": null}', r"line 9 \(row 4\): .*'answer'.* empty"),
        ("\x00\x00\x00", r"line 9: the line has NUL bytes"),
    ],
)
async def test_every_jsonl_row_is_checked_before_the_first_step(
    tmp_path: Path, line: str, match: str
) -> None:
    lines = jsonl_lines(GOOD)
    lines[8] = line  # row 4; the builder's first batch would not read it (seeded order)
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    await refused(path, match)


async def test_a_fields_function_that_raises_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(jsonl_lines([*GOOD[:3], {"q": "x"}])) + "\n")
    await refused(path, r"line 7 \(row 3\): the fields function raised KeyError", fields=pick)


def pick(row: dict) -> dict:
    return {"question": row["question"], "answer": row["answer"]}


# -- csv -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (
            '"What is 3 + 1?",4,extra',
            r"line 5: the row has 3 field\(s\), the header \(line 1\) has 2",
        ),
        ('"What is 3 + 1?"', r"line 5: the row has 1 field\(s\)"),
        ('"What is "3" + 1?",4', r"line 5: bad csv quoting"),
        ('"What is 3 + 1?,4', r"line 6 \(the row starts on line 5\): bad csv quoting"),
        ('"What is 3 + 1?",', r"line 5 \(row 2\): .*'answer'.* empty"),
    ],
)
async def test_a_bad_csv_row_names_the_file_and_line(tmp_path: Path, bad: str, match: str) -> None:
    import datasets  # noqa: F401 - the datasets extra: scripts/test.sh installs it

    lines = ["question,answer", '"What is 1 + 1?",2', '"a\nmulti-line question",3', bad, "q,6"]
    path = tmp_path / "train.csv"
    path.write_text("\n".join(lines) + "\n")  # the bad row starts on line 5 (line 3 is quoted)
    await refused(path, match)


async def test_csv_lines_count_blank_and_quoted_lines(tmp_path: Path) -> None:
    import datasets  # noqa: F401 - the datasets extra: scripts/test.sh installs it

    path = tmp_path / "train.csv"
    path.write_text('question,answer\n\n"two\nlines",1\n\nq,2\n')
    source = problems_from(path)
    assert [source.where(i) for i in range(len(source))] == [
        f"{path}, line 3 (row 0)",
        f"{path}, line 6 (row 1)",
    ]


# -- parquet -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", r"train.parquet is empty \(0 bytes\)"),
        (b"question,answer\n1+1?,2\n", r"train.parquet is not a parquet file"),
        ("truncated", r"train.parquet is not a parquet file"),
        ("no rows", r"train.parquet has no rows"),
    ],
)
async def test_a_bad_parquet_file_is_named(tmp_path: Path, content, match: str) -> None:
    import datasets  # the datasets extra: scripts/test.sh installs it

    path = tmp_path / "train.parquet"
    if content == "truncated":
        datasets.Dataset.from_list(GOOD).to_parquet(str(path))
        path.write_bytes(path.read_bytes()[:-40])
    elif content == "no rows":
        datasets.Dataset.from_list(GOOD).select([]).to_parquet(str(path))
    else:
        path.write_bytes(content)
    await refused(path, match)


# -- huge and sparse files -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "head", "match"),
    [
        ("sparse.jsonl", b"", r"line 1: the line is longer than 16,777,216 bytes"),
        ("sparse.csv", b"", r"line 1: the line is longer than 16,777,216 bytes"),
        ("long.jsonl", b'{"question": "q", "answer": "1"}\n', r"line 2: the line is longer"),
        ("long.csv", b"question,answer\nq,1\n", r"line 3: the line is longer"),
        ("sparse.parquet", b"", r"sparse.parquet is not a parquet file"),
    ],
)
async def test_a_2gb_sparse_file_is_refused_quickly(
    tmp_path: Path, name: str, head: bytes, match: str
) -> None:
    if name.endswith((".csv", ".parquet")):
        import datasets  # noqa: F401 - the datasets extra: scripts/test.sh installs it
    path = tmp_path / name
    with open(path, "wb") as file:
        file.write(head)
        if name.startswith("long"):
            file.write(b"x" * (datafiles.MAX_LINE_BYTES + 10))
        file.truncate(TWO_GB)  # sparse on Linux: instant, no disk used
    start = time.monotonic()
    await refused(path, match)
    assert time.monotonic() - start < 20


MEMORY_SCRIPT = """
import asyncio, sys
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit import DatasetBuilder, MintEnvkitError, SingleTurnEnv
path = sys.argv[1]
builder = DatasetBuilder(env=SingleTurnEnv, problems=path, batch_size=1, group_size=1,
                         model_name=TINY_MODEL_NAME)
try:
    asyncio.run(builder())
except MintEnvkitError as err:
    print("refused:", str(err)[:200])
# VmHWM is this process's own peak; ru_maxrss would carry the peak of the pytest worker
# that spawned it (Linux keeps it across exec), so it read 1047 MiB on a busy CI worker
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("peak_kib", peak.split()[1])
"""


@pytest.mark.parametrize("name", ["sparse.jsonl", "sparse.csv"])
def test_a_2gb_sparse_file_is_refused_in_bounded_memory(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with open(path, "wb") as file:
        file.truncate(TWO_GB)
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "refused:" in done.stdout and name in done.stdout, done.stdout + done.stderr
    peak_mib = int(re.search(r"peak_kib (\d+)", done.stdout).group(1)) / 1024
    # the file is 2048 MiB; reading it whole would peak above it
    assert peak_mib < 1024, f"{peak_mib:.0f} MiB"


async def test_big_files_print_progress_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(datafiles, "PROGRESS_BYTES", 0)
    monkeypatch.setattr(datafiles, "PROGRESS_SECONDS", 0.0)
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(jsonl_lines(GOOD)) + "\n")
    await builder(path)()
    err = capsys.readouterr().err
    assert f"mint_envkit: checking {path}: 100% (" in err and "40 rows" in err


def test_a_row_read_after_the_check_still_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(jsonl_lines(GOOD)) + "\n")
    source = problems_from(path)
    assert len(source) == 40 and source[3] == GOOD[3]
    with open(path, "r+b") as file:  # the file changes after its index was built
        file.seek(len(json.dumps(GOOD[0])) + 2)
        file.write(b"[")  # the row opened with { now opens a list: invalid JSON
    with pytest.raises(ProblemError, match=r"train.jsonl, line 3 \(row 1\): not valid JSON"):
        source[1]


async def test_a_csv_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    import datasets  # noqa: F401 - the datasets extra: scripts/test.sh installs it

    path = tmp_path / "train.csv"
    path.write_bytes(b"question,answer\n" + b"q,1\n" * 3000 + b"q\xff,2\n")
    await refused(path, r"train.csv, line 3002: not UTF-8 text \(invalid start byte at column 2\)")


async def test_a_parquet_file_with_corrupt_pages_is_named(tmp_path: Path) -> None:
    import datasets  # the datasets extra: scripts/test.sh installs it

    path = tmp_path / "train.parquet"
    rows = [{"question": "q" * 50 + str(i), "answer": str(i)} for i in range(5000)]
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    data = bytearray(path.read_bytes())
    data[200 : len(data) // 2] = b"\xab" * (len(data) // 2 - 200)  # the footer stays intact
    path.write_bytes(bytes(data))
    await refused(path, r"train.parquet: cannot be read as parquet \(.*Corrupt")
