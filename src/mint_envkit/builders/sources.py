"""Problems read lazily from a file or a Hugging Face dataset, one row when it is needed.

:func:`problems_from` wraps a ``datasets.Dataset`` or a local ``.jsonl`` / ``.csv`` /
``.parquet`` file as a :class:`ProblemSource`: it knows its length and reads row ``i``
on demand, so a :class:`~mint_envkit.DatasetBuilder` on it keeps only row indices in
memory and reads each batch's rows when the batch is asked for. ``fields`` maps the
env's fields to the source's columns (``{"question": "problem", "answer": "solution"}``)
or is a function ``row -> problem``; without it every column is a field.

- ``.jsonl``: read directly (one JSON object per line, blank lines skipped); the first
  use scans the file once and keeps the byte offset of each line.
- ``.csv`` and ``.parquet``: converted once by ``datasets`` into a memory-mapped Arrow
  file under the mint_envkit cache (``MINT_ENVKIT_CACHE``, else ``~/.cache/mint_envkit``).
- a ``datasets.Dataset``: rows are read with ``dataset[i]`` (memory-mapped when it was
  loaded from disk or the Hub). A streaming ``IterableDataset`` has no random access and
  is refused.

``datasets`` is an optional extra (``pip install 'mint-envkit[datasets]'``), needed for
csv, parquet and Hugging Face datasets, not for jsonl. Sources pickle (a file source as
its path; a dataset as ``datasets`` pickles it), so the builder stays picklable.

Example::

    from mint_envkit import DatasetBuilder
    from mint_envkit.builders.sources import problems_from

    source = problems_from("gsm8k_train.jsonl", fields={"question": "question", "answer": "answer"})
    builder = DatasetBuilder(env=MathEnv, problems=source, batch_size=8, group_size=4,
                             model_name="mint-envkit/tiny-qwen3")
    train, test = await builder()   # reads one row now, then each batch's rows when asked
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError, MissingExtraError, ProblemError

__all__ = ["ProblemSource", "is_source_like", "problems_from"]

Fields = Mapping[str, str] | Callable[[dict[str, Any]], Mapping[str, Any]] | None

_INSTALL = "pip install 'mint-envkit[datasets]' (or: pip install datasets)"
_SUFFIXES = (".jsonl", ".csv", ".parquet")


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as err:
        raise MissingExtraError(
            f"reading csv, parquet or Hugging Face datasets needs the datasets package "
            f"({err}); run {_INSTALL}"
        ) from None
    return datasets


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


class _JsonlRows:
    """Random access to the lines of a jsonl file through a byte-offset index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: array[int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_offsets": None}  # the index is rebuilt where used

    def _index(self) -> array[int]:
        if self._offsets is None:
            offsets: array[int] = array("q")
            position = 0
            with open(self.path, "rb") as file:
                for line in file:
                    if line.strip():
                        offsets.append(position)
                    position += len(line)
            self._offsets = offsets
        return self._offsets

    def __len__(self) -> int:
        return len(self._index())

    def __getitem__(self, index: int) -> dict[str, Any]:
        with open(self.path, "rb") as file:
            file.seek(self._index()[index])
            line = file.readline()
        try:
            row = json.loads(line)
        except ValueError as err:
            raise ProblemError(f"{self.path}: row {index} is not valid JSON ({err})") from None
        if not isinstance(row, dict):
            raise ProblemError(
                f"{self.path}: row {index} must be a JSON object of fields, got "
                f"{type(row).__name__}"
            )
        return row


class _ArrowFile:
    """A csv or parquet file, converted by ``datasets`` to a memory-mapped Arrow dataset."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._dataset: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_dataset": None}  # reopened (from the cache) where used

    def _open(self) -> Any:
        if self._dataset is None:
            datasets = _import_datasets()
            from mint_envkit.rendering.tokenizer import cache_dir

            read = datasets.Dataset.from_csv if self.path.suffix == ".csv" else None
            read = read or datasets.Dataset.from_parquet
            self._dataset = read(str(self.path), cache_dir=str(cache_dir() / "datasets"))
        return self._dataset

    def __len__(self) -> int:
        return len(self._open())

    def __getitem__(self, index: int) -> dict[str, Any]:
        return dict(self._open()[index])


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
        rows = _JsonlRows(path) if path.suffix == ".jsonl" else _ArrowFile(path)
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

            source[0]["question"]
        """
        if not 0 <= index < len(self):
            raise IndexError(f"row {index} is outside {self.description} (0..{len(self) - 1})")
        row = dict(self.rows[index])
        if self.fields is None:
            return row
        if callable(self.fields):
            problem = self.fields(row)
            if not isinstance(problem, Mapping):
                raise ProblemError(
                    f"{self.description} row {index}: the fields function returned "
                    f"{type(problem).__name__}; it must return a dict of fields"
                )
            return dict(problem)
        missing = [column for column in self.fields.values() if column not in row]
        if missing:
            raise ProblemError(
                f"{self.description} row {index} has no column(s) "
                f"{', '.join(map(repr, missing))}; its columns are {sorted(row)}. Fix "
                "fields={env field: column}"
            )
        return {name: row[column] for name, column in self.fields.items()}


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
