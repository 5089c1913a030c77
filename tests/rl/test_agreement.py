"""The one check that Config's model and renderer names agree with the dataset builder's."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit import Config, ConfigError, DatasetBuilder, SingleTurnEnv
from mint_envkit.rl.agreement import check_model_and_renderer

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


def test_no_renderer_on_the_config_takes_the_builders():
    assert check_model_and_renderer(SMOLLM2, None, _builder(SMOLLM2)) == "chat_template"
    assert check_model_and_renderer("m", None, object()) == "chat_template"


def test_a_model_mismatch_names_both_models(tmp_path):
    with pytest.raises(ConfigError) as err:
        Config(dataset_builder=_builder(SMOLLM2), model_name="Qwen/Qwen3-0.6B", log_path=tmp_path)
    assert "'Qwen/Qwen3-0.6B'" in str(err.value) and repr(SMOLLM2) in str(err.value)


def test_a_renderer_mismatch_names_both_renderers(tmp_path):
    builder = _builder("mint-envkit/tiny-qwen3")
    with pytest.raises(ConfigError) as err:
        Config(
            dataset_builder=builder,
            model_name=builder.model_name,
            renderer_name="qwen3_disable_thinking",
            log_path=tmp_path,
        )
    assert "'qwen3_disable_thinking'" in str(err.value) and "'qwen3'" in str(err.value)


def test_agreeing_names_build_and_evolving_one_side_is_caught(tmp_path):
    builder = _builder("mint-envkit/tiny-qwen3", renderer_name="qwen3_disable_thinking")
    config = Config(
        dataset_builder=builder,
        model_name=builder.model_name,
        renderer_name="qwen3_disable_thinking",
        log_path=tmp_path,
    )
    with pytest.raises(ConfigError, match="model_name"):
        attrs.evolve(config, model_name=SMOLLM2)
