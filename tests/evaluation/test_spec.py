"""Which problems an evaluation runs: ENV_SPEC loading, splits, K samples per group."""

from __future__ import annotations

from pathlib import Path

import pytest

from mint_envkit import DatasetBuilder, MintEnvkitError
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.spec import eval_problems, load_target
from mint_envkit.rendering import TINY_MODEL_NAME
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _problems(n):
    return [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(n)]


def _builder(**fields):
    return DatasetBuilder(
        env=ArithmeticEnv,
        problems=_problems(6),
        batch_size=4,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        n_epochs=3,
        **fields,
    )


async def test_every_problem_once_with_k_envs_in_order():
    chosen = await eval_problems(_builder(max_generation_tokens=12), samples=5)
    assert [(split, g.index) for split, g in chosen.pairs] == [("train", i) for i in range(6)]
    assert {g.group_size for _, g in chosen.pairs} == {5}
    # the builder's model and reply limit: what training samples with
    assert (chosen.model_name, chosen.max_tokens) == (TINY_MODEL_NAME, 12)


async def test_built_groups_are_evaluated_as_they_are():
    train, _ = await _builder()()
    chosen = await eval_problems(train)
    assert chosen.split == "test" and chosen.samples == 2  # the groups' own size
    assert len(chosen.pairs) == len(train.groups())


async def test_the_test_split_is_the_default_when_there_is_one():
    builder = _builder(test_problems=_problems(2))
    chosen = await eval_problems(builder, samples=3)
    pairs = chosen.pairs
    assert [(s, g.index, g.group_size) for s, g in pairs] == [("test", 0, 3), ("test", 1, 3)]
    both = await eval_problems(builder, samples=3, split="all", limit=1)
    assert [(s, g.index) for s, g in both.pairs] == [("train", 0), ("test", 0)]


async def test_bad_splits_and_missing_problems_are_named():
    with pytest.raises(ConfigError, match="no test split"):
        await eval_problems(_builder(), samples=2, split="test")
    with pytest.raises(ConfigError, match="'dev'"):
        await eval_problems(_builder(), samples=2, split="dev")
    with pytest.raises(ConfigError, match="needs problems"):
        await eval_problems(ArithmeticEnv, model_name=TINY_MODEL_NAME, samples=2)
    with pytest.raises(ConfigError, match="needs model_name"):
        await eval_problems(ArithmeticEnv, samples=2, problems=[ARITHMETIC_PROBLEM])
    with pytest.raises(ConfigError, match="brings its own problems"):
        await eval_problems(_builder(), samples=2, problems=[ARITHMETIC_PROBLEM])


async def test_an_env_spec_with_problems():
    spec = f"{EXAMPLES / 'arithmetic_env.py'}:ArithmeticEnv"
    chosen = await eval_problems(
        spec, model_name=TINY_MODEL_NAME, samples=2, problems=[ARITHMETIC_PROBLEM]
    )
    assert len(chosen.pairs) == 1 and chosen.pairs[0][1].problem == ARITHMETIC_PROBLEM


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected MODULE:NAME"),
        ("missing/file.py:Env", "no such file: missing/file.py"),
        ("mint_envkit_no_such_module:Env", "cannot import mint_envkit_no_such_module"),
        ("mint_envkit.rewards:NoSuchEnv", "has no attribute 'NoSuchEnv'"),
    ],
)
def test_an_unknown_env_spec_is_named(spec, message):
    with pytest.raises(MintEnvkitError, match=message):
        load_target(spec)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"samples": 0}, "samples must be an integer >= 1"),
        ({"samples": True}, "samples must be an integer >= 1, got True"),
        ({"limit": 0}, "limit must be an integer >= 1 or None"),
    ],
)
async def test_evaluate_checks_its_options_before_anything_starts(option, message):
    from mint_envkit.evaluation import evaluate

    # an env class with no problems would fail later: the options go first
    with pytest.raises(ConfigError, match=message):
        await evaluate(ArithmeticEnv, model_name=TINY_MODEL_NAME, **option)


def test_evaluation_builds_no_training_config():
    import ast

    source = (Path(__file__).resolve().parents[2] / "src/mint_envkit/evaluation/run.py").read_text()
    imported = {
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert "mint_envkit.rl.config.Config" not in imported
