"""Engine checkpoints: save and load, a new engine, listing and deleting, safe names and paths."""

from __future__ import annotations

import pytest
from engine_kit import PROMPT, SMALL, ce_data, lora_params, max_diff, trained_lora

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import EngineError, SampledSequence


def test_save_and_load_state_round_trip(engine):
    a = trained_lora(engine, seed=4, steps=2)
    path = engine.save_state(a, "ckpt-1")
    assert path == f"tinker://{a}/weights/ckpt-1"
    saved = lora_params(engine, a)
    b = engine.create_lora_from_state(path, with_optimizer=True)
    assert b != a and max_diff(lora_params(engine, b), saved) == 0.0
    assert engine.model_info(b)["step"] == 2
    for model_id in (a, b):
        engine.forward(model_id, ce_data(3), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2, weight_decay=0.1)
    assert max_diff(lora_params(engine, a), lora_params(engine, b)) < 1e-6
    # without the optimizer state the continuation differs (Adam restarts)
    c = engine.create_lora_from_state(path, with_optimizer=False)
    engine.forward(c, ce_data(3), "cross_entropy", None, backward=True)
    engine.optim_step(c, learning_rate=1e-2, weight_decay=0.1)
    assert max_diff(lora_params(engine, a), lora_params(engine, c)) > 1e-6
    # load_state into an existing client of the same shape
    d = engine.create_lora(SMALL, rank=4, seed=99)
    engine.load_state(d, path, with_optimizer=True)
    assert max_diff(lora_params(engine, d), saved) == 0.0
    assert engine.weights_info(path) == {
        "base_model": SMALL,
        "is_lora": True,
        "lora_rank": 4,
        "train_mlp": True,
        "train_attn": True,
        "train_unembed": True,
    }
    # a checkpoint of another shape does not fit
    e = engine.create_lora(SMALL, rank=8, seed=0)
    with pytest.raises(EngineError, match="does not fit") as err:
        engine.load_state(e, path, with_optimizer=False)
    assert err.value.category == "user"


def _same_samples(got: list[SampledSequence], expected: list[SampledSequence]) -> None:
    assert [s.tokens for s in got] == [s.tokens for s in expected]
    for a, b in zip(got, expected, strict=True):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5


def test_checkpoints_survive_a_new_engine(engine):
    a = trained_lora(engine, seed=6)
    path = engine.save_state(a, "resume")
    sampler, spath = engine.save_for_sampler(a, "for-sampling")
    assert spath == f"tinker://{a}/sampler_weights/for-sampling"
    expected = engine.sample(sampler, PROMPT, num_samples=3, max_tokens=6, seed=1)
    fresh = Engine(state_dir=engine.state_dir, num_threads=1)
    b = fresh.create_lora_from_state(path, with_optimizer=True)
    assert max_diff(lora_params(fresh, b), lora_params(engine, a)) == 0.0
    s2 = fresh.create_sampler(model_path=spath)
    _same_samples(fresh.sample(s2, PROMPT, num_samples=3, max_tokens=6, seed=1), expected)
    s3 = engine.create_sampler(model_path=spath)
    _same_samples(engine.sample(s3, PROMPT, num_samples=3, max_tokens=6, seed=1), expected)


@pytest.mark.parametrize(
    "flags",
    [
        {"train_mlp": False, "train_attn": True, "train_unembed": False},
        {"train_mlp": True, "train_attn": False, "train_unembed": True},
    ],
)
def test_weights_info_keeps_the_lora_flags_for_a_resume_in_a_new_engine(engine, flags):
    """A new process (no run in memory) rebuilds the client from weights_info alone, as the SDK."""
    a = engine.create_lora(SMALL, rank=4, seed=2, **flags)
    engine.forward(a, ce_data(2), "cross_entropy", None, backward=True)
    engine.optim_step(a, learning_rate=1e-2)
    path = engine.save_state(a, "flags")
    fresh = Engine(state_dir=engine.state_dir, num_threads=1)
    info = fresh.weights_info(path)
    assert {k: info[k] for k in flags} == flags
    b = fresh.create_lora(info["base_model"], rank=info["lora_rank"], seed=0, **flags)
    fresh.load_state(b, path, with_optimizer=True)
    assert max_diff(lora_params(fresh, b), lora_params(engine, a)) == 0.0
    assert fresh.model_info(b)["step"] == 1


def test_list_and_delete_checkpoints(engine):
    a = engine.create_lora(SMALL, rank=2, seed=0)
    p1 = engine.save_state(a, "one")
    _, p2 = engine.save_for_sampler(a, "two")
    p3 = engine.save_state(a, "three", kind="sampler")
    listed = engine.list_checkpoints(a)
    assert [c["tinker_path"] for c in listed] == [p1, p2, p3]
    assert [c["checkpoint_type"] for c in listed] == ["training", "sampler", "sampler"]
    assert listed[0]["checkpoint_id"] == "weights/one"
    assert all(c["size_bytes"] > 0 and "T" in c["time"] for c in listed)
    assert {c["tinker_path"] for c in listed} <= {
        c["tinker_path"] for c in engine.list_checkpoints()
    }
    sampler = engine.create_sampler(model_path=p2)
    engine.delete_checkpoint(p2)
    assert [c["tinker_path"] for c in engine.list_checkpoints(a)] == [p1, p3]
    engine.sample(sampler, PROMPT, max_tokens=2, seed=0)  # an existing sampler keeps working
    with pytest.raises(EngineError, match="no checkpoint") as err:
        engine.create_sampler(model_path=p2)
    assert err.value.category == "user"
    with pytest.raises(EngineError, match="no checkpoint"):
        engine.delete_checkpoint(p2)
    with pytest.raises(EngineError, match="no optimizer state"):
        engine.create_lora_from_state(p3, with_optimizer=True)
    # overwrite replaces atomically and leaves no temporaries
    engine.save_state(a, "one")
    folder = engine.state_dir / a / "weights"
    assert sorted(p.name for p in folder.iterdir()) == ["one"]
    assert engine.list_checkpoints("never-created") == []


@pytest.mark.parametrize(
    "name", ["..", ".", "../x", "a/b", "/abs", "a\x00b", "", ".hidden", "x" * 200, "sp ace", 5]
)
def test_checkpoint_names_cannot_escape(engine, name):
    a = engine.create_lora(SMALL, rank=2, seed=0)
    before = sorted(str(p) for p in engine.state_dir.rglob("*"))
    for call in (
        lambda: engine.save_state(a, name),
        lambda: engine.save_for_sampler(a, name),
    ):
        with pytest.raises(EngineError, match="invalid") as err:
            call()
        assert err.value.category == "user"
    assert sorted(str(p) for p in engine.state_dir.rglob("*")) == before
    engine.unload(a)


@pytest.mark.parametrize(
    "path",
    [
        "tinker://../weights/x",
        "tinker://a/weights/..",
        "tinker://a/../../etc",
        "tinker://a/weights/x/y",
        "tinker://a/other/x",
        "file:///etc/passwd",
        "/etc/passwd",
        "tinker:///weights/x",
        "",
        None,
    ],
)
def test_bad_checkpoint_paths(engine, path):
    a = engine.create_lora(SMALL, rank=2, seed=0)
    calls = [
        lambda: engine.load_state(a, path, with_optimizer=False),
        lambda: engine.create_lora_from_state(path, with_optimizer=False),
        lambda: engine.create_sampler(model_path=path),
        lambda: engine.delete_checkpoint(path),
        lambda: engine.weights_info(path),
    ]
    for call in calls:
        with pytest.raises(EngineError) as err:
            call()
        assert err.value.category == "user", err.value.message
    engine.unload(a)
