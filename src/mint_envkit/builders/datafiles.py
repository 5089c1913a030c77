"""Problem files read safely: jsonl, csv and parquet rows with the place each came from.

Used by :func:`~mint_envkit.builders.sources.problems_from`. Every reader streams: a
line is read with a bound (:data:`MAX_LINE_BYTES`), so a file of NUL bytes or one
2 GB line is refused at once, naming the file and the line, instead of being read into
memory. An error names the file and the line as an editor counts it (1-based, blank
lines counted), or for parquet the row (0-based), and what is wrong, as a
:class:`~mint_envkit.ProblemError`.

- :class:`JsonlRows`: one JSON object per line; the byte offset of each row is kept.
- :class:`ArrowFile`: a csv (checked line by line with the ``csv`` module first: ragged
  rows, bad quoting) or a parquet file (its footer checked first), then converted once by
  ``datasets`` into a memory-mapped Arrow file under the mint_envkit cache.

``scan()`` yields ``(row index, where, row)`` for every row in order, with a progress
line on stderr every :data:`PROGRESS_SECONDS` for files of :data:`PROGRESS_BYTES` or more.

Example::

    # not run: reads files of your own run or data set
    rows = JsonlRows(Path("train.jsonl"))
    for index, where, row in rows.scan():
        ...   # where == "train.jsonl, line 3 (row 1)"
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mint_envkit.errors import MissingExtraError, ProblemError

MAX_LINE_BYTES = 16 * 1024**2
"""The longest line (and csv field) a problem file may have; longer is refused."""
PROGRESS_BYTES = 256 * 1024**2
"""Files of this size or more print a progress line on stderr while they are checked."""
PROGRESS_SECONDS = 5.0
"""Seconds between two progress lines."""

_INSTALL = "pip install 'mint-envkit[datasets]' (or: pip install datasets)"
_BATCH = 1000
_DECODE = json.JSONDecoder().decode


def import_datasets() -> Any:
    """The ``datasets`` module, or :class:`~mint_envkit.MissingExtraError` naming the extra.

    Example::

        datasets = import_datasets()
    """
    try:
        import datasets
    except ImportError as err:
        raise MissingExtraError(
            f"reading csv, parquet or Hugging Face datasets needs the datasets package "
            f"({err}); run {_INSTALL}"
        ) from None
    return datasets


class Progress:
    """Prints ``mint_envkit: checking <file>: 41% ...`` on stderr now and then, for big files.

    Example::

        # not run: reads files of your own run or data set
        progress = Progress("train.jsonl", total=os.path.getsize("train.jsonl"), unit="bytes")
        progress.update(done)
    """

    def __init__(self, name: str, total: int, unit: str, size: int | None = None) -> None:
        self.name, self.total, self.unit = name, total, unit
        self.enabled = (total if size is None else size) >= PROGRESS_BYTES
        self.last = time.monotonic()

    def update(self, done: int, rows: int) -> None:
        if not self.enabled or time.monotonic() - self.last < PROGRESS_SECONDS:
            return
        self.last = time.monotonic()
        share = 100 * done / self.total if self.total else 100.0
        print(
            f"mint_envkit: checking {self.name}: {share:.0f}% ({done:,} of {self.total:,} "
            f"{self.unit}), {rows:,} rows",
            file=sys.stderr,
            flush=True,
        )


def _too_long(path: Path, number: int) -> ProblemError:
    return ProblemError(
        f"{path}, line {number}: the line is longer than {MAX_LINE_BYTES:,} bytes "
        "(MAX_LINE_BYTES in mint_envkit.builders.datafiles); a problem file has one "
        "problem a line. Is this the right file (not a binary or sparse file)? Split the "
        "line, or raise MAX_LINE_BYTES"
    )


def _read_line(file: Any, path: Path, number: int) -> bytes:
    """The next line (with its newline), refusing one over MAX_LINE_BYTES or with NUL bytes."""
    line = file.readline(MAX_LINE_BYTES + 2)
    if len(line.rstrip(b"\r\n")) > MAX_LINE_BYTES:
        raise _too_long(path, number)
    if b"\x00" in line:
        raise ProblemError(
            f"{path}, line {number}: the line has NUL bytes, so this is not a text file; "
            "give a jsonl/csv text file (or a .parquet file for binary data)"
        )
    return line


def _line_number(path: Path, offset: int) -> int:
    """The 1-based line that starts at byte ``offset`` (counted in 1 MiB reads)."""
    count = 0
    with open(path, "rb") as file:
        while offset > 0:
            block = file.read(min(offset, 1024**2))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count + 1


def _parse_json(line: bytes, where: str) -> dict[str, Any]:
    try:
        row = _DECODE(line.decode("utf-8"))
    except json.JSONDecodeError as err:
        raise ProblemError(
            f"{where}: not valid JSON ({err.msg} at column {err.colno}); each line must be "
            'one JSON object, e.g. {"question": "1+1?", "answer": "2"}'
        ) from None
    except ValueError as err:  # not UTF-8
        raise ProblemError(f"{where}: cannot be read as UTF-8 JSON ({err})") from None
    if not isinstance(row, dict):
        raise ProblemError(
            f"{where}: must be a JSON object of fields, got {type(row).__name__} "
            f"{line[:80].decode('utf-8', 'replace').strip()!r}"
        )
    return row


class JsonlRows:
    """Random access to the rows of a jsonl file through a byte-offset index.

    Example::

        # not run: reads files of your own run or data set
        rows = JsonlRows(Path("train.jsonl"))
        len(rows), rows[0], rows.where(0)   # (100, {...}, 'train.jsonl, line 1 (row 0)')
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: array[int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_offsets": None}  # the index is rebuilt where used

    def scan(self, parse: bool = True) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """Every row in order as ``(index, where, row)``, building the offset index.

        Example::

            # not run: `rows` is the rows of your data file, built elsewhere
            for index, where, row in rows.scan(): ...
        """
        offsets: array[int] = array("q")
        position = number = 0
        with open(self.path, "rb") as file:
            progress = Progress(str(self.path), os.fstat(file.fileno()).st_size, "bytes")
            while line := _read_line(file, self.path, number + 1):
                number += 1
                if line.strip():
                    offsets.append(position)
                    if parse:
                        where = f"{self.path}, line {number} (row {len(offsets) - 1})"
                        yield len(offsets) - 1, where, _parse_json(line, where)
                position += len(line)
                if not number & 1023:
                    progress.update(position, len(offsets))
        progress.update(position, len(offsets))
        self._offsets = offsets

    def _index(self) -> array[int]:
        if self._offsets is None:
            for _ in self.scan(parse=False):
                pass
        assert self._offsets is not None
        return self._offsets

    def where(self, index: int) -> str:
        line = _line_number(self.path, self._index()[index])
        return f"{self.path}, line {line} (row {index})"

    def __len__(self) -> int:
        return len(self._index())

    def __getitem__(self, index: int) -> dict[str, Any]:
        offset = self._index()[index]
        with open(self.path, "rb") as file:
            file.seek(offset)
            line = file.readline(MAX_LINE_BYTES + 2)
        try:
            return _parse_json(line, "")
        except ProblemError:  # counting the line number costs a read up to the row
            return _parse_json(line, self.where(index))


def _csv_lines(file: Any, path: Path, counter: list[int]) -> Iterator[str]:
    """The file's lines for ``csv.reader``, each bounded; ``counter[0]`` is lines read."""
    while line := _read_line(file, path, counter[0] + 1):
        counter[0] += 1
        try:
            yield line.decode("utf-8-sig" if counter[0] == 1 else "utf-8")
        except UnicodeDecodeError as err:
            raise ProblemError(
                f"{path}, line {counter[0]}: not UTF-8 text ({err.reason} at column "
                f"{err.start + 1}); save the csv as UTF-8"
            ) from None


def check_csv(path: Path) -> array[int]:
    """The 1-based line where each data row starts, checking every row's shape.

    Raises :class:`~mint_envkit.ProblemError` naming the line for a ragged row (a field
    count other than the header's), bad quoting, a too long line or bad UTF-8.

    Example::

        # not run: reads files of your own run or data set
        lines = check_csv(Path("train.csv"))   # array('q', [2, 3, 5, ...])
    """
    lines: array[int] = array("q")
    counter = [0]
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_LINE_BYTES))
    start = 1
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            progress = Progress(str(path), size, "bytes")
            reader = csv.reader(_csv_lines(file, path, counter), strict=True)
            header: list[str] | None = None
            while True:
                start = counter[0] + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                if not row:
                    continue  # a blank line
                if header is None:
                    header, header_line = row, start
                    continue
                if len(row) != len(header):
                    raise ProblemError(
                        f"{path}, line {start}: the row has {len(row)} field(s), the header "
                        f"(line {header_line}) has {len(header)}: {header}. Give every row "
                        "the header's fields (an empty field is written ,,), and quote a "
                        'field that has a comma: "a, b"'
                    )
                lines.append(start)
                if not len(lines) & 1023:
                    progress.update(file.tell(), len(lines))
    except csv.Error as err:
        at = "" if counter[0] == start else f" (the row starts on line {start})"
        raise ProblemError(
            f"{path}, line {counter[0]}{at}: bad csv quoting ({err}). A quoted field must "
            "close its quote and be followed by a comma or the line end; a quote inside a "
            'quoted field is doubled: "say ""hi"""'
        ) from None
    finally:
        csv.field_size_limit(limit)
    return lines


def _datasets_error(path: Path, err: BaseException) -> ProblemError:
    causes, seen = [], err
    while seen is not None and len(causes) < 3:
        causes.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    kind = path.suffix.lstrip(".")
    return ProblemError(
        f"{path}: cannot be read as {kind} ({'; '.join(causes)[:600]}); check that the file "
        f"is a complete {kind} file"
    )


def _check_parquet(path: Path) -> None:
    import pyarrow.parquet as parquet  # a dependency of datasets

    try:
        rows = parquet.ParquetFile(path).metadata.num_rows
    except Exception as err:  # pyarrow raises ArrowInvalid, OSError, ...
        size = path.stat().st_size
        what = "is empty (0 bytes)" if size == 0 else f"is not a parquet file ({err})"
        raise ProblemError(
            f"{path} {what}; give a parquet file written by pandas, pyarrow or "
            "datasets (Dataset.to_parquet), or a .jsonl/.csv file"
        ) from None
    if rows == 0:
        raise ProblemError(f"{path} has no rows; give at least one problem")


class ArrowFile:
    """A csv or parquet file, checked, then converted by ``datasets`` to memory-mapped Arrow.

    Example::

        # not run: reads files of your own run or data set
        rows = ArrowFile(Path("train.csv"))
        len(rows), rows[0], rows.where(0)   # (100, {...}, 'train.csv, line 2 (row 0)')
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._dataset: Any = None
        self._lines: array[int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_dataset": None, "_lines": None}  # reopened where used

    def _open(self) -> Any:
        if self._dataset is None:
            datasets = import_datasets()
            from mint_envkit.rendering.tokenizer import cache_dir

            if self.path.suffix == ".csv":
                lines = check_csv(self.path)
                read = datasets.Dataset.from_csv
            else:
                _check_parquet(self.path)
                lines, read = None, datasets.Dataset.from_parquet
            try:
                dataset = read(str(self.path), cache_dir=str(cache_dir() / "datasets"))
            except Exception as err:  # datasets wraps pandas/pyarrow errors
                raise _datasets_error(self.path, err) from None
            self._lines = lines if lines is not None and len(lines) == len(dataset) else None
            self._dataset = dataset
        return self._dataset

    def where(self, index: int) -> str:
        self._open()
        if self._lines is not None:
            return f"{self.path}, line {self._lines[index]} (row {index})"
        return f"{self.path}, row {index} (0-based)"

    def scan(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """Every row in order as ``(index, where, row)``, read in batches of 1000.

        Example::

            # not run: `rows` is the rows of your data file, built elsewhere
            for index, where, row in rows.scan(): ...
        """
        dataset = self._open()
        total = len(dataset)
        progress = Progress(str(self.path), total, "rows", size=self.path.stat().st_size)
        index = 0
        try:
            for batch in dataset.iter(batch_size=_BATCH):
                columns = list(batch)
                for values in zip(*(batch[c] for c in columns), strict=True):
                    yield index, self.where(index), dict(zip(columns, values, strict=True))
                    index += 1
                progress.update(index, index)
        except ProblemError:
            raise
        except Exception as err:  # a corrupt page shows only when read
            raise _datasets_error(self.path, err) from None

    def __len__(self) -> int:
        return len(self._open())

    def __getitem__(self, index: int) -> dict[str, Any]:
        return dict(self._open()[index])


def is_empty(value: Any) -> bool:
    """True for a missing cell: None (an empty csv field, a null) or a float NaN.

    Example::

        assert is_empty(None) and is_empty(float("nan")) and not is_empty("")
    """
    return value is None or (isinstance(value, float) and math.isnan(value))
