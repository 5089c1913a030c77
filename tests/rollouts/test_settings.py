"""The two settings values: bad values are refused where they are built, naming the fix."""

from __future__ import annotations

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.rollouts import BackendSettings, SamplingSettings


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_tokens": 0}, "max_tokens must be an integer >= 1 or None, got 0"),
        ({"max_tokens": True}, "max_tokens must be an integer >= 1 or None, got True"),
        ({"temperature": 0}, "temperature must be > 0"),
        ({"top_p": 0}, "top_p must be"),
        ({"top_k": 0}, "top_k must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"max_concurrent_groups": True}, "max_concurrent_groups must be an integer >= 1"),
        ({"rollout_timeout_s": 0}, "rollout_timeout_s must be a number > 0"),
        ({"fail_fast": "yes"}, "fail_fast must be True or False"),
    ],
)
def test_sampling_settings_refuse_bad_values(fields, message):
    with pytest.raises(ConfigError, match=message):
        SamplingSettings(**fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "cloud"}, "backend must be 'auto', 'mint' or 'local'"),
        ({"base_url": "localhost:8000"}, "base_url must start with http://"),
        ({"local_latency_ms": -1}, "local_latency_ms must be a number >= 0"),
        ({"preflight_timeout_s": 0}, "preflight_timeout_s must be a number > 0"),
    ],
)
def test_backend_settings_refuse_bad_values(fields, message):
    with pytest.raises(ConfigError, match=message):
        BackendSettings(**fields)


def test_the_reply_limit_is_the_builders_unless_given():
    assert SamplingSettings().reply_limit(48) == 48
    assert SamplingSettings(max_tokens=16).reply_limit(48) == 16
    assert SamplingSettings().reply_limit(None) == 64


def test_models_are_one_sorted_tuple_of_names():
    assert BackendSettings(models="m").models == ("m",)
    assert BackendSettings(models=["b", "a", "b"]).models == ("a", "b")
