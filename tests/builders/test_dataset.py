"""DatasetBuilder: seeded batches, epochs, splits, loaders and build-time checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mint_envkit import (
    ConfigError,
    DatasetBuilder,
    GroupBuilder,
    ProblemDataset,
    ProblemError,
    SingleTurnEnv,
)
from mint_envkit.rendering import TINY_MODEL_NAME

PROBLEMS = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(20)]


def builder(**kwargs) -> DatasetBuilder:
    fields = {
        "env": SingleTurnEnv,
        "problems": PROBLEMS,
        "batch_size": 4,
        "group_size": 2,
        "model_name": TINY_MODEL_NAME,
    }
    fields.update(kwargs)
    return DatasetBuilder(**fields)


def flat(batches: list[list[str]]) -> list[str]:
    return [answer for batch in batches for answer in batch]


def order(dataset: ProblemDataset) -> list[list[str]]:
    return [[g.problem["answer"] for g in dataset.get_batch(i)] for i in range(len(dataset))]


async def test_batches_hold_group_builders():
    train, test = await builder()()
    assert test is None
    assert len(train) == 5
    batch = train.get_batch(0)
    assert len(batch) == 4
    assert all(isinstance(g, GroupBuilder) for g in batch)
    assert all(g.group_size == 2 and g.model_name == TINY_MODEL_NAME for g in batch)
    assert sorted(g.index for g in train.groups()) == list(range(20))
    for g in train.groups():
        assert g.problem == PROBLEMS[g.index]


async def test_same_seed_same_batches():
    first, _ = await builder(seed=3)()
    second, _ = await builder(seed=3)()
    assert order(first) == order(second)
    assert first == second


async def test_different_seed_different_order():
    a, _ = await builder(seed=3)()
    b, _ = await builder(seed=4)()
    assert order(a) != order(b)
    assert sorted(flat(order(a))) == sorted(flat(order(b)))


SUBPROCESS_ORDER = """
import asyncio, json
from mint_envkit import DatasetBuilder, SingleTurnEnv
problems = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(20)]
train, _ = asyncio.run(DatasetBuilder(env=SingleTurnEnv, problems=problems, batch_size=4,
    group_size=2, model_name="mint-envkit/tiny-qwen3", seed=3, n_epochs=2)())
print(json.dumps([[g.problem["answer"] for g in train.get_batch(i)] for i in range(len(train))]))
"""


async def test_same_seed_same_batches_in_another_process():
    env = {**os.environ, "PYTHONHASHSEED": "987"}
    out = subprocess.run(
        [sys.executable, "-c", SUBPROCESS_ORDER],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    here, _ = await builder(seed=3, n_epochs=2)()
    assert json.loads(out.stdout) == order(here)


async def test_shuffle_false_keeps_the_order():
    train, _ = await builder(shuffle=False, seed=9)()
    assert flat(order(train)) == [p["answer"] for p in PROBLEMS]


async def test_default_shuffles():
    train, _ = await builder()()
    assert flat(order(train)) != [p["answer"] for p in PROBLEMS]


async def test_n_epochs_repeats_every_problem_each_epoch_reshuffled():
    train, _ = await builder(n_epochs=3, batch_size=5)()
    answers_in_order = flat(order(train))
    assert len(answers_in_order) == 60 and len(train) == 12
    answers = sorted(p["answer"] for p in PROBLEMS)
    epochs = [answers_in_order[0:20], answers_in_order[20:40], answers_in_order[40:60]]
    assert all(sorted(epoch) == answers for epoch in epochs)
    assert epochs[0] != epochs[1] or epochs[1] != epochs[2]


async def test_n_epochs_without_shuffle():
    train, _ = await builder(n_epochs=2, shuffle=False, batch_size=20)()
    assert order(train) == [[p["answer"] for p in PROBLEMS]] * 2


async def test_partial_last_batch_is_kept_unless_drop_last():
    train, _ = await builder(problems=PROBLEMS[:5], batch_size=2)()
    assert [len(b) for b in order(train)] == [2, 2, 1]
    train, _ = await builder(problems=PROBLEMS[:5], batch_size=2, drop_last=True)()
    assert [len(b) for b in order(train)] == [2, 2]
    train, _ = await builder(problems=PROBLEMS[:4], batch_size=2, drop_last=True)()
    assert [len(b) for b in order(train)] == [2, 2]


async def test_test_problems_split():
    held_out = [{"question": "What is 100 + 1?", "answer": "101"}] * 3
    train, test = await builder(test_problems=held_out, batch_size=2, test_group_size=1)()
    assert len(train.groups()) == 20
    assert test is not None and [len(b) for b in order(test)] == [2, 1]
    assert all(g.group_size == 1 for g in test.groups())
    assert [g.index for g in test.groups()] == [0, 1, 2]


async def test_test_fraction_split_is_seeded_and_disjoint():
    train, test = await builder(test_fraction=0.25, seed=1)()
    assert test is not None
    train_answers = {g.problem["answer"] for g in train.groups()}
    test_answers = [g.problem["answer"] for g in test.groups()]
    assert len(test_answers) == 5 and len(train_answers) == 15
    assert train_answers.isdisjoint(test_answers)
    assert train_answers | set(test_answers) == {p["answer"] for p in PROBLEMS}
    _, again = await builder(test_fraction=0.25, seed=1)()
    assert [g.problem for g in again.groups()] == [g.problem for g in test.groups()]
    _, other = await builder(test_fraction=0.25, seed=2)()
    assert {g.problem["answer"] for g in other.groups()} != set(test_answers)


def test_test_fraction_and_test_problems_are_exclusive():
    with pytest.raises(ConfigError, match="either test_problems or test_fraction"):
        builder(test_fraction=0.2, test_problems=PROBLEMS[:2])


@pytest.mark.parametrize("fraction", [1.0, -0.1, 1.5, "0.2", True])
def test_bad_test_fraction(fraction):
    with pytest.raises(ConfigError, match="test_fraction"):
        builder(test_fraction=fraction)


async def test_test_fraction_leaving_no_training_problem():
    with pytest.raises(ConfigError, match="leaves no training problems"):
        await builder(problems=PROBLEMS[:2], test_fraction=0.9)()


async def test_malformed_problem_fails_at_build_time_naming_index_and_field():
    problems = [*PROBLEMS[:3], {"question": "What is 3 + 1?"}, *PROBLEMS[4:]]
    with pytest.raises(ProblemError, match="problem 3") as info:
        await builder(problems=problems)()
    assert "'answer'" in str(info.value)
    problems = [*PROBLEMS[:2], {**PROBLEMS[2], "level": 2}]
    with pytest.raises(ProblemError, match="problem 2") as info:
        await builder(problems=problems)()
    assert "'level'" in str(info.value)


async def test_malformed_test_problem_is_named_too():
    with pytest.raises(ProblemError, match="test problem 1") as info:
        await builder(test_problems=[PROBLEMS[0], {"answer": "1"}])()
    assert "'question'" in str(info.value)


async def test_malformed_problem_index_is_the_users_index_with_test_fraction():
    problems = [dict(p) for p in PROBLEMS]
    del problems[17]["answer"]
    with pytest.raises(ProblemError, match=r"problem 17\b"):
        await builder(problems=problems, test_fraction=0.25, seed=0)()


async def test_non_dict_problem_is_named():
    with pytest.raises(ProblemError, match="problem 1 must be a dict"):
        await builder(problems=[PROBLEMS[0], "What is 1 + 1?"])()


async def test_no_problems():
    with pytest.raises(ProblemError, match="no problems"):
        await builder(problems=[])()


@pytest.mark.parametrize("problems", ["What is 1 + 1?", 42, (p for p in PROBLEMS)])
def test_problems_must_be_a_sequence_or_a_loader(problems):
    with pytest.raises(ConfigError, match="problems must be"):
        builder(problems=problems)


def load_problems():
    return PROBLEMS[:6]


async def load_problems_async():
    return PROBLEMS[:6]


@pytest.mark.parametrize("loader", [load_problems, load_problems_async])
async def test_a_loader_function(loader):
    train, _ = await builder(problems=loader, shuffle=False, batch_size=3)()
    assert order(train) == [["1", "2", "3"], ["4", "5", "6"]]
    assert builder(problems=loader).describe()["n_problems"] is None


async def test_loader_rows_are_checked():
    def bad_loader():
        return [PROBLEMS[0], {"question": "q"}]

    with pytest.raises(ProblemError, match="problem 1"):
        await builder(problems=bad_loader)()


async def test_get_batch_out_of_range():
    train, _ = await builder(problems=PROBLEMS[:6], batch_size=2)()
    with pytest.raises(
        IndexError, match=r"batch 3 does not exist; this dataset has 3 batches \(0..2\)"
    ):
        train.get_batch(3)
    with pytest.raises(IndexError, match="batch -1 does not exist"):
        train.get_batch(-1)


@pytest.mark.parametrize("field", ["batch_size", "group_size", "n_epochs", "test_group_size"])
@pytest.mark.parametrize("value", [0, -2, 1.0])
def test_positive_integer_fields(field, value):
    with pytest.raises(ConfigError, match=f"{field} must be an integer >= 1"):
        builder(**{field: value})


def test_unknown_renderer_name():
    with pytest.raises(ConfigError, match="renderer_name"):
        builder(renderer_name="nope")


async def test_groups_carry_the_builders_settings():
    train, _ = await builder(
        renderer_name="qwen3_disable_thinking",
        max_trajectory_tokens=256,
        max_generation_tokens=32,
        failed_parse_reward=-2.0,
        context_overflow_reward=-0.5,
        score_truncated=True,
    )()
    g = train.get_batch(0)[0]
    assert g.renderer_name == "qwen3_disable_thinking"
    assert (g.max_trajectory_tokens, g.max_generation_tokens) == (256, 32)
    assert (g.failed_parse_reward, g.context_overflow_reward, g.score_truncated) == (
        -2.0,
        -0.5,
        True,
    )


def test_describe_is_json_ready():
    data = builder(seed=5, test_fraction=0.1).describe()
    json.dumps(data)
    assert data["env"] == "mint_envkit.envs.single_turn.SingleTurnEnv"
    assert data["n_problems"] == 20 and data["seed"] == 5 and data["test_fraction"] == 0.1


def test_problems_are_stored_immutably():
    problems = list(PROBLEMS[:3])
    b = builder(problems=problems)
    problems.append(PROBLEMS[3])
    assert len(b.problems) == 3


async def test_a_context_limit_reserves_the_reply_limit_without_setting_it_twice():
    # The builder owns the reply limit (default 64): a max_trajectory_tokens
    # context reserves it for each reply, and Config.max_tokens is the same value.
    builder = DatasetBuilder(
        env=SingleTurnEnv,
        problems=[{"question": "What is 1 + 1?", "answer": "2"}],
        batch_size=1,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        max_trajectory_tokens=100,
    )
    train, _ = await builder()
    group = train.get_batch(0)[0]
    assert group.max_generation_tokens == 64
    env = (await group.make_envs())[0]
    assert env.max_generation_tokens == 64
    assert builder.describe()["max_generation_tokens"] == 64
