"""The KV-cache name across transformers versions: ``past_key_values`` (4.51-5.2x) or ``cache``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mint_envkit.local.engine.hf_compat import cache_keyword, cache_of, with_cache


class _OldModel:
    def forward(self, input_ids: Any = None, past_key_values: Any = None, use_cache: bool = False):
        return past_key_values


class _NewModel:
    def forward(self, input_ids: Any = None, cache: Any = None, use_cache: bool = False):
        return cache


@dataclasses.dataclass
class _OldOutput:
    logits: Any = None
    past_key_values: Any = None


@dataclasses.dataclass
class _NewOutput:
    logits: Any = None
    cache: Any = None

    @property
    def past_key_values(self) -> Any:  # the deprecated alias of 5.2x: never read
        raise AssertionError("the deprecated alias was read")


@pytest.mark.parametrize(
    ("model", "keyword"), [(_OldModel(), "past_key_values"), (_NewModel(), "cache")]
)
def test_the_cache_goes_in_by_the_name_the_model_takes(model, keyword):
    assert cache_keyword(model) == keyword
    assert model.forward(input_ids=[1], **with_cache(model, "kv")) == "kv"


@pytest.mark.parametrize("output", [_OldOutput(past_key_values="kv"), _NewOutput(cache="kv")])
def test_the_cache_comes_out_of_the_outputs_own_field(output):
    assert cache_of(output) == "kv"


def test_an_output_without_a_cache_names_the_problem():
    with pytest.raises(AttributeError, match="neither 'cache' nor 'past_key_values'"):
        cache_of(object())


def test_the_installed_transformers_model_agrees(engine):
    from transformers.modeling_outputs import CausalLMOutputWithPast

    state = engine.registry.base("mint-envkit/tiny-qwen3-small")
    field = cache_keyword(state.loaded.model)
    assert field in CausalLMOutputWithPast.__dataclass_fields__
