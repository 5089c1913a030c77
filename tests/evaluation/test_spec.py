"""Which problems an evaluation runs: ENV_SPEC loading, splits, K samples per group."""

from __future__ import annotations

from pathlib import Path

import pytest

from mint_envkit import TINY_MODEL_NAME, DatasetBuilder, MintEnvkitError
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.spec import eval_groups, load_target
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
    pairs = await eval_groups(_builder(), model_name=TINY_MODEL_NAME, samples=5)
    assert [(split, g.index) for split, g in pairs] == [("train", i) for i in range(6)]
    assert {g.group_size for _, g in pairs} == {5}


async def test_the_test_split_is_the_default_when_there_is_one():
    builder = _builder(test_problems=_problems(2))
    pairs = await eval_groups(builder, model_name=TINY_MODEL_NAME, samples=3)
    assert [(s, g.index, g.group_size) for s, g in pairs] == [("test", 0, 3), ("test", 1, 3)]
    both = await eval_groups(builder, model_name=TINY_MODEL_NAME, samples=3, split="all", limit=1)
    assert [(s, g.index) for s, g in both] == [("train", 0), ("test", 0)]


async def test_bad_splits_and_missing_problems_are_named():
    with pytest.raises(ConfigError, match="no test split"):
        await eval_groups(_builder(), model_name=TINY_MODEL_NAME, samples=2, split="test")
    with pytest.raises(ConfigError, match="'dev'"):
        await eval_groups(_builder(), model_name=TINY_MODEL_NAME, samples=2, split="dev")
    with pytest.raises(ConfigError, match="needs problems"):
        await eval_groups(ArithmeticEnv, model_name=TINY_MODEL_NAME, samples=2)
    with pytest.raises(ConfigError, match="brings its own problems"):
        await eval_groups(
            _builder(), model_name=TINY_MODEL_NAME, samples=2, problems=[ARITHMETIC_PROBLEM]
        )


async def test_an_env_spec_with_problems():
    spec = f"{EXAMPLES / 'arithmetic_env.py'}:ArithmeticEnv"
    pairs = await eval_groups(
        spec, model_name=TINY_MODEL_NAME, samples=2, problems=[ARITHMETIC_PROBLEM]
    )
    assert len(pairs) == 1 and pairs[0][1].problem == ARITHMETIC_PROBLEM


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
    ("settings", "message"),
    [
        ({"samples": 0}, "samples must be an integer >= 1, got 0"),
        ({"samples": True}, "samples must be an integer >= 1, got True"),
        ({"limit": 0}, "limit must be an integer >= 1 or None, got 0"),
        ({"max_tokens": 0}, "max_tokens must be an integer >= 1, got 0"),
        ({"temperature": 0}, "temperature must be > 0"),
        ({"max_concurrent_groups": True}, "max_concurrent_groups must be an integer >= 1"),
        ({"backend": "cloud"}, "backend must be 'auto', 'mint' or 'local'"),
        ({"base_url": "localhost:8000"}, "base_url must start with http://"),
        ({"model_name": " "}, "model_name must be a non-empty string"),
    ],
)
def test_eval_settings_refuse_bad_values(settings, message):
    from mint_envkit.evaluation.spec import EvalSettings

    with pytest.raises(ConfigError, match=message):
        EvalSettings(**({"model_name": TINY_MODEL_NAME} | settings))


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"samples": 0}, "samples must be an integer >= 1"),
        ({"max_tokens": True}, "max_tokens must be an integer >= 1, got True"),
        ({"temperature": -1.0}, "temperature must be > 0"),
        ({"max_concurrent": 0}, "max_concurrent_groups must be an integer >= 1"),
    ],
)
async def test_evaluate_checks_its_settings_before_anything_starts(option, message):
    from mint_envkit.evaluation import evaluate

    # an env class with no problems would fail later, in eval_groups: the settings go first
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
