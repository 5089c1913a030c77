"""The Engine front: bad input is a user error, the state directory, the model list."""

from __future__ import annotations

import pytest
from engine_kit import SMALL, ce_data

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import EngineError


def test_bad_input_is_a_user_error(engine):
    model_id = engine.create_lora(SMALL, rank=2, seed=0)
    sampler, _ = engine.save_for_sampler(model_id, None)
    good = ce_data(1)[0]

    def datum(**inputs) -> dict:
        return {
            "model_input": inputs.pop("model_input", good["model_input"]),
            "loss_fn_inputs": {**good["loss_fn_inputs"], **inputs},
        }

    cases = {
        "unknown base model": lambda: engine.create_lora("no/such-model"),
        "empty base model": lambda: engine.create_lora(""),
        "bad rank": lambda: engine.create_lora(SMALL, rank=0),
        "nothing to train": lambda: engine.create_lora(
            SMALL, train_mlp=False, train_attn=False, train_unembed=False
        ),
        "unknown model_id": lambda: engine.forward(
            "nope", [good], "cross_entropy", None, backward=True
        ),
        "unknown sampler": lambda: engine.sample("nope", [1, 2]),
        "unknown sampler logprobs": lambda: engine.compute_logprobs("nope", [1, 2]),
        "token out of vocab (prompt)": lambda: engine.sample(sampler, [1, 5000]),
        "negative token": lambda: engine.sample(sampler, [-1, 2]),
        "non-int token": lambda: engine.sample(sampler, [1, "a"]),
        "empty prompt": lambda: engine.sample(sampler, []),
        "empty prompt logprobs": lambda: engine.compute_logprobs(sampler, []),
        "max_tokens 0": lambda: engine.sample(sampler, [1], max_tokens=0),
        "max_tokens negative": lambda: engine.sample(sampler, [1], max_tokens=-3),
        "num_samples 0": lambda: engine.sample(sampler, [1], num_samples=0),
        "stop out of vocab": lambda: engine.sample(sampler, [1], stop=[99999]),
        "stop empty string": lambda: engine.sample(sampler, [1], stop=[""]),
        "too long": lambda: engine.sample(sampler, [1], max_tokens=10_000),
        "no data": lambda: engine.forward(model_id, [], "cross_entropy", None, backward=True),
        "length mismatch": lambda: engine.forward(
            model_id, [datum(target_tokens=[1, 2])], "cross_entropy", None, backward=True
        ),
        "weights mismatch": lambda: engine.forward(
            model_id, [datum(weights=[1.0])], "cross_entropy", None, backward=True
        ),
        "target out of vocab": lambda: engine.forward(
            model_id,
            [datum(target_tokens=[1, 2, 3, 4, 2048])],
            "cross_entropy",
            None,
            backward=False,
        ),
        "empty model_input": lambda: engine.forward(
            model_id,
            [datum(model_input=[], target_tokens=[], weights=[])],
            "cross_entropy",
            None,
            backward=False,
        ),
        "missing advantages": lambda: engine.forward(
            model_id, [datum(logprobs=[0.0] * 5)], "importance_sampling", None, backward=True
        ),
        "nan weight": lambda: engine.forward(
            model_id,
            [datum(weights=[1, 1, float("nan"), 1, 1])],
            "cross_entropy",
            None,
            backward=True,
        ),
        "bad ppo clip": lambda: engine.forward(
            model_id,
            [datum(logprobs=[0.0] * 5, advantages=[0.0] * 5)],
            "ppo",
            {"clip_low_threshold": 1.5},
            backward=False,
        ),
        "nan eps": lambda: engine.optim_step(model_id, learning_rate=1e-3, eps=float("nan")),
        "inf weight_decay": lambda: engine.optim_step(
            model_id, learning_rate=1e-3, weight_decay=float("inf")
        ),
        "sampler with both": lambda: engine.create_sampler(base_model=SMALL, model_path="x"),
        "sampler with neither": lambda: engine.create_sampler(),
        "unknown base sampler": lambda: engine.create_sampler(base_model="no/such-model"),
        "bad kind": lambda: engine.save_state(model_id, "x", kind="other"),
    }
    for label, call in cases.items():
        with pytest.raises(EngineError) as err:
            call()
        assert err.value.category == "user", (label, err.value.message)
        assert len(err.value.message) > 20, label
    # the engine still works after all that
    assert engine.sample(sampler, [1, 2], max_tokens=2, seed=0)[0].stop_reason == "length"
    msg = _message(lambda: engine.sample(sampler, [1, 5000]))
    assert "5000" in msg and "2048" in msg
    msg = _message(
        lambda: engine.forward(
            model_id, [datum(target_tokens=[1, 2])], "cross_entropy", None, backward=True
        )
    )
    assert "target_tokens" in msg and "2" in msg and "5" in msg


def _message(call) -> str:
    with pytest.raises(EngineError) as err:
        call()
    return err.value.message


def test_default_state_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "from-env"))
    assert Engine().state_dir == (tmp_path / "from-env").resolve()
    monkeypatch.delenv("MINT_ENVKIT_STATE_DIR")
    monkeypatch.setenv("MINT_ENVKIT_CACHE", str(tmp_path / "cache"))
    assert Engine().state_dir == (tmp_path / "cache" / "state").resolve()
    assert Engine(state_dir=tmp_path / "x").state_dir == (tmp_path / "x").resolve()


def test_supported_models_lists_tiny_ones(engine):
    names = engine.supported_models
    assert names[0] == "mint-envkit/tiny-qwen3" and SMALL in names
