"""Request parsing, without HTTP: each request value the engine trusts is checked here, once."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from mint_envkit.local.http.requests import (
    MAX_LORA_RANK,
    check_tinker_path,
    parse_create_model,
    parse_delete_checkpoint,
    parse_json_body,
    parse_load_weights,
    parse_model_id_request,
    parse_optim_step,
    parse_paging,
    parse_retrieve_future,
    parse_run_id,
    parse_save_weights,
    parse_save_weights_for_sampler,
    parse_weights_info,
)

# --------------------------------------------------------------------------- bodies


Refuse = Callable[..., AbstractContextManager[None]]  # the `refused` fixture (conftest.py)


def test_json_body_must_be_an_object(refused: Refuse) -> None:
    assert parse_json_body(b'{"a": 1}') == {"a": 1}
    with refused("not valid JSON", 400):
        parse_json_body(b"{oops")
    with refused("JSON object", 400):
        parse_json_body(b"[1]")
    with refused("empty", 400):
        parse_json_body(b"  ")


def test_unknown_extra_fields_are_dropped_but_bad_fields_refused(refused: Refuse) -> None:
    body = {"model_id": "m", "adam_params": {"learning_rate": 0.1}, "new_field": 1}
    assert parse_optim_step(body).adam_params.learning_rate == 0.1
    with refused("invalid optim_step request: adam_params"):
        parse_optim_step({"model_id": "m", "adam_params": {"learning_rate": "fast"}})


def test_string_fields_are_required(refused: Refuse) -> None:
    assert parse_model_id_request({"model_id": "m-1"}, "get_info") == "m-1"
    with refused("model_id \\(a string\\) is required"):
        parse_model_id_request({"model_id": 3}, "get_info")
    assert parse_retrieve_future({"request_id": "req-1"}) == "req-1"
    with refused("request_id"):
        parse_retrieve_future({})


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("rank", [0, -1, MAX_LORA_RANK + 1])
def test_lora_rank_is_bounded(rank: int, refused: Refuse) -> None:
    body = {"session_id": "s", "model_seq_id": 0, "base_model": "b", "lora_config": {"rank": rank}}
    with refused("lora_config.rank must be at least 1 and at most 4096"):
        parse_create_model(body)


def test_lora_must_train_something(refused: Refuse) -> None:
    ok = {
        "session_id": "s",
        "model_seq_id": 0,
        "base_model": "b",
        "lora_config": {"rank": 8, "seed": 3},
    }
    assert parse_create_model(ok).lora_config.seed == 3
    off = dict.fromkeys(("train_mlp", "train_attn", "train_unembed"), False)
    with refused("at least one of train_mlp"):
        parse_create_model({**ok, "lora_config": {"rank": 8, **off}})
    with refused("lora_config.seed"):
        parse_create_model({**ok, "lora_config": {"rank": 8, "seed": 1.5}})


# --------------------------------------------------------------------------- optimizer


def test_adam_params_defaults_pass() -> None:
    req = parse_optim_step({"model_id": "m", "seq_id": 1, "adam_params": {"learning_rate": 1e-3}})
    assert (req.adam_params.beta1, req.adam_params.beta2) == (0.9, 0.95)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("learning_rate", -1.0, "learning_rate must be finite and >= 0"),
        ("learning_rate", math.inf, "learning_rate must be finite and >= 0"),
        ("eps", math.inf, "eps must be finite and >= 0"),
        ("weight_decay", -0.1, "weight_decay must be finite and >= 0"),
        ("weight_decay", math.nan, "weight_decay must be finite and >= 0"),
        ("grad_clip_norm", math.inf, "grad_clip_norm must be finite and >= 0"),
        ("beta1", 1.0, r"beta1 must be in \[0, 1\)"),
        ("beta2", -0.5, r"beta2 must be in \[0, 1\)"),
    ],
)
def test_adam_params_out_of_range(name: str, value: float, message: str, refused: Refuse) -> None:
    params = {"learning_rate": 1e-3, name: value}
    with refused(f"invalid adam_params: {message}"):
        parse_optim_step({"model_id": "m", "adam_params": params})


# --------------------------------------------------------------------------- names and paths


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b", "a..b", "", "x" * 129, "sp ace"])
def test_checkpoint_names_cannot_leave_the_state_directory(name: str, refused: Refuse) -> None:
    with refused("invalid checkpoint name"):
        parse_save_weights({"model_id": "m", "path": name})
    with refused("invalid checkpoint name"):
        parse_save_weights_for_sampler({"model_id": "m", "path": name})


def test_good_names_and_no_name_pass() -> None:
    assert parse_save_weights({"model_id": "m", "path": "step-1_0.a"}).path == "step-1_0.a"
    assert parse_save_weights_for_sampler({"model_id": "m"}).path is None


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("m-1/weights/a", "not a tinker:// path"),
        ("tinker://m-1/weights/../x", "must not contain '..'"),
        ("tinker://../weights/x", "must not contain '..'"),
        ("tinker://m-1/other/a", "must have the form"),
        ("tinker://m-1/weights", "must have the form"),
        ("tinker://m-1/weights/a/b", "must have the form"),
        ("tinker://m-1/weights/.a", "invalid checkpoint name"),
        ("tinker://m 1/weights/a", "invalid model_id in checkpoint path"),
    ],
)
def test_tinker_paths_are_checked(path: str, message: str, refused: Refuse) -> None:
    with refused(message):
        check_tinker_path(path, "load_weights")
    with refused(message):
        parse_load_weights({"model_id": "m", "path": path, "optimizer": False})
    with refused(message):
        parse_weights_info({"tinker_path": path})


def test_good_tinker_paths_pass() -> None:
    for path in ("tinker://m-1/weights/a", "tinker://m-1/sampler_weights/step-2"):
        assert parse_weights_info({"tinker_path": path}) == path
        assert parse_load_weights({"model_id": "m", "path": path, "optimizer": False}).path == path


def test_rest_path_parameters(refused: Refuse) -> None:
    assert parse_run_id("model-1") == "model-1"
    with refused(r"invalid training run id \(model_id\)"):
        parse_run_id("..")
    assert parse_delete_checkpoint("m-1", "weights/a") == "tinker://m-1/weights/a"
    with refused("invalid checkpoint id"):
        parse_delete_checkpoint("m-1", "weights/../../x")
    with refused("must have the form"):
        parse_delete_checkpoint("m-1", "archive")
    assert parse_paging({"limit": "5", "offset": "-3"}, 20) == (0, 5)
    assert parse_paging({}, 20) == (0, 20)
    with refused("limit and offset must be integers"):
        parse_paging({"limit": "many"}, 20)


def test_a_dot_dot_run_id_is_blamed_on_the_run_not_the_checkpoint(refused: Refuse) -> None:
    with refused(r"invalid training run id \(model_id\) '\.\.'"):
        parse_delete_checkpoint("..", "weights/a")


def test_names_ending_in_a_newline_are_refused(refused: Refuse) -> None:
    with refused("invalid checkpoint name"):
        parse_save_weights({"model_id": "m-1", "path": "step\n", "seq_id": 1})
    with refused("invalid checkpoint name"):
        parse_weights_info({"tinker_path": "tinker://m-1/weights/step\n"})
    with refused("invalid training run id"):
        parse_run_id("model-1\n")


def test_deep_nesting_and_huge_integers_are_a_400(refused: Refuse) -> None:
    with refused("nested too deeply", 400):
        parse_json_body(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with refused("nested too deeply", 400):
        parse_json_body(b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}")
    with refused("not valid JSON", 400):
        parse_json_body(b'{"seq_id": ' + b"7" * 4300 + b"}")
    assert parse_json_body(b'{"a": [[1]]}') == {"a": [[1]]}
