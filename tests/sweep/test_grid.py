"""Grid expansion, config names, and the MINT_RL_* variables."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import textwrap

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mint_envkit import DatasetBuilder, SingleTurnEnv
from mint_envkit.errors import ConfigError
from mint_envkit.rl.config import Config, KLReferenceConfig
from mint_envkit.runs.names import config_name, format_value
from mint_envkit.sweep import DEFAULT_GRID, grid_from_env, log_root_from_env
from mint_envkit.sweep._grid import apply_fields, expand_grid, normalize_grid

DEFAULT_NAMES = [
    "kl0p0-t0p7-g2",
    "kl0p0-t0p7-g4",
    "kl0p0-t1p0-g2",
    "kl0p0-t1p0-g4",
    "kl0p02-t0p7-g2",
    "kl0p02-t0p7-g4",
    "kl0p02-t1p0-g2",
    "kl0p02-t1p0-g4",
]


# ------------------------------------------------------------------ names


def test_default_grid_gives_eight_named_configs(make_config):
    points = expand_grid(make_config(), DEFAULT_GRID)
    assert [p.name for p in points] == DEFAULT_NAMES
    assert points[5].params == {"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4}


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4}, "kl0p02-t0p7-g4"),
        ({"learning_rate": 3e-4}, "lr3em04"),
        ({"learning_rate": 2.5e-5}, "lr2p5em05"),
        ({"learning_rate": 1e-3}, "lr0p001"),
        ({"learning_rate": 1e7}, "lr1e07"),
        ({"batch_size": 8, "lora_rank": 16, "max_tokens": 64}, "b8-r16-mt64"),
        ({"seed": 0, "max_steps": 3}, "s0-steps3"),
        ({"sampling_seed": 1, "seed": 0}, "s0-ss1"),
        ({"top_k": -1}, "top_k_m1"),
        ({"loss_fn": "ppo"}, "loss_fn_ppo"),
        ({"train_mlp": False}, "train_mlp_false"),
        ({"renderer_name": "qwen3"}, "renderer_name_qwen3"),
        ({"model_name": "Qwen/Qwen3-0.6B"}, "model_name_Qwen_Qwen3m0p6B"),
        ({}, "base"),
    ],
)
def test_config_name_examples(params, name):
    assert config_name(params) == name


def test_name_does_not_depend_on_dict_order(make_config):
    a = config_name({"group_size": 4, "kl_penalty_coef": 0.02, "temperature": 0.7, "zeta": 1})
    b = config_name({"zeta": 1, "temperature": 0.7, "kl_penalty_coef": 0.02, "group_size": 4})
    assert a == b == "kl0p02-t0p7-g4-zeta_1"
    grid_a = {"group_size": [2, 4], "temperature": [0.7, 1.0], "kl_penalty_coef": [0.0, 0.02]}
    assert [p.name for p in expand_grid(make_config(), grid_a)] == DEFAULT_NAMES


def test_names_are_stable_across_processes():
    code = textwrap.dedent(
        """
        import json
        from mint_envkit.runs.names import config_name
        params = [{"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4},
                  {"learning_rate": 3e-4, "loss_fn": "ppo", "loss_fn_config": {"clip": 0.2}},
                  {"model_name": "a" * 300}]
        print(json.dumps([config_name(p) for p in params]))
        """
    )
    params = [
        {"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4},
        {"learning_rate": 3e-4, "loss_fn": "ppo", "loss_fn_config": {"clip": 0.2}},
        {"model_name": "a" * 300},
    ]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(out.stdout) == [config_name(p) for p in params]


def test_long_names_are_shortened_with_a_hash():
    long_a = config_name({"model_name": "a" * 300})
    long_b = config_name({"model_name": "a" * 299 + "b"})
    assert len(long_a) <= 120 and len(long_b) <= 120
    assert long_a != long_b


def test_sanitised_collisions_get_distinct_names(make_config):
    points = expand_grid(make_config(), {"model_name": ["org/m", "org_m", "ORG_M"]})
    names = [p.name for p in points]
    assert len({n.lower() for n in names}) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", n) for n in names)


@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False))
def test_float_tokens_are_safe_and_injective(a, b):
    ta, tb = format_value(a), format_value(b)
    assert re.fullmatch(r"[A-Za-z0-9_]+", ta)
    if a != b:
        assert ta != tb


@given(st.integers(), st.integers())
def test_int_tokens_are_injective(a, b):
    assert (format_value(a) == format_value(b)) == (a == b)


# ---------------------------------------------------------------- applying


def test_builder_fields_go_to_the_builder_and_config_fields_to_config(make_config):
    base = make_config()
    point = expand_grid(base, {"group_size": [8], "batch_size": [16], "temperature": [0.5]})[0]
    assert point.config.dataset_builder == attrs.evolve(
        base.dataset_builder, group_size=8, batch_size=16
    )
    assert point.config.temperature == 0.5
    assert base.dataset_builder == make_config().dataset_builder and base.temperature == 1.0


def test_seed_is_the_data_order_and_sampling_seed_the_samplers(make_config):
    base = make_config(sampling_seed=7)
    points = expand_grid(base, {"seed": [1, 2]})
    assert [(p.config.sampling_seed, p.config.dataset_builder.seed) for p in points] == [
        (7, 1),
        (7, 2),
    ]
    assert [p.name for p in points] == ["s1", "s2"]
    points = expand_grid(base, {"sampling_seed": [1, 2]})
    assert [(p.config.sampling_seed, p.config.dataset_builder.seed) for p in points] == [
        (1, 0),
        (2, 0),
    ]
    assert [p.name for p in points] == ["ss1", "ss2"]


def _dataset_config(**fields):
    builder = DatasetBuilder(
        env=SingleTurnEnv,
        problems=[{"question": "q", "answer": "a"}],
        batch_size=1,
        group_size=2,
        model_name="mint-envkit/tiny-qwen3",
    )
    return Config(dataset_builder=builder, log_path="unused", **fields)


def test_builder_owned_values_are_swept_on_the_builder_and_config_follows():
    points = expand_grid(_dataset_config(), {"max_tokens": [16, 32]})
    assert [
        (p.config.max_tokens, p.config.dataset_builder.max_generation_tokens) for p in points
    ] == [
        (16, 16),
        (32, 32),
    ]
    points = expand_grid(_dataset_config(), {"max_generation_tokens": [8]})
    assert points[0].config.max_tokens == 8 and points[0].name == "mt8"
    point = expand_grid(_dataset_config(), {"model_name": ["mint-envkit/smollm2-135m-instruct"]})[0]
    assert point.config.model_name == point.config.dataset_builder.model_name
    assert point.config.model_name == "mint-envkit/smollm2-135m-instruct"
    with pytest.raises(ConfigError, match="same field"):
        normalize_grid(_dataset_config(), {"max_tokens": [16], "max_generation_tokens": [32]})


def test_prefixed_key_of_a_builder_only_field_is_the_plain_key(make_config):
    grid = normalize_grid(make_config(), {"dataset_builder.group_size": [2]})
    assert grid == {"group_size": [2]}
    with pytest.raises(ConfigError, match="same field"):
        normalize_grid(make_config(), {"group_size": [2], "dataset_builder.group_size": [4]})


def test_dataclass_builder_works_too(make_config):
    @dataclasses.dataclass(frozen=True)
    class DataclassBuilder:
        group_size: int = 2
        batch_size: int = 1

    points = expand_grid(make_config(dataset_builder=DataclassBuilder()), {"group_size": [3]})
    assert points[0].config.dataset_builder.group_size == 3


def test_plain_builder_cannot_be_varied(make_config):
    class Plain:
        group_size = 2

    with pytest.raises(ConfigError, match="not an attrs or dataclass"):
        expand_grid(make_config(dataset_builder=Plain()), {"group_size": [2]})


def test_kl_reference_is_filled_for_positive_kl_only(make_config):
    points = expand_grid(make_config(), {"kl_penalty_coef": [0.0, 0.1]})
    assert points[0].config.kl_reference_config is None
    assert points[1].config.kl_reference_config == KLReferenceConfig(base_model="tiny-model")


def test_kl_reference_follows_a_gridded_model_name(make_config):
    points = expand_grid(make_config(), {"kl_penalty_coef": [0.1], "model_name": ["m1", "m2"]})
    assert [p.config.kl_reference_config.base_model for p in points] == ["m1", "m2"]


def test_kl_reference_of_the_base_is_kept(make_config):
    ref = KLReferenceConfig(base_model="reference")
    points = expand_grid(make_config(kl_reference_config=ref), {"kl_penalty_coef": [0.0, 0.1]})
    assert [p.config.kl_reference_config for p in points] == [ref, ref]


def test_apply_fields_sets_config_and_builder_fields(make_config):
    config = apply_fields(make_config(), {"max_steps": 3, "batch_size": 8})
    assert config.max_steps == 3 and config.dataset_builder.batch_size == 8


# ------------------------------------------------------------ bad grids


def test_unknown_key_lists_valid_names(make_config):
    with pytest.raises(ConfigError) as info:
        expand_grid(make_config(), {"temprature": [0.7]})
    message = str(info.value)
    assert "'temprature'" in message
    for name in ("temperature", "kl_penalty_coef", "group_size", "batch_size"):
        assert name in message


def test_invalid_combination_names_the_point_and_field(make_config):
    with pytest.raises(ConfigError) as info:
        expand_grid(make_config(), {"temperature": [0.7, 0.0]})
    assert "t0p0" in str(info.value) and "Config.temperature" in str(info.value)
    with pytest.raises(ConfigError, match="group_size"):
        expand_grid(make_config(), {"group_size": [0]})


@pytest.mark.parametrize(
    ("grid", "match"),
    [
        ({"temperature": []}, "empty"),
        ({"temperature": 0.7}, r"must be a list.*\[0\.7\]"),
        ({"loss_fn": "ppo"}, "must be a list"),
        ({"temperature": [0.7, 0.7]}, "twice"),
        ({"group_size": [2, 2.0]}, "twice"),
        ({"log_path": ["a"]}, "sweep sets it"),
        ({"dataset_builder": [None]}, "vary the builder's fields"),
        ({3: [1]}, "grid keys must be field names"),
    ],
)
def test_bad_grids_raise_config_error(make_config, grid, match):
    with pytest.raises(ConfigError, match=match):
        expand_grid(make_config(), grid)


def test_grid_must_be_a_mapping(make_config):
    with pytest.raises(ConfigError, match="mapping"):
        normalize_grid(make_config(), [("temperature", [1.0])])


# -------------------------------------------------- environment variables


def test_env_defaults_give_eight_configs_and_one_step(make_config):
    grid, overrides = grid_from_env({})
    assert grid == {
        "kl_penalty_coef": [0.0, 0.02],
        "temperature": [0.7, 1.0],
        "group_size": [2, 4],
    }
    assert overrides == {"max_steps": 1}
    assert len(expand_grid(make_config(), grid)) == 8


def test_every_variable_is_read():
    environ = {
        "MINT_RL_STEPS": "3",
        "MINT_RL_KL_COEFS": " 0.0 , 0.05,0.1 ",
        "MINT_RL_TEMPS": "0.5",
        "MINT_RL_GROUPS": "2, 8",
        "MINT_RL_BATCH": " 16 ",
        "MINT_RL_MAX_TOKENS": "32",
        "MINT_RL_LR": "3e-4",
        "MINT_LORA_RANK": "8",
        "MINT_LOG_ROOT": " ~/runs/x ",
        "UNRELATED": "ignored",
    }
    grid, overrides = grid_from_env(environ)
    assert grid == {
        "kl_penalty_coef": [0.0, 0.05, 0.1],
        "temperature": [0.5],
        "group_size": [2, 8],
    }
    assert overrides == {
        "max_steps": 3,
        "batch_size": 16,
        "max_tokens": 32,
        "learning_rate": 3e-4,
        "lora_rank": 8,
    }
    root = log_root_from_env(environ)
    assert root.endswith("/runs/x") and not root.startswith("~")


def test_env_grid_and_overrides_build_valid_configs(make_config):
    grid, overrides = grid_from_env({"MINT_RL_BATCH": "2", "MINT_RL_LR": "0.001"})
    base = apply_fields(make_config(), overrides)
    assert base.dataset_builder.batch_size == 2 and base.learning_rate == 0.001
    assert base.max_steps == 1
    assert all(p.config.max_steps == 1 for p in expand_grid(base, grid))


def test_defaults_argument_replaces_builtin_defaults():
    grid, overrides = grid_from_env(
        {"MINT_RL_GROUPS": "3"}, defaults={"temperature": [1.0], "max_steps": 5, "lora_rank": 4}
    )
    assert grid == {"kl_penalty_coef": [0.0, 0.02], "temperature": [1.0], "group_size": [3]}
    assert overrides == {"max_steps": 5, "lora_rank": 4}
    with pytest.raises(ConfigError, match="unknown field 'temp'"):
        grid_from_env({}, defaults={"temp": [1.0]})
    with pytest.raises(ConfigError, match="must be a list"):
        grid_from_env({}, defaults={"temperature": 1.0})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MINT_RL_TEMPS", "0.7,abc", "MINT_RL_TEMPS='0.7,abc': 'abc' is not a number"),
        (
            "MINT_RL_TEMPS",
            "0.7,0",
            "MINT_RL_TEMPS='0.7,0': '0' is invalid: Config.temperature must be > 0, a finite number >= 0.001",
        ),
        (
            "MINT_RL_TEMPS",
            "-1",
            "'-1' is invalid: Config.temperature must be > 0, a finite number >= 0.001",
        ),
        ("MINT_RL_TEMPS", "nan", "'nan' is not a number"),
        ("MINT_RL_TEMPS", "inf", "'inf' is not a number"),
        ("MINT_RL_TEMPS", "", "MINT_RL_TEMPS='': empty"),
        ("MINT_RL_TEMPS", " , ", "empty"),
        ("MINT_RL_TEMPS", "0.7,,1.0", "empty item"),
        ("MINT_RL_TEMPS", "0.7,1.0,", "empty item"),
        ("MINT_RL_TEMPS", "0.7,0.70", "'0.70' repeats the value 0.7"),
        ("MINT_RL_KL_COEFS", "0.0,-0.1", "'-0.1' is invalid: Config.kl_penalty_coef must be"),
        ("MINT_RL_KL_COEFS", "0.02;0.1", "'0.02;0.1' is not a number"),
        ("MINT_RL_KL_COEFS", "0,0.0", "repeats"),
        ("MINT_RL_GROUPS", "2,4.5", "'4.5' is not an integer"),
        ("MINT_RL_GROUPS", "0,2", "'0' is invalid: group_size must be an integer >= 1"),
        ("MINT_RL_GROUPS", "2,4,2", "'2' repeats"),
        ("MINT_RL_GROUPS", "1_000", "'1_000' is not an integer"),
        ("MINT_RL_STEPS", "0", "MINT_RL_STEPS='0': '0' is invalid: Config.max_steps must be"),
        ("MINT_RL_STEPS", "two", "'two' is not an integer"),
        ("MINT_RL_STEPS", "1,2", "'1,2' is not an integer"),
        ("MINT_RL_STEPS", "  ", "empty"),
        ("MINT_RL_BATCH", "-4", "'-4' is invalid: batch_size must be an integer >= 1"),
        ("MINT_RL_BATCH", "4x", "'4x' is not an integer"),
        ("MINT_RL_MAX_TOKENS", "0", "'0' is invalid: Config.max_tokens must be an integer >= 1"),
        ("MINT_RL_MAX_TOKENS", "64.0", "is not an integer"),
        ("MINT_RL_LR", "0", "'0' is invalid: Config.learning_rate must be in (0, 1]"),
        ("MINT_RL_LR", "1e308", "'1e308' is invalid: Config.learning_rate must be in (0, 1]"),
        ("MINT_RL_LR", "fast", "'fast' is not a number"),
        ("MINT_LORA_RANK", "0", "'0' is invalid: Config.lora_rank must be an integer >= 1"),
        ("MINT_LORA_RANK", "r8", "'r8' is not an integer"),
    ],
)
def test_bad_variable_values_name_the_variable_and_value(name, value, message):
    with pytest.raises(ConfigError) as info:
        grid_from_env({name: value})
    assert message in str(info.value)
    assert str(info.value).startswith(f"{name}={value!r}")


def test_log_root():
    assert log_root_from_env({}, default="runs/a") == "runs/a"
    assert log_root_from_env({"MINT_LOG_ROOT": "runs/b"}, default="runs/a") == "runs/b"
    with pytest.raises(ConfigError, match="MINT_LOG_ROOT='  ': empty"):
        log_root_from_env({"MINT_LOG_ROOT": "  "}, default="runs/a")
    with pytest.raises(ConfigError, match="set MINT_LOG_ROOT"):
        log_root_from_env({})
