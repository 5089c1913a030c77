"""Config: every validation names its field; backend resolution; no secrets in public_dict."""

from __future__ import annotations

import json
import types

import attrs
import pytest

from mint_envkit import ConfigError, DatasetBuilder, SingleTurnEnv
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rl.config import (
    LOSS_FNS,
    Config,
    KLReferenceConfig,
    validate_field,
)
from mint_envkit.rollouts import BackendSettings, SamplingSettings
from mint_envkit.rollouts.backend import resolve_backend

BUILDER = DatasetBuilder(
    env=SingleTurnEnv,
    problems=[{"question": "What is 2 + 3?", "answer": "5"}],
    batch_size=1,
    group_size=2,
    model_name=TINY_MODEL_NAME,
)


def config(**kwargs) -> Config:
    fields = {"dataset_builder": BUILDER, "model_name": TINY_MODEL_NAME, "log_path": "runs/test"}
    fields.update(kwargs)
    return Config(**fields)


def test_defaults_are_valid():
    c = config()
    assert c.loss_fn == "importance_sampling" and c.backend == "auto"
    assert c.kl_penalty_coef == 0.0 and c.kl_reference_config is None


def test_log_path_accepts_a_path(tmp_path):
    assert config(log_path=tmp_path / "run").log_path == str(tmp_path / "run")


def test_kl_coef_needs_a_reference():
    with pytest.raises(ConfigError, match="kl_penalty_coef") as info:
        config(kl_penalty_coef=0.1)
    assert "kl_reference_config" in str(info.value)
    c = config(
        kl_penalty_coef=0.1, kl_reference_config=KLReferenceConfig(base_model=TINY_MODEL_NAME)
    )
    assert c.kl_penalty_coef == 0.1


@pytest.mark.parametrize("base_model", ["", "  ", None])
def test_kl_reference_needs_a_model(base_model):
    with pytest.raises(ConfigError, match=r"KLReferenceConfig\.base_model"):
        KLReferenceConfig(base_model=base_model)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 0),
        ("temperature", -0.5),
        ("temperature", float("nan")),
        ("temperature", float("inf")),
        ("temperature", True),
        ("temperature", "0.7"),
        ("loss_fn", "grpo"),
        ("backend", "cuda"),
        ("max_tokens", 0),
        ("max_tokens", 1.5),
        ("max_tokens", True),
        ("learning_rate", 0),
        ("learning_rate", -1e-4),
        ("learning_rate", float("nan")),
        ("learning_rate", "1e-4"),
        ("learning_rate", 1e308),
        ("learning_rate", 1.5),
        ("beta1", 1.0),
        ("beta2", -0.1),
        ("eps", 0),
        ("weight_decay", 2.0),
        ("grad_clip_norm", -1.0),
        ("top_k", 0),
        ("top_k", 2.5),
        ("keep_checkpoints", -1),
        ("keep_checkpoints", 1.5),
        ("backend_lost_after_s", 0.5),
        ("kl_penalty_coef", -0.1),
        ("lora_rank", 0),
        ("lora_rank", 8.0),
        ("max_steps", 0),
        ("max_steps", 2.5),
        ("save_every", -1),
        ("eval_every", -1),
        ("eval_every", 1.5),
        ("max_concurrent_groups", 0),
        ("local_latency_ms", -1.0),
        ("local_batch_invariant", 1),
        ("local_batch_invariant", "yes"),
        ("local_threads", 0),
        ("local_threads", 1.5),
        ("preflight_timeout_s", 0),
        ("rollout_timeout_s", 0),
        ("rollout_timeout_s", "10"),
        ("top_p", 0),
        ("top_p", 1.5),
        ("base_url", "localhost:8000"),
        ("base_url", "ftp://example.com"),
        ("model_name", ""),
        ("model_name", None),
        ("log_path", ""),
    ],
)
def test_each_validation_names_its_field(field, value):
    with pytest.raises(ConfigError, match=rf"Config\.{field}"):
        config(**{field: value})


def test_a_learning_rate_out_of_range_says_the_range():
    with pytest.raises(ConfigError, match=r"Config\.learning_rate must be in \(0, 1\]"):
        config(learning_rate=1e308)
    assert config(learning_rate=1.0).learning_rate == 1.0


@pytest.mark.parametrize(
    ("field", "value"), [("beta1", 0.0), ("weight_decay", 1.0), ("top_k", 40), ("top_k", -1)]
)
def test_the_ends_of_each_range_are_accepted(field, value):
    assert getattr(config(**{field: value}), field) == value


def test_validate_field_checks_one_value_with_the_field_validator():
    validate_field(Config, "learning_rate", 3e-3)
    with pytest.raises(ConfigError, match=r"Config\.learning_rate must be in"):
        validate_field(Config, "learning_rate", 5.0)


SETTINGS_OWNED = {  # Config field -> (the settings value, its field, a bad value)
    "max_tokens": (SamplingSettings, "max_tokens", 0),
    "temperature": (SamplingSettings, "temperature", 0),
    "top_p": (SamplingSettings, "top_p", 1.5),
    "top_k": (SamplingSettings, "top_k", -1.0),
    "sampling_seed": (SamplingSettings, "seed", -1),
    "max_concurrent_groups": (SamplingSettings, "max_concurrent_groups", True),
    "rollout_timeout_s": (SamplingSettings, "rollout_timeout_s", 0),
    "fail_fast": (SamplingSettings, "fail_fast", "yes"),
    "eval_max_tokens": (SamplingSettings, "max_tokens", 0),
    "eval_temperature": (SamplingSettings, "temperature", 0),
    "backend": (BackendSettings, "backend", "cuda"),
    "base_url": (BackendSettings, "base_url", "localhost:8000"),
    "local_latency_ms": (BackendSettings, "local_latency_ms", -1.0),
    "local_batch_invariant": (BackendSettings, "local_batch_invariant", 1),
    "local_threads": (BackendSettings, "local_threads", 0),
    "preflight_timeout_s": (BackendSettings, "preflight_timeout_s", 0),
}


@pytest.mark.parametrize("field", sorted(SETTINGS_OWNED))
def test_a_sampling_or_backend_field_fails_by_the_settings_rule_named_as_config(field):
    settings, name, bad = SETTINGS_OWNED[field]
    with pytest.raises(ConfigError) as own:
        settings(**{name: bad})
    with pytest.raises(ConfigError) as info:
        config(**{field: bad})
    # the settings' one message (the bound, the bad value, the fix), naming Config.<field>
    assert str(info.value).startswith(f"Config.{field}" + str(own.value).removeprefix(name))
    with pytest.raises(ConfigError, match=rf"^Config\.{field} "):
        validate_field(Config, field, bad)  # the sweep's check of one value: the same rule


@pytest.mark.parametrize("field", sorted(SETTINGS_OWNED))
def test_config_holds_no_rule_or_default_of_its_own_for_a_settings_field(field):
    settings, name, _bad = SETTINGS_OWNED[field]
    ours, theirs = attrs.fields_dict(Config)[field], attrs.fields_dict(settings)[name]
    assert ours.validator is None  # the settings' validator checks it (in __attrs_post_init__)
    if field != "eval_temperature":  # None there: the training temperature
        assert ours.default == theirs.default


def test_every_settings_field_has_its_config_field():
    owned = {(settings, name) for settings, name, _bad in SETTINGS_OWNED.values()}
    for settings in (SamplingSettings, BackendSettings):
        for field in attrs.fields(settings):
            assert field.name == "models" or (settings, field.name) in owned, field.name


def test_the_reply_limit_is_the_builders_and_none_reads_it():
    builder = attrs.evolve(BUILDER, max_generation_tokens=48)
    assert config(dataset_builder=builder).max_tokens == 48
    assert config(dataset_builder=builder, max_tokens=None).max_tokens == 48
    assert config(dataset_builder=builder, max_tokens=48).sampling.max_tokens == 48
    assert config(dataset_builder=builder, eval_max_tokens=96).eval_sampling.max_tokens == 96
    with pytest.raises(ConfigError, match=r"Config\.max_tokens is 64 but .* is 48"):
        config(dataset_builder=builder, max_tokens=64)
    with pytest.raises(ConfigError, match=r"or None: the training temperature"):
        config(eval_temperature=0)
    assert config(eval_temperature=None, temperature=0.5).eval_sampling.temperature == 0.5


def test_keep_checkpoints_is_bounded_by_default_and_none_keeps_all():
    assert config().keep_checkpoints == 3
    assert config(keep_checkpoints=None).keep_checkpoints is None


def test_loss_fn_error_lists_the_choices():
    with pytest.raises(ConfigError) as info:
        config(loss_fn="grpo")
    for name in LOSS_FNS:
        assert name in str(info.value)


@pytest.mark.parametrize("loss_fn", LOSS_FNS)
def test_each_loss_fn_is_accepted(loss_fn):
    assert config(loss_fn=loss_fn).loss_fn == loss_fn


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "https://mint.example.com"])
def test_base_url_schemes(url):
    assert config(base_url=url).base_url == url


def test_group_size_below_one_via_a_dataset_builder():
    with pytest.raises(ConfigError, match="group_size must be an integer >= 1"):
        DatasetBuilder(env=SingleTurnEnv, problems=[], batch_size=1, group_size=0, model_name="m")
    fake = types.SimpleNamespace(group_size=0)
    with pytest.raises(ConfigError, match=r"Config\.dataset_builder\.group_size must be >= 1"):
        config(dataset_builder=fake)


@pytest.mark.parametrize("builder", [None, object(), types.SimpleNamespace(group_size="2")])
def test_dataset_builder_must_be_a_builder(builder):
    with pytest.raises(ConfigError, match=r"Config\.dataset_builder must be a DatasetBuilder"):
        config(dataset_builder=builder)


def test_log_path_none_names_the_field():
    with pytest.raises(ConfigError, match=r"Config\.log_path"):
        config(log_path=None)


def test_top_p_string_names_the_field():
    with pytest.raises(ConfigError, match=r"Config\.top_p"):
        config(top_p="0.9")


def test_config_is_frozen():
    c = config()
    with pytest.raises(AttributeError):
        c.temperature = 0.5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("env", "backend", "expected"),
    [
        ({}, "auto", "local"),
        ({"MINT_API_KEY": "sk-test"}, "auto", "mint"),
        ({"MINT_ENVKIT_BACKEND": "local", "MINT_API_KEY": "sk-test"}, "auto", "local"),
        ({"MINT_ENVKIT_BACKEND": " MINT "}, "auto", "mint"),
        ({"MINT_API_KEY": "sk-test"}, "local", "local"),
        ({"MINT_ENVKIT_BACKEND": "local"}, "mint", "mint"),
        ({"MINT_API_KEY": ""}, "auto", "local"),
    ],
)
def test_resolve_backend(monkeypatch, env, backend, expected):
    monkeypatch.delenv("MINT_API_KEY", raising=False)
    monkeypatch.delenv("MINT_ENVKIT_BACKEND", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert resolve_backend(backend) == expected


def test_resolve_backend_errors(monkeypatch):
    monkeypatch.setenv("MINT_ENVKIT_BACKEND", "gpu")
    with pytest.raises(ConfigError, match="MINT_ENVKIT_BACKEND"):
        resolve_backend("auto")
    with pytest.raises(ConfigError, match="backend must be"):
        resolve_backend("cloud")


def test_public_dict_is_json_and_holds_no_api_key(monkeypatch):
    secret = "sk-very-secret-key-123"
    monkeypatch.setenv("MINT_API_KEY", secret)
    c = config(
        kl_penalty_coef=0.05,
        kl_reference_config=KLReferenceConfig(base_model=TINY_MODEL_NAME),
        base_url="https://mint.example.com",
    )
    data = c.public_dict()
    text = json.dumps(data)
    assert secret not in text
    assert "api_key" not in text.lower()
    assert data["dataset_builder"] == BUILDER.describe()
    assert data["kl_reference_config"] == {
        "base_model": TINY_MODEL_NAME,
        "load_checkpoint_path": None,
    }
    assert data["temperature"] == 1.0 and data["base_url"] == "https://mint.example.com"


def test_the_backend_settings_preload_each_model_and_kl_reference_once(phase_config):
    import attrs

    from mint_envkit import KLReferenceConfig

    def on(model: str, config=phase_config):
        builder = attrs.evolve(config.dataset_builder, model_name=model)
        return attrs.evolve(config, model_name=model, dataset_builder=builder)

    with_kl = attrs.evolve(
        on("a"), kl_penalty_coef=0.1, kl_reference_config=KLReferenceConfig(base_model="b")
    )
    assert phase_config.backend_settings.models == (phase_config.model_name,)
    assert with_kl.backend_settings.models == ("a", "b")
    assert on("b", with_kl).backend_settings.models == ("b",)
    assert phase_config.backend_settings.local_threads is None
    assert attrs.evolve(phase_config, local_threads=2).backend_settings.local_threads == 2


async def test_a_run_whose_log_dir_cannot_be_written_fails_before_any_work(phase_config, tmp_path):
    import attrs

    from mint_envkit import ConfigError
    from mint_envkit.rl.train import run_training

    (tmp_path / "runs").write_text("")
    config = attrs.evolve(phase_config, log_path=str(tmp_path / "runs" / "demo"), backend="mint")
    with pytest.raises(ConfigError, match=r"Config\.log_path"):
        await run_training(config)  # before the backend: no MINT_API_KEY error
