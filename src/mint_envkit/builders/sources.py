"""Problems read lazily from a file or a Hugging Face dataset, one row when it is needed.

:func:`problems_from` wraps a ``datasets.Dataset`` or a local ``.jsonl`` / ``.csv`` /
``.parquet`` file as a :class:`ProblemSource`: it knows its length and reads row ``i``
on demand, so a :class:`~mint_envkit.DatasetBuilder` on it keeps only row indices in
memory and reads each batch's rows when the batch is asked for. ``fields`` maps the
env's fields to the source's columns (``{"question": "problem", "answer": "solution"}``)
or is a function ``row -> problem``; without it every column is a field.

- ``.jsonl``: read directly (one JSON object per line, blank lines skipped); the first
  use scans the file once and keeps the byte offset of each line.
- ``.csv`` and ``.parquet``: checked (csv line by line, parquet its footer), then converted
  once by ``datasets`` into a memory-mapped Arrow file under the mint_envkit cache
  (``MINT_ENVKIT_CACHE``, else ``~/.cache/mint_envkit``).

Files are read in :mod:`~mint_envkit.builders.datafiles`, streaming, with lines bounded by
``MAX_LINE_BYTES``; an error names the file and the line as an editor counts it.
:meth:`ProblemSource.scan` reads every row once, in order (the builder checks them all
before the first training step).
- a ``datasets.Dataset``: rows are read with ``dataset[i]`` (memory-mapped when it was
  loaded from disk or the Hub). A streaming ``IterableDataset`` has no random access and
  is refused.

``datasets`` is an optional extra (``pip install 'mint-envkit[datasets]'``), needed for
csv, parquet and Hugging Face datasets, not for jsonl. Sources pickle (a file source as
its path; a dataset as ``datasets`` pickles it), so the builder stays picklable.

Example::

    # not run: reads files of your own run or data set
    from mint_envkit import DatasetBuilder
    from mint_envkit.builders.sources import problems_from

    source = problems_from("gsm8k_train.jsonl", fields={"question": "question", "answer": "answer"})
    builder = DatasetBuilder(env=MathEnv, problems=source, batch_size=8, group_size=4,
                             model_name="mint-envkit/tiny-qwen3")
    train, test = await builder()   # checks every row now, then reads each batch's rows
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.datafiles import ArrowFile, JsonlRows
from mint_envkit.errors import ConfigError, ProblemError

Fields = Mapping[str, str] | Callable[[dict[str, Any]], Mapping[str, Any]] | None

_SUFFIXES = (".jsonl", ".csv", ".parquet")


def _check_fields(fields: object) -> Fields:
    if fields is None or callable(fields):
        return fields  # type: ignore[return-value]
    if (
        isinstance(fields, Mapping)
        and fields
        and all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
    ):
        return dict(fields)
    raise ConfigError(
        f"fields must map env fields to source columns, e.g. "
        f"{{'question': 'problem', 'answer': 'solution'}}, or be a function row -> problem; "
        f"got {fields!r}"
    )


def _is_hf_dataset(value: object) -> bool:
    return type(value).__module__.startswith("datasets.")


def is_source_like(value: object) -> bool:
    """True for what :func:`problems_from` reads: a path (``str`` or ``os.PathLike``) or a
    ``datasets`` object.

    Example::

        assert is_source_like("train.jsonl") and not is_source_like([{"question": "1+1?"}])
    """
    return isinstance(value, str | os.PathLike) or _is_hf_dataset(value)


def _rows(source: object) -> tuple[Any, str]:
    """Random-access rows of ``source`` and a short description of it."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.suffix not in _SUFFIXES:
            raise ConfigError(
                f"problems must be a sequence of dicts, a loader, a datasets.Dataset or a "
                f"{'/'.join(_SUFFIXES)} path; cannot read problems from {str(path)!r}"
            )
        if not path.is_file():
            raise ConfigError(f"problem file {str(path)!r} does not exist")
        rows = JsonlRows(path) if path.suffix == ".jsonl" else ArrowFile(path)
        return rows, str(path)
    kind = type(source)
    if _is_hf_dataset(source) and kind.__name__ == "IterableDataset":
        raise ConfigError(
            "a streaming IterableDataset has no random access, so it cannot be shuffled "
            "with a seed; load it without streaming=True (it is memory-mapped, not read "
            "into memory), or take a slice: Dataset.from_list(list(stream.take(1000)))"
        )
    if _is_hf_dataset(source) and hasattr(source, "__getitem__"):
        return source, f"datasets.Dataset({len(source)} rows)"  # type: ignore[arg-type]
    raise ConfigError(
        f"problems_from needs a .jsonl/.csv/.parquet path or a datasets.Dataset, got "
        f"{kind.__name__}"
    )


@attrs.frozen
class ProblemSource:
    """Rows of a file or a dataset, read one at a time as problems. Build with :func:`problems_from`.

    ``len(source)`` is the number of rows; ``source[i]`` reads row ``i`` and maps it
    through ``fields`` to a problem dict.

    Example::

        # not run: reads files of your own run or data set
        source = problems_from("train.jsonl", fields={"question": "q", "answer": "a"})
        len(source), source[0]   # (1000, {'question': '...', 'answer': '...'})
    """

    rows: Any = attrs.field(repr=False)
    fields: Fields = attrs.field(default=None, converter=_check_fields)
    description: str = ""

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        """Row ``index`` as a problem dict.

        Example::

            # not run: `source` is a problem source over your file, built elsewhere
            source[0]["question"]
        """
        if not 0 <= index < len(self):
            raise IndexError(f"row {index} is outside {self.description} (0..{len(self) - 1})")
        return self.problem(dict(self.rows[index]), index)

    def where(self, index: int) -> str:
        """Where row ``index`` is: the file and line (1-based, as an editor counts), or the row.

        Example::

            # not run: `source` is a problem source over your file, built elsewhere
            source.where(5)   # 'train.jsonl, line 11 (row 5)'
        """
        where = getattr(self.rows, "where", None)
        return where(index) if where is not None else f"{self.description} row {index}"

    def problem(self, row: Mapping[str, Any], index: int, where: str | None = None) -> dict:
        """``row`` mapped through ``fields``; a :class:`ProblemError` names ``where``.

        Example::

            # not run: `source` is a problem source over your file, built elsewhere
            source.problem({"problem": "1+1?", "solution": "2"}, 0)
        """
        if self.fields is None:
            return dict(row)
        if callable(self.fields):
            try:
                problem = self.fields(dict(row))
            except Exception as err:  # the user's function, named with the row
                raise ProblemError(
                    f"{where or self.where(index)}: the fields function raised "
                    f"{type(err).__name__}: {err}; its columns are {sorted(row)}"
                ) from err
            if not isinstance(problem, Mapping):
                raise ProblemError(
                    f"{where or self.where(index)}: the fields function returned "
                    f"{type(problem).__name__}; it must return a dict of fields"
                )
            return dict(problem)
        missing = [column for column in self.fields.values() if column not in row]
        if missing:
            raise ProblemError(
                f"{where or self.where(index)}: no column(s) "
                f"{', '.join(map(repr, missing))}; its columns are {sorted(row)}. Fix "
                "fields={env field: column}"
            )
        return {name: row[column] for name, column in self.fields.items()}

    def scan(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """Every row once, in order, as ``(index, where, problem)``: streamed, so a huge file
        is read in bounded memory (a file source prints progress on stderr when it is big).

        Example::

            # not run: `source` is a problem source over your file, built elsewhere
            for index, where, problem in source.scan(): ...
        """
        scan = getattr(self.rows, "scan", None)
        if scan is not None:
            rows: Iterator[tuple[int, str, Any]] = scan()
        elif _is_hf_dataset(self.rows) and hasattr(self.rows, "iter"):
            rows = _dataset_rows(self.rows, self.description)
        else:
            rows = ((i, self.where(i), self.rows[i]) for i in range(len(self.rows)))
        for index, where, row in rows:
            if not isinstance(row, Mapping):
                raise ProblemError(
                    f"{where}: must be a dict of fields, got {type(row).__name__} {row!r:.80}"
                )
            yield index, where, self.problem(row, index, where)


def _dataset_rows(dataset: Any, description: str) -> Iterator[tuple[int, str, dict]]:
    index = 0
    for batch in dataset.iter(batch_size=1000):
        columns = list(batch)
        for values in zip(*(batch[c] for c in columns), strict=True):
            yield index, f"{description} row {index}", dict(zip(columns, values, strict=True))
            index += 1


def problems_from(source: object, fields: Fields = None) -> ProblemSource:
    """A lazy :class:`ProblemSource` on a ``datasets.Dataset`` or a jsonl/csv/parquet file.

    ``fields`` maps env fields to source columns (only those are kept), or is a function
    ``row -> problem`` (module-level, so the builder pickles); None keeps every column.

    Example::

        import datasets

        rows = datasets.Dataset.from_dict({"problem": ["1+1?"], "solution": ["2"]})
        source = problems_from(rows, fields={"question": "problem", "answer": "solution"})
        assert source[0] == {"question": "1+1?", "answer": "2"}
    """
    rows, description = _rows(source)
    return ProblemSource(rows=rows, fields=fields, description=description)
