"""The builder owns the model, the renderer and the reply limit; Config takes them from it."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit import Config, ConfigError, DatasetBuilder, SingleTurnEnv
from mint_envkit.rl.agreement import BUILDER_OWNED, check_builder_owned

SMOLLM2 = "mint-envkit/smollm2-135m-instruct"


def _builder(model: str, **kw) -> DatasetBuilder:
    return DatasetBuilder(
        env=SingleTurnEnv,
        problems=[{"question": "q", "answer": "a"}],
        batch_size=1,
        group_size=2,
        model_name=model,
        **kw,
    )


def test_the_builder_defaults_its_renderer_from_the_model():
    assert _builder("mint-envkit/tiny-qwen3").renderer_name == "qwen3"
    assert _builder(SMOLLM2).renderer_name == "chat_template"
    assert _builder(SMOLLM2, renderer_name="qwen3").renderer_name == "qwen3"


def test_config_takes_the_model_and_max_tokens_from_the_builder(tmp_path):
    config = Config(dataset_builder=_builder(SMOLLM2, max_generation_tokens=48), log_path=tmp_path)
    assert config.model_name == SMOLLM2
    assert config.max_tokens == 48


def test_the_builders_reply_limit_defaults_to_64_and_is_the_configs(tmp_path):
    builder = _builder(SMOLLM2)
    assert builder.max_generation_tokens == 64
    assert Config(dataset_builder=builder, log_path=tmp_path).max_tokens == 64


def test_config_has_no_renderer_name():
    assert "renderer_name" not in attrs.fields_dict(Config)
    with pytest.raises(TypeError):
        Config(dataset_builder=_builder(SMOLLM2), log_path="x", renderer_name="qwen3")  # type: ignore[call-arg]


def test_a_model_mismatch_names_both_places_and_the_fix(tmp_path):
    with pytest.raises(ConfigError) as err:
        Config(dataset_builder=_builder(SMOLLM2), model_name="Qwen/Qwen3-0.6B", log_path=tmp_path)
    text = str(err.value)
    assert "Config.model_name is 'Qwen/Qwen3-0.6B'" in text
    assert f"dataset builder's model_name is {SMOLLM2!r}" in text
    assert "pass model_name='Qwen/Qwen3-0.6B' to the builder" in text


def test_a_max_tokens_mismatch_names_both_places_and_the_fix(tmp_path):
    with pytest.raises(ConfigError) as err:
        Config(dataset_builder=_builder(SMOLLM2), max_tokens=128, log_path=tmp_path)
    text = str(err.value)
    assert "Config.max_tokens is 128" in text and "max_generation_tokens is 64" in text
    assert "pass max_generation_tokens=128 to the builder" in text


def test_agreeing_values_build_and_evolving_one_side_is_caught(tmp_path):
    builder = _builder("mint-envkit/tiny-qwen3", max_generation_tokens=32)
    config = Config(
        dataset_builder=builder, model_name=builder.model_name, max_tokens=32, log_path=tmp_path
    )
    with pytest.raises(ConfigError, match="model_name"):
        attrs.evolve(config, model_name=SMOLLM2)
    with pytest.raises(ConfigError, match="max_tokens"):
        attrs.evolve(config, max_tokens=16)


def test_a_builder_without_the_fields_leaves_them_to_config(tmp_path):
    check_builder_owned({"model_name": "m", "max_tokens": 5}, object())
    assert set(BUILDER_OWNED) == {"model_name", "max_tokens"}


def test_the_sampling_seed_and_the_data_order_seed_have_two_names(tmp_path):
    fields = attrs.fields_dict(Config)
    assert "sampling_seed" in fields and "seed" not in fields
    config = Config(dataset_builder=_builder(SMOLLM2, seed=3), sampling_seed=5, log_path=tmp_path)
    assert (config.sampling_seed, config.dataset_builder.seed) == (5, 3)


def test_a_builder_without_a_model_asks_for_one(tmp_path):
    @attrs.frozen
    class Bare:
        group_size: int = 2

    with pytest.raises(ConfigError, match="model_name is missing"):
        Config(dataset_builder=Bare(), log_path=tmp_path)
    assert Config(dataset_builder=Bare(), model_name="m", log_path=tmp_path).max_tokens == 64
