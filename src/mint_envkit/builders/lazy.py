"""Batches over a :class:`~mint_envkit.builders.sources.ProblemSource`, built when asked for.

The one dataset path of :class:`~mint_envkit.DatasetBuilder`: problems from a file or a
Hugging Face dataset are a lazy source, and a list of problems is an in-memory one, so
the train/test split, the seeded order and the batches come from one implementation
(:func:`build_lazy`, :func:`build_listed`). Only the seeded order of row indices is kept
in memory, and :meth:`LazyProblemDataset.get_batch` reads the rows of one batch when it
is called. Every row of a file is read and checked once, streaming, when the builder is
called, so a bad row fails before the first training step, naming its file and line.

Example::

    # not run: `MathEnv` comes from your own code
    train, test = await DatasetBuilder(env=MathEnv, problems="train.jsonl", batch_size=8,
                                       group_size=4, model_name="mint-envkit/tiny-qwen3")()
    type(train).__name__      # 'LazyProblemDataset'
    groups = train.get_batch(3)   # reads the 8 rows of batch 3 now
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Callable
from typing import Any

import attrs

from mint_envkit.builders.datafiles import is_empty
from mint_envkit.builders.dataset import DatasetBuilder, ProblemDataset
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.builders.sources import ProblemSource
from mint_envkit.envs.problem import bind_problem
from mint_envkit.errors import ConfigError, ProblemError


@attrs.frozen
class LazyProblemDataset(ProblemDataset):
    """A :class:`~mint_envkit.ProblemDataset` whose groups are built batch by batch.

    ``order`` holds the source's row index of every group, epochs one after another;
    ``positions`` the index each group reports (its problem's position in the split).

    Example::

        # not run: `train` is a built dataset, built elsewhere
        len(train)                # number of batches
        train.get_batch(0)        # reads batch_size rows, returns their GroupBuilders
    """

    builder: Any = None
    source: Any = None
    order: Any = attrs.field(factory=lambda: array("q"))
    positions: Any = attrs.field(factory=lambda: array("q"))
    group_size: int = 1
    split: str = ""
    recheck: bool = True
    """Check each row against the env when its batch is read (a file may change)."""

    def __len__(self) -> int:
        size = self.builder.batch_size
        if self.builder.drop_last:
            return len(self.order) // size
        return math.ceil(len(self.order) / size)

    def get_batch(self, index: int) -> list[GroupBuilder]:
        """The groups of batch ``index`` (0-based), reading their rows now.

        Raises:
            IndexError: ``index`` is outside ``0 .. len(self) - 1``.
            ProblemError: a row does not fit the env (naming the row).

        Example::

            # not run: `train` is a built dataset, built elsewhere
            groups = train.get_batch(0)
        """
        if not 0 <= index < len(self):
            raise IndexError(
                f"batch {index} does not exist; this dataset has {len(self)} batches "
                f"(0..{len(self) - 1})"
            )
        size = self.builder.batch_size
        span = range(index * size, min((index + 1) * size, len(self.order)))
        return [self._group(self.order[i], self.positions[i]) for i in span]

    def groups(self) -> list[GroupBuilder]:
        """Every group of every batch, in order (reads every row of the split).

        Example::

            # not run: `test` is a built dataset, built elsewhere
            len(test.groups())
        """
        return [group for index in range(len(self)) for group in self.get_batch(index)]

    def _group(self, row: int, position: int) -> GroupBuilder:
        problem = self.source[row]
        if self.recheck:
            source, split = self.source, self.split
            _check(self.builder, problem, lambda: f"{split}problem {row}, {source.where(row)}")
        return self.builder._group(problem, position, self.group_size)


def _check(
    builder: DatasetBuilder,
    problem: dict,
    where: str | Callable[[], str],
    fitting: set[tuple[str, ...]] | None = None,
) -> None:
    """``problem`` fits the env: its fields are there and the required ones are not empty.

    ``where`` (or ``where()``, called only on an error) names the row in the message;
    ``fitting`` remembers the field names already found to fit (a file's rows share them).
    """
    required = getattr(builder.env, "required_fields", None)
    if required is None:
        return
    name = getattr(builder.env, "__name__", "env")
    keys = tuple(problem)
    if fitting is None or keys not in fitting:
        optional = getattr(builder.env, "optional_fields", {})
        try:
            bind_problem(name, tuple(required), optional, problem)
        except ProblemError as err:
            raise ProblemError(f"{_where(where)}: {err}") from None
        if fitting is not None and len(fitting) < 64:
            fitting.add(keys)
    empty = [field for field in required if is_empty(problem[field])]
    if empty:
        raise ProblemError(
            f"{_where(where)}: {name} needs field(s) {', '.join(map(repr, empty))}, which are empty "
            "(null, NaN or an empty csv cell); fill them in or drop the row"
        )


def _where(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


def check_source(builder: DatasetBuilder, source: ProblemSource) -> int:
    """Read and check every row of ``source`` once, streaming; the number of rows.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        n = check_source(builder, builder.problems)
    """
    n = 0
    fitting: set[tuple[str, ...]] = set()
    for _index, where, problem in source.scan():
        _check(builder, problem, where, fitting)
        n += 1
    return n


def _ordered(builder: DatasetBuilder, rows: array) -> array:
    """The training rows in batch order, shuffled exactly as the list path shuffles."""
    rng = random.Random(f"{builder.seed}:0")
    order = array("q")
    for _ in range(builder.n_epochs):
        picks = array("q", range(len(rows)))
        if builder.shuffle:
            rng.shuffle(picks)
        order.extend(rows[i] for i in picks)
    return order


def build_lazy(builder: DatasetBuilder) -> tuple[ProblemDataset, ProblemDataset | None]:
    """``(train, test)`` for a builder whose ``problems`` is a :class:`ProblemSource`.

    Reads and checks every row once, streaming (a bad row fails here, before the first
    training step, naming its file and line); batches read their rows again when asked
    for. A ``test_problems`` list is built as usual; a ``test_fraction`` split
    stays lazy.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        train, test = build_lazy(builder)
    """
    source = builder.problems
    n = check_source(builder, source)
    if n == 0:
        raise ProblemError(f"{source.description} has no rows; give at least one problem")
    return _split_and_order(builder, source, n, recheck=True)


def build_listed(
    builder: DatasetBuilder, problems: list[dict[str, Any]]
) -> tuple[ProblemDataset, ProblemDataset | None]:
    """``(train, test)`` for problems already loaded and checked: an in-memory source.

    The same split, seeded order and batches as :func:`build_lazy` gives for a source
    of the same problems (one implementation).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        train, test = build_listed(builder, await builder.load_problems())
    """
    source = ProblemSource(rows=tuple(problems), description="problems")
    return _split_and_order(builder, source, len(problems), recheck=False)


def _split_and_order(
    builder: DatasetBuilder, source: ProblemSource, n: int, *, recheck: bool
) -> tuple[ProblemDataset, ProblemDataset | None]:
    """Hold out the test split (``test_fraction`` or ``test_problems``), order the rest."""
    rows = array("q", range(n))
    test: ProblemDataset | None = None
    if builder.test_fraction:
        order = array("q", range(n))
        random.Random(f"{builder.seed}:split").shuffle(order)
        n_test = max(1, round(n * builder.test_fraction))
        if n_test >= n:
            raise ConfigError(
                f"test_fraction={builder.test_fraction} leaves no training problems out of "
                f"{n}; lower it"
            )
        held = set(order[:n_test])
        rows = array("q", (i for i in range(n) if i not in held))
        test = _in_order(builder, source, array("q", sorted(held)), recheck=recheck)
    elif builder.test_problems is not None:
        listed = [dict(p) for p in builder.test_problems]
        builder._validate(listed, "test ")
        if listed:
            held_out = ProblemSource(rows=tuple(listed), description="test_problems")
            test = _in_order(builder, held_out, array("q", range(len(listed))), recheck=False)
    order = _ordered(builder, rows)
    train = LazyProblemDataset(
        batches=(),
        builder=builder,
        source=source,
        order=order,
        positions=order,  # a training group reports its problem's index in the source
        group_size=builder.group_size,
        recheck=recheck,
    )
    return train, test


def _in_order(
    builder: DatasetBuilder, source: ProblemSource, rows: array, *, recheck: bool
) -> LazyProblemDataset:
    """A test split: ``rows`` unshuffled, each group reporting its position in the split."""
    return LazyProblemDataset(
        batches=(),
        builder=builder,
        source=source,
        order=rows,
        positions=array("q", range(len(rows))),
        group_size=builder.test_group_size,
        split="test ",
        recheck=recheck,
    )
