"""One dataset path: a list of problems is an in-memory problem source (builders/lazy.py)."""

from __future__ import annotations

import pytest

from mint_envkit import DatasetBuilder, SingleTurnEnv
from mint_envkit.builders.lazy import LazyProblemDataset
from mint_envkit.builders.sources import ProblemSource
from mint_envkit.rendering import TINY_MODEL_NAME

PROBLEMS = [{"question": f"What is {i} + 2?", "answer": str(i + 2)} for i in range(19)]


def builder(problems, **kwargs) -> DatasetBuilder:
    settings = {
        "env": SingleTurnEnv,
        "problems": problems,
        "batch_size": 3,
        "group_size": 2,
        "model_name": TINY_MODEL_NAME,
        "seed": 11,
    }
    settings.update(kwargs)
    return DatasetBuilder(**settings)


def snapshot(dataset) -> list[list[tuple[int, int, dict]]]:
    return [
        [(g.index, g.group_size, g.problem) for g in dataset.get_batch(i)]
        for i in range(len(dataset))
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"test_fraction": 0.3},
        {"n_epochs": 3, "drop_last": True},
        {"shuffle": False, "test_problems": PROBLEMS[:4], "test_group_size": 3},
        {"n_epochs": 2, "seed": 0, "test_fraction": 0.1, "drop_last": True},
    ],
)
async def test_a_lazy_and_an_in_memory_source_of_the_same_problems_give_identical_batches(
    kwargs,
) -> None:
    listed_train, listed_test = await builder(PROBLEMS, **kwargs)()
    source = ProblemSource(rows=[dict(p) for p in PROBLEMS], description="rows")
    lazy_train, lazy_test = await builder(source, **kwargs)()
    assert len(listed_train) > 1
    assert snapshot(listed_train) == snapshot(lazy_train)
    assert (listed_test is None) == (lazy_test is None)
    if listed_test is not None:
        assert snapshot(listed_test) == snapshot(lazy_test)


async def test_a_list_takes_the_one_path_of_a_source() -> None:
    train, test = await builder(PROBLEMS, test_fraction=0.2)()
    assert isinstance(train, LazyProblemDataset) and isinstance(test, LazyProblemDataset)
    assert isinstance(train.source, ProblemSource)


async def test_the_seed_orders_the_batches_and_a_loader_gives_the_list_order() -> None:
    first, _ = await builder(PROBLEMS)()
    again, _ = await builder(PROBLEMS)()
    other, _ = await builder(PROBLEMS, seed=12)()
    loaded, _ = await builder(lambda: PROBLEMS)()
    assert snapshot(first) == snapshot(again) == snapshot(loaded)
    assert snapshot(first) != snapshot(other)
    # every problem once per epoch, reporting its index in the list
    assert sorted(g.index for g in first.groups()) == list(range(len(PROBLEMS)))
    assert all(g.problem == PROBLEMS[g.index] for g in first.groups())
