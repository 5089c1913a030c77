"""Env packages found by entry point: loading by name, and every way it can go wrong."""

from __future__ import annotations

import pytest

import mint_envkit
from env_packages import ENV_SOURCE, fake_env_package
from mint_envkit import DatasetBuilder, load_environment
from mint_envkit.builders.packages import (
    ENTRY_POINT_GROUP,
    EnvPackage,
    find_environment,
    installed_environments,
)
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.spec import load_target
from shared_envs import ArithmeticEnv


def test_an_installed_env_is_listed_with_its_package_version_and_entry_point(monkeypatch, tmp_path):
    module = fake_env_package(monkeypatch, tmp_path, "sums", package="sums-pkg", version="0.4.1")

    [env] = [env for env in installed_environments() if env.name == "sums"]

    assert env == EnvPackage("sums", "sums-pkg", "0.4.1", f"{module}:load_environment")
    assert env.module == module
    assert env.summary() == "Sums of two small numbers, a fake env package of the tests."


def test_load_environment_calls_the_packages_function_with_the_kwargs(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "sums")

    builder = mint_envkit.load_environment("sums", group_size=5, seed=7)

    assert isinstance(builder, DatasetBuilder)
    assert builder.env is ArithmeticEnv
    assert (builder.group_size, builder.seed, builder.batch_size) == (5, 7, 2)


def test_an_unknown_name_lists_the_installed_ones_and_says_how_to_install(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "sums")
    fake_env_package(monkeypatch, tmp_path, "products")

    with pytest.raises(ConfigError) as caught:
        load_environment("sum")

    message = str(caught.value)
    assert "no installed env is named 'sum'" in message
    assert "installed: " in message and "products" in message and "sums" in message
    assert "pip install" in message and "mint-envkit init NAME" in message


def test_two_packages_claiming_one_name_is_an_error_naming_both(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "twice", package="first-pkg")
    fake_env_package(monkeypatch, tmp_path, "twice", package="second-pkg", version="2.0")

    assert [env.package for env in installed_environments() if env.name == "twice"] == [
        "first-pkg",
        "second-pkg",
    ]
    with pytest.raises(ConfigError, match="'twice' is claimed by 2 installed packages") as caught:
        load_environment("twice")
    assert "first-pkg 1.2.3" in str(caught.value) and "second-pkg 2.0" in str(caught.value)
    assert "pip uninstall second-pkg" in str(caught.value)
    assert ENTRY_POINT_GROUP in str(caught.value)


def test_arguments_the_function_does_not_take_are_named(monkeypatch, tmp_path):
    source = ENV_SOURCE + "\n\ndef strict(*, batch_size=2):\n    return load_environment()\n"
    fake_env_package(monkeypatch, tmp_path, "strict", source=source, attribute="strict")

    assert load_environment("strict", batch_size=3).batch_size == 2  # taken, then ignored
    with pytest.raises(ConfigError) as caught:
        load_environment("strict", groupsize=4)

    message = str(caught.value)
    assert message.startswith("env 'strict' (")
    assert "takes (*, batch_size=2), not the arguments {'groupsize': 4}" in message
    assert "unexpected keyword argument 'groupsize'" in message


def test_what_is_not_a_datasetbuilder_is_refused(monkeypatch, tmp_path):
    source = ENV_SOURCE + "\n\ndef not_a_builder():\n    return [1, 2]\n\nVALUE = 3\n"
    fake_env_package(monkeypatch, tmp_path, "lists", source=source, attribute="not_a_builder")
    fake_env_package(monkeypatch, tmp_path, "value", source=source, attribute="VALUE")

    with pytest.raises(ConfigError, match="returned a value of type list, not a DatasetBuilder"):
        load_environment("lists")
    with pytest.raises(ConfigError, match="names a value of type int, not a function"):
        load_environment("value")


def test_a_module_that_fails_to_import_is_named_with_its_cause(monkeypatch, tmp_path):
    source = "import mint_envkit_no_such_dependency\n"
    fake_env_package(monkeypatch, tmp_path, "broken", package="broken-pkg", source=source)

    with pytest.raises(ConfigError) as caught:
        load_environment("broken")

    message = str(caught.value)
    assert "env 'broken': cannot load its entry point" in message
    assert "broken-pkg 1.2.3" in message
    assert "ModuleNotFoundError: No module named 'mint_envkit_no_such_dependency'" in message
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)
    with pytest.raises(ConfigError, match="cannot load"):
        find_environment("broken").summary()


def test_a_missing_attribute_is_named(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "typo", attribute="load_enviroment")

    with pytest.raises(ConfigError, match=r"AttributeError: .*load_enviroment"):
        load_environment("typo")


def test_the_summary_falls_back_to_the_modules_docstring(monkeypatch, tmp_path):
    source = '"""\n\n  Products of digits.\n\nMore."""\n\ndef load_environment():\n    pass\n'
    fake_env_package(monkeypatch, tmp_path, "bare", source=source)

    assert find_environment("bare").summary() == "Products of digits."


def test_load_target_takes_an_installed_envs_name(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "sums")

    builder = load_target("sums")

    assert isinstance(builder, DatasetBuilder) and builder.env is ArithmeticEnv


def test_load_target_on_an_unknown_name_still_teaches_module_name(monkeypatch, tmp_path):
    fake_env_package(monkeypatch, tmp_path, "sums")

    with pytest.raises(ConfigError) as caught:
        load_target("ArithmeticEnv")

    message = str(caught.value)
    assert message.startswith("expected MODULE:NAME")
    assert "or the name of an installed env, got 'ArithmeticEnv'" in message
    assert "(installed: " in message and "sums" in message
