"""The local backend's Engine: sampling, losses, optimizer, snapshots, checkpoints, bad input."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from mint_envkit.local.engine import Engine, EngineError, SampledSequence
from mint_envkit.local.models import load_base_model
from mint_envkit.rendering.tokenizer import get_tokenizer

SMALL = "mint-envkit/tiny-qwen3-small"
PROMPT = [2044, 100, 200, 300, 2045, 2044, 400]


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Engine:
    # One thread: on a shared, loaded 2-core machine two OpenMP threads can be 10x slower.
    return Engine(state_dir=tmp_path_factory.mktemp("state"), num_threads=1)


def _params(engine: Engine, model_id: str) -> dict[str, torch.Tensor]:
    return {k: p.detach().clone() for k, p in engine._trainers[model_id].params.items()}


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _trained(engine: Engine, seed: int = 0, steps: int = 1, rank: int = 4) -> str:
    """A LoRA whose B matrices are non-zero (so the adapter changes outputs)."""
    model_id = engine.create_lora(SMALL, rank=rank, seed=seed)
    for _ in range(steps):
        engine.forward(model_id, _ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2)
    return model_id


def _ce_data(n: int = 4) -> list[dict]:
    data = []
    for i in range(n):
        toks = [2044, 10 + i, 20 + i, 30 + i, 40 + i, 50 + i]
        data.append(
            {
                "model_input": toks[:-1],
                "loss_fn_inputs": {"target_tokens": toks[1:], "weights": [0, 1, 1, 1, 1]},
            }
        )
    return data


def _rl_data(engine: Engine, sampler: str, seed: int = 0, n: int = 4) -> list[dict]:
    seqs = engine.sample(sampler, PROMPT, num_samples=n, max_tokens=6, seed=seed)
    data = []
    for j, s in enumerate(seqs):
        k = len(PROMPT) - 1
        data.append(
            {
                "model_input": PROMPT + s.tokens[:-1],
                "loss_fn_inputs": {
                    "target_tokens": PROMPT[1:] + s.tokens,
                    "logprobs": [0.0] * k + s.logprobs,
                    "advantages": [0.0] * k + [float(j % 2) - 0.5] * len(s.tokens),
                },
            }
        )
    return data


# ---------------------------------------------------------------------------- sampling


def test_sampled_logprobs_equal_forward_logprobs(engine):
    model_id = _trained(engine)
    sampler, path = engine.save_for_sampler(model_id, None)
    assert path == ""
    seqs = engine.sample(sampler, PROMPT, num_samples=5, max_tokens=12, seed=3)
    assert len(seqs) == 5 and all(isinstance(s, SampledSequence) for s in seqs)
    data = [
        {
            "model_input": PROMPT + s.tokens[:-1],
            "loss_fn_inputs": {"target_tokens": PROMPT[1:] + s.tokens},
        }
        for s in seqs
    ]
    out = engine.forward(model_id, data, "cross_entropy", None, backward=False)
    k = len(PROMPT) - 1
    for s, lp in zip(seqs, out.logprobs, strict=True):
        assert len(s.logprobs) == len(s.tokens) == 12
        assert max(abs(a - b) for a, b in zip(s.logprobs, lp[k:], strict=True)) < 1e-4
    # compute_logprobs on the sampler agrees too, and starts with None.
    lps = engine.compute_logprobs(sampler, PROMPT + seqs[0].tokens)
    assert lps[0] is None and len(lps) == len(PROMPT) + 12
    assert max(abs(a - b) for a, b in zip(lps[1:], out.logprobs[0], strict=True)) < 1e-4
    assert engine.compute_logprobs(sampler, [5]) == [None]


def test_logprobs_follow_temperature_and_truncation(engine):
    base = engine.create_sampler(base_model=SMALL)
    model = load_base_model(SMALL, device="cpu").model
    seq = engine.sample(base, PROMPT, max_tokens=4, temperature=0.5, seed=1)[0]
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT + seq.tokens])).logits[0].float()
    k = len(PROMPT) - 1
    for i, (tok, lp) in enumerate(zip(seq.tokens, seq.logprobs, strict=True)):
        expected = torch.log_softmax(logits[k + i] / 0.5, -1)[tok].item()
        assert abs(expected - lp) < 1e-4
    # top_k=1 / tiny top_p: one token left, probability 1, it is the argmax.
    for kwargs in ({"top_k": 1}, {"top_p": 1e-6}):
        greedy = engine.sample(base, PROMPT, max_tokens=4, seed=2, **kwargs)[0]
        assert all(abs(lp) < 1e-6 for lp in greedy.logprobs)
        with torch.no_grad():
            lg = model(torch.tensor([PROMPT + greedy.tokens])).logits[0]
        assert greedy.tokens == lg[k : k + 4].argmax(-1).tolist()
    # top_k=2: renormalised over the two best tokens.
    seq2 = engine.sample(base, PROMPT, max_tokens=1, top_k=2, seed=4)[0]
    top2 = torch.topk(logits[k], 2)
    renorm = torch.log_softmax(top2.values, -1)
    assert seq2.tokens[0] in top2.indices.tolist()
    assert abs(renorm[top2.indices.tolist().index(seq2.tokens[0])].item() - seq2.logprobs[0]) < 1e-4


def test_batched_sampling_is_seeded(engine):
    base = engine.create_sampler(base_model=SMALL)
    a = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=11)
    b = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=11)
    c = engine.sample(base, PROMPT, num_samples=8, max_tokens=10, seed=12)
    assert a == b
    assert a != c
    assert len({tuple(s.tokens) for s in a}) > 1  # rows are independent draws
    assert all(s.stop_reason == "length" and len(s.tokens) == 10 for s in a)


def test_stop_token_sequence_and_string(engine):
    base = engine.create_sampler(base_model=SMALL)
    ref = engine.sample(base, PROMPT, max_tokens=8, seed=5)[0]
    # a token id: stop at its first occurrence, included in tokens
    stop_tok = ref.tokens[3]
    first = ref.tokens.index(stop_tok)
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[stop_tok])[0]
    assert got.tokens == ref.tokens[: first + 1] and got.stop_reason == "stop"
    assert got.logprobs == ref.logprobs[: first + 1]
    # a token sequence
    seq = ref.tokens[2:4]
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[seq])[0]
    assert got.tokens[-2:] == seq and got.stop_reason == "stop" and len(got.tokens) <= 4
    # a string, checked in the decoded completion
    tok = get_tokenizer(SMALL)
    text = tok.decode(ref.tokens[4:5])
    assert text.strip()
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=[text])[0]
    assert got.stop_reason == "stop" and len(got.tokens) <= 5
    assert text in tok.decode(got.tokens) and text not in tok.decode(got.tokens[:-1])
    got = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=text)[0]  # a bare str
    assert got.stop_reason == "stop"
    # a stop that never matches -> length
    never = engine.sample(base, PROMPT, max_tokens=8, seed=5, stop=["\x00never\x00"])[0]
    assert never == ref and never.stop_reason == "length"


def test_rows_that_stop_stop_growing(engine):
    base = engine.create_sampler(base_model=SMALL)
    ref = engine.sample(base, PROMPT, num_samples=16, max_tokens=6, seed=9)
    stop_tok = ref[0].tokens[1]
    got = engine.sample(base, PROMPT, num_samples=16, max_tokens=6, seed=9, stop=[stop_tok])
    assert any(s.stop_reason == "stop" for s in got)
    for s in got:
        assert len(s.tokens) == len(s.logprobs) <= 6
        if s.stop_reason == "stop":
            assert s.tokens[-1] == stop_tok and stop_tok not in s.tokens[:-1]
        else:
            assert len(s.tokens) == 6 and stop_tok not in s.tokens


def test_old_sampler_is_frozen_new_snapshot_differs(engine):
    model_id = _trained(engine, seed=1)
    old, _ = engine.save_for_sampler(model_id, None)
    before = engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7)
    before_lp = engine.compute_logprobs(old, PROMPT)
    for _ in range(3):
        engine.forward(model_id, _ce_data(), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=2e-2)
    after = engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7)
    assert after == before
    assert engine.compute_logprobs(old, PROMPT) == before_lp
    new, _ = engine.save_for_sampler(model_id, None)
    assert engine.compute_logprobs(new, PROMPT) != before_lp
    # interleaving samplers of two shapes on one base keeps each one right
    other = engine.create_lora(SMALL, rank=2, seed=3, train_mlp=False)
    other_s, _ = engine.save_for_sampler(other, None)
    engine.sample(other_s, PROMPT, max_tokens=2, seed=0)
    assert engine.sample(old, PROMPT, num_samples=4, max_tokens=8, seed=7) == before


def test_base_sampler_equals_fresh_lora(engine):
    model_id = engine.create_lora(SMALL, rank=4, seed=0)  # B = 0: same function as the base
    fresh, _ = engine.save_for_sampler(model_id, None)
    base = engine.create_sampler(base_model=SMALL)
    a = engine.compute_logprobs(fresh, PROMPT)
    b = engine.compute_logprobs(base, PROMPT)
    assert max(abs(x - y) for x, y in zip(a[1:], b[1:], strict=True)) < 1e-5


# ---------------------------------------------------------------------------- losses


def test_cross_entropy_loss_is_weighted_sum(engine):
    model_id = engine.create_lora(SMALL, rank=4, seed=0)
    out = engine.forward(model_id, _ce_data(), "cross_entropy", None, backward=False)
    expected = -sum(
        w * lp
        for d, lps in zip(_ce_data(), out.logprobs, strict=True)
        for w, lp in zip(d["loss_fn_inputs"]["weights"], lps, strict=True)
    )
    assert out.metrics["loss:sum"] == pytest.approx(expected, rel=1e-5)
    assert all(len(lp) == 5 for lp in out.logprobs)
    # logprobs of each datum do not depend on its batch neighbours (right padding)
    single = engine.forward(model_id, _ce_data()[2:3], "cross_entropy", None, backward=False)
    assert max(abs(a - b) for a, b in zip(single.logprobs[0], out.logprobs[2], strict=True)) < 1e-5


def _with(data: list[dict], **arrays) -> list[dict]:
    out = []
    for i, d in enumerate(data):
        inputs = dict(d["loss_fn_inputs"])
        for key, per_datum in arrays.items():
            inputs[key] = per_datum[i]
        out.append({"model_input": d["model_input"], "loss_fn_inputs": inputs})
    return out


def test_importance_sampling_and_ppo_hand_checked(engine):
    model_id = _trained(engine, seed=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    data = _rl_data(engine, sampler)
    learner = engine.forward(model_id, data, "cross_entropy", None, backward=False).logprobs
    lengths = [len(d["model_input"]) for d in data]
    zeros = [[0.0] * n for n in lengths]
    for fn in ("importance_sampling", "ppo"):
        out = engine.forward(model_id, _with(data, advantages=zeros), fn, None, backward=False)
        assert out.metrics["loss:sum"] == 0.0
    advs = [[0.1 * (i + 1) * ((j % 3) - 1) for j in range(n)] for i, n in enumerate(lengths)]
    total_adv = sum(map(sum, advs))
    # equal logprobs -> ratio 1 -> loss = -sum(adv), for IS and PPO alike
    same = _with(data, logprobs=learner, advantages=advs)
    for fn in ("importance_sampling", "ppo"):
        out = engine.forward(model_id, same, fn, None, backward=False)
        assert out.metrics["loss:sum"] == pytest.approx(-total_adv, abs=1e-4)
        for a, b in zip(out.logprobs, learner, strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-6
    # ratio 2 everywhere: IS = -2 sum(adv); PPO clips positive advantages at 1.2
    shifted = [[x - math.log(2.0) for x in lps] for lps in learner]
    pos = [[abs(a) for a in row] for row in advs]
    neg = [[-abs(a) for a in row] for row in advs]
    s_pos, s_neg = sum(map(sum, pos)), sum(map(sum, neg))
    d_pos = _with(data, logprobs=shifted, advantages=pos)
    d_neg = _with(data, logprobs=shifted, advantages=neg)
    is_pos = engine.forward(model_id, d_pos, "importance_sampling", None, backward=False)
    assert is_pos.metrics["loss:sum"] == pytest.approx(-2 * s_pos, rel=1e-4)
    ppo_pos = engine.forward(model_id, d_pos, "ppo", None, backward=False)
    assert ppo_pos.metrics["loss:sum"] == pytest.approx(-1.2 * s_pos, rel=1e-4)
    ppo_neg = engine.forward(model_id, d_neg, "ppo", None, backward=False)
    assert ppo_neg.metrics["loss:sum"] == pytest.approx(-2 * s_neg, rel=1e-4)
    cfg = {"clip_low_threshold": 0.5, "clip_high_threshold": 1.5}
    ppo_cfg = engine.forward(model_id, d_pos, "ppo", cfg, backward=False)
    assert ppo_cfg.metrics["loss:sum"] == pytest.approx(-1.5 * s_pos, rel=1e-4)


# ---------------------------------------------------------------------------- optimizer


def test_gradients_accumulate_until_optim_step(engine):
    data = _ce_data(4)
    a = engine.create_lora(SMALL, rank=4, seed=5)
    b = engine.create_lora(SMALL, rank=4, seed=5)
    assert _max_diff(_params(engine, a), _params(engine, b)) == 0.0
    for model_id in (a, b):  # one step first, so lora_A gets gradients too
        engine.forward(model_id, data, "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2)
    engine.forward(a, data[:2], "cross_entropy", None, backward=True)
    engine.forward(b, [data[0]], "cross_entropy", None, backward=True)
    engine.forward(b, data[1:2], "cross_entropy", None, backward=True)
    engine.forward(a, data[2:], "cross_entropy", None, backward=True)
    engine.forward(b, data[2:], "cross_entropy", None, backward=True)
    na = engine.optim_step(a, learning_rate=1e-2)["grad_norm"]
    nb = engine.optim_step(b, learning_rate=1e-2)["grad_norm"]
    assert na == pytest.approx(nb, rel=1e-4)
    assert _max_diff(_params(engine, a), _params(engine, b)) < 1e-5
    # ...and the step zeroed them: a step with no new gradient does not move the weights
    before = _params(engine, a)
    assert engine.optim_step(a, learning_rate=1e-2)["grad_norm"] == 0.0
    assert _max_diff(before, _params(engine, a)) == 0.0
    # the forward-only pass adds no gradient
    engine.forward(a, data, "cross_entropy", None, backward=False)
    assert engine.optim_step(a, learning_rate=1e-2)["grad_norm"] == 0.0


def _two_steps(engine: Engine, **adam) -> dict[str, torch.Tensor]:
    model_id = engine.create_lora(SMALL, rank=4, seed=8)
    for i in range(2):
        data = _ce_data(2 + 2 * i)  # different gradients per step
        engine.forward(model_id, data, "cross_entropy", None, backward=True)
        engine.optim_step(model_id, **{"learning_rate": 1e-2, **adam})
    params = _params(engine, model_id)
    engine.unload(model_id)
    return params


def test_every_adam_param_has_an_effect(engine):
    start = _params(engine, engine.create_lora(SMALL, rank=4, seed=8))
    assert _max_diff(_two_steps(engine, learning_rate=0.0), start) == 0.0
    baseline = _two_steps(engine)
    assert _max_diff(_two_steps(engine), baseline) == 0.0  # deterministic
    assert _max_diff(baseline, start) > 1e-3
    for field, value in (
        ("learning_rate", 2e-2),
        ("beta1", 0.5),
        ("beta2", 0.5),
        ("eps", 1.0),
        ("weight_decay", 10.0),
        ("grad_clip_norm", 1e-3),
    ):
        assert _max_diff(_two_steps(engine, **{field: value}), baseline) > 1e-7, field


def test_grad_clip_bounds_the_update_with_large_eps(engine):
    # With eps >> |grad| Adam's update is ~ lr * grad / eps: proportional to the gradient,
    # so clipping its norm bounds the size of the step.
    def step_size(clip: float) -> tuple[float, float]:
        model_id = engine.create_lora(SMALL, rank=4, seed=8)
        before = _params(engine, model_id)
        engine.forward(model_id, _ce_data(), "cross_entropy", None, backward=True)
        m = engine.optim_step(
            model_id, learning_rate=1.0, beta1=0.0, beta2=0.0, eps=1e6, grad_clip_norm=clip
        )
        after = _params(engine, model_id)
        delta = math.sqrt(sum(float(((after[k] - before[k]) ** 2).sum()) for k in before))
        return m["grad_norm"], delta

    norm, free = step_size(0.0)
    assert norm > 0.5
    _, clipped = step_size(0.5)
    assert clipped == pytest.approx(free * 0.5 / norm, rel=1e-3)


def test_lora_flags_choose_target_modules(engine):
    only_unembed = engine.create_lora(
        SMALL, rank=2, seed=0, train_mlp=False, train_attn=False, train_unembed=True
    )
    names = list(_params(engine, only_unembed))
    assert names and all("lm_head" in n for n in names)
    attn = engine.create_lora(SMALL, rank=2, seed=0, train_mlp=False, train_unembed=False)
    names = list(_params(engine, attn))
    assert any("q_proj" in n for n in names) and not any(
        "mlp" in n or "lm_head" in n for n in names
    )
    mlp = engine.create_lora(SMALL, rank=3, seed=0, train_attn=False, train_unembed=False)
    params = _params(engine, mlp)
    assert all("mlp" in n for n in params)
    assert any(p.shape[0] == 3 for n, p in params.items() if "lora_A" in n)
    info = engine.model_info(mlp)
    assert info["lora_rank"] == 3 and info["arch"] == "qwen3" and info["base_model"] == SMALL
    assert Path(info["tokenizer_dir"]).is_absolute() and info["tokenizer_dir"].count("/") != 2
    # the same seed gives the same init; another seed another one
    again = _params(
        engine, engine.create_lora(SMALL, rank=3, seed=0, train_attn=False, train_unembed=False)
    )
    assert _max_diff(params, again) == 0.0
    other = _params(
        engine, engine.create_lora(SMALL, rank=3, seed=1, train_attn=False, train_unembed=False)
    )
    assert _max_diff(params, other) > 0
    for model_id in (only_unembed, attn, mlp):
        engine.unload(model_id)
    with pytest.raises(EngineError, match="unknown model_id"):
        engine.model_info(mlp)


# ---------------------------------------------------------------------------- checkpoints


def test_save_and_load_state_round_trip(engine):
    a = _trained(engine, seed=4, steps=2)
    path = engine.save_state(a, "ckpt-1")
    assert path == f"tinker://{a}/weights/ckpt-1"
    saved = _params(engine, a)
    b = engine.create_lora_from_state(path, with_optimizer=True)
    assert b != a and _max_diff(_params(engine, b), saved) == 0.0
    assert engine.model_info(b)["step"] == 2
    for model_id in (a, b):
        engine.forward(model_id, _ce_data(3), "cross_entropy", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-2, weight_decay=0.1)
    assert _max_diff(_params(engine, a), _params(engine, b)) < 1e-6
    # without the optimizer state the continuation differs (Adam restarts)
    c = engine.create_lora_from_state(path, with_optimizer=False)
    engine.forward(c, _ce_data(3), "cross_entropy", None, backward=True)
    engine.optim_step(c, learning_rate=1e-2, weight_decay=0.1)
    assert _max_diff(_params(engine, a), _params(engine, c)) > 1e-6
    # load_state into an existing client of the same shape
    d = engine.create_lora(SMALL, rank=4, seed=99)
    engine.load_state(d, path, with_optimizer=True)
    assert _max_diff(_params(engine, d), saved) == 0.0
    assert engine.weights_info(path) == {"base_model": SMALL, "is_lora": True, "lora_rank": 4}
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
    a = _trained(engine, seed=6)
    path = engine.save_state(a, "resume")
    sampler, spath = engine.save_for_sampler(a, "for-sampling")
    assert spath == f"tinker://{a}/sampler_weights/for-sampling"
    expected = engine.sample(sampler, PROMPT, num_samples=3, max_tokens=6, seed=1)
    fresh = Engine(state_dir=engine.state_dir, num_threads=1)
    b = fresh.create_lora_from_state(path, with_optimizer=True)
    assert _max_diff(_params(fresh, b), _params(engine, a)) == 0.0
    s2 = fresh.create_sampler(model_path=spath)
    _same_samples(fresh.sample(s2, PROMPT, num_samples=3, max_tokens=6, seed=1), expected)
    s3 = engine.create_sampler(model_path=spath)
    _same_samples(engine.sample(s3, PROMPT, num_samples=3, max_tokens=6, seed=1), expected)


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


# ---------------------------------------------------------------------------- bad input


def test_bad_input_is_a_user_error(engine):
    model_id = engine.create_lora(SMALL, rank=2, seed=0)
    sampler, _ = engine.save_for_sampler(model_id, None)
    good = _ce_data(1)[0]

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
        "temperature 0": lambda: engine.sample(sampler, [1], temperature=0.0),
        "top_p 0": lambda: engine.sample(sampler, [1], top_p=0.0),
        "top_k 0": lambda: engine.sample(sampler, [1], top_k=0),
        "num_samples 0": lambda: engine.sample(sampler, [1], num_samples=0),
        "stop out of vocab": lambda: engine.sample(sampler, [1], stop=[99999]),
        "stop empty string": lambda: engine.sample(sampler, [1], stop=[""]),
        "too long": lambda: engine.sample(sampler, [1], max_tokens=10_000),
        "loss_fn unknown": lambda: engine.forward(model_id, [good], "dro", None, backward=True),
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
        "negative lr": lambda: engine.optim_step(model_id, learning_rate=-1.0),
        "beta1 1": lambda: engine.optim_step(model_id, learning_rate=1e-3, beta1=1.0),
        "nan eps": lambda: engine.optim_step(model_id, learning_rate=1e-3, eps=float("nan")),
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
    msg = _message(lambda: engine.forward(model_id, [good], "dro", None, backward=True))
    assert "'dro'" in msg and "importance_sampling" in msg
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


def test_merged_sampling_copy_matches_the_peft_path(engine):
    """Sampling uses a merged copy of the weights; it must agree with the LoRA forward."""
    model_id = _trained(engine, seed=5, steps=2)
    sampler, _ = engine.save_for_sampler(model_id, None)
    prompt = [10, 11, 12, 13, 14]
    merged = engine.sample(sampler, prompt, num_samples=3, max_tokens=6, seed=9)
    base = engine._bases[engine._sampler(sampler).base]
    assert base.merged is not None  # the tiny model keeps a merged copy
    kept, base.merged = base.merged, None
    try:
        through_peft = engine.sample(sampler, prompt, num_samples=3, max_tokens=6, seed=9)
    finally:
        base.merged = kept
    for a, b in zip(merged, through_peft, strict=True):
        assert a.tokens == b.tokens
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5


def test_a_released_snapshot_never_serves_stale_merged_weights(engine):
    first = _trained(engine, seed=6, steps=1)
    second = _trained(engine, seed=7, steps=3)
    prompt = [20, 21, 22]
    s1, _ = engine.save_for_sampler(first, None)
    out1 = engine.compute_logprobs(s1, prompt)
    engine.release_sampler(s1)
    s2, _ = engine.save_for_sampler(second, None)
    out2 = engine.compute_logprobs(s2, prompt)
    s1_again, _ = engine.save_for_sampler(first, None)
    assert engine.compute_logprobs(s1_again, prompt) == pytest.approx(out1, abs=1e-6)
    assert out2 != pytest.approx(out1, abs=1e-6)


def test_sample_many_batches_requests_like_separate_calls(engine):
    model_id = _trained(engine, seed=8, steps=1)
    sampler, _ = engine.save_for_sampler(model_id, None)
    base_sampler = engine.create_sampler(base_model=SMALL)
    requests = [
        (sampler, [10, 11, 12], {"num_samples": 3, "max_tokens": 5, "seed": 1}),
        (
            sampler,
            [7, 8, 9, 10, 11, 12, 13],
            {"num_samples": 2, "max_tokens": 3, "seed": 2, "temperature": 0.5},
        ),
        (sampler, [30], {"num_samples": 1, "max_tokens": 6, "seed": 3, "top_k": 5}),
        (base_sampler, [10, 11, 12], {"num_samples": 2, "max_tokens": 4, "seed": 4}),
        (sampler, [], {"num_samples": 1}),  # invalid: empty prompt
        ("no-such-sampler", [1, 2], {}),
    ]
    batched = engine.sample_many(requests)
    assert isinstance(batched[4], EngineError) and "prompt" in str(batched[4])
    assert isinstance(batched[5], EngineError)
    for (sid, prompt, kwargs), got in zip(requests[:4], batched[:4], strict=True):
        alone = engine.sample(sid, prompt, **kwargs)
        assert [s.tokens for s in got] == [s.tokens for s in alone]
        assert [s.stop_reason for s in got] == [s.stop_reason for s in alone]
        for a, b in zip(got, alone, strict=True):
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
    # a padded batch still gives logprobs equal to a forward pass on the same weights
    seq0 = batched[0][0]
    forward0 = engine.compute_logprobs(sampler, [10, 11, 12, *seq0.tokens])[-len(seq0.tokens) :]
    assert max(abs(x - y) for x, y in zip(seq0.logprobs, forward0, strict=True)) < 1e-4
