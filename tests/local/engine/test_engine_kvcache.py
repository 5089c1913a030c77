"""The decode loop's backends: the preallocated cache against the transformers cache."""

from __future__ import annotations

import pytest
import torch

from mint_envkit.local.engine.kvcache import (
    CacheBackend,
    StaticBackend,
    backend_for,
    next_token_logprobs,
)
from mint_envkit.local.engine.numerics import head_logits

PROMPTS = [[244, 5, 6, 7, 8, 9], [244, 30, 31]]  # in both vocabularies (GPT-2: 300)
STEPS = [[40, 41], [42, 43], [44, 45], [46, 47]]


def _padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def _run(backend, rows: list[int] | None = None, **prefill) -> list[torch.Tensor]:
    ids, mask, positions = _padded(PROMPTS)
    out = [backend.prefill(ids, mask, positions, length=ids.shape[1] + len(STEPS), **prefill)]
    pos = mask.sum(-1)
    if rows is not None:
        backend.select(torch.tensor(rows))
        out, pos = [out[0][rows]], pos[rows]
    for t, toks in enumerate(STEPS):
        tokens = torch.tensor(toks if rows is None else [toks[r] for r in rows])
        out.append(backend.step(tokens, pos + t, column=ids.shape[1] + t))
    return out


def _full_forward(model) -> list[torch.Tensor]:
    """Each row's logits after its prompt and after each step, from one uncached forward of
    the row alone (no padding): what the cached steps must give."""
    want = [[], []]
    for r, prompt in enumerate(PROMPTS):
        seq = prompt + [step[r] for step in STEPS]
        logits = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0].float()
        want[r] = [logits[len(prompt) - 1 + t] for t in range(len(STEPS) + 1)]
    return [torch.stack([want[0][t], want[1][t]]) for t in range(len(STEPS) + 1)]


def _gap(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    return max((g - w).abs().max().item() for g, w in zip(got, want, strict=True))


def test_layouts_pick_their_backend(small_model, gpt2_model):
    assert StaticBackend.supports(small_model) and not StaticBackend.supports(gpt2_model)
    assert isinstance(
        backend_for(small_model, static_shapes=False, compile_step=False), StaticBackend
    )
    assert isinstance(backend_for(gpt2_model, static_shapes=True, compile_step=False), CacheBackend)
    assert CacheBackend(small_model).own_mask  # Qwen3: the engine's 4D mask
    assert not CacheBackend(gpt2_model).own_mask  # any other: transformers builds it


def test_static_cache_gives_the_transformers_cache_logits(small_model):
    with torch.no_grad():
        want = _run(CacheBackend(small_model))
        for static_shapes in (False, True):
            got = _run(StaticBackend(small_model, static_shapes=static_shapes, compile_step=False))
            assert all(g.dtype == torch.float32 for g in got)
            assert _gap(got, want) < 1e-4


def test_static_backend_is_written_in_place(small_model):
    backend = StaticBackend(small_model, static_shapes=True, compile_step=False)
    config = small_model.config
    with torch.no_grad():
        ids, mask, positions = _padded(PROMPTS)
        backend.prefill(ids, mask, positions, length=10)
        shape = (2, config.num_key_value_heads, 10, config.head_dim)
        assert all(k.shape == shape for k in backend.keys + backend.values)
        pointers = [k.data_ptr() for k in backend.keys]
        before = backend.keys[0].clone()
        backend.step(torch.tensor([40, 41]), mask.sum(-1), column=6)
    assert [k.data_ptr() for k in backend.keys] == pointers
    assert torch.equal(backend.keys[0][:, :, :6], before[:, :, :6])
    assert not torch.equal(backend.keys[0][:, :, 6], before[:, :, 6])
    assert backend.filled[:, :7].sum().item() == 6 + 3 + 2


@pytest.mark.parametrize("static_shapes", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("which", ["qwen3", "gpt2"])
def test_cached_left_padded_steps_give_each_rows_own_forward(
    small_model, gpt2_model, which, static_shapes
):
    model = small_model if which == "qwen3" else gpt2_model
    with torch.no_grad():
        got = _run(CacheBackend(model, static_shapes=static_shapes))
        want = _full_forward(model)
    assert all(g.dtype == torch.float32 for g in got)
    assert _gap(got, want) < 1e-4


def test_the_transformers_static_cache_is_written_in_place(small_model):
    backend = CacheBackend(small_model, static_shapes=True)
    with torch.no_grad():
        ids, mask, positions = _padded(PROMPTS)
        backend.prefill(ids, mask, positions, length=10)
        layer = backend.cache.layers[0]
        assert layer.keys.shape[2] == 10
        pointer, before = layer.keys.data_ptr(), layer.keys.clone()
        backend.step(torch.tensor([40, 41]), mask.sum(-1), column=6)
    assert layer.keys.data_ptr() == pointer
    assert torch.equal(layer.keys[:, :, :6], before[:, :, :6])
    assert not torch.equal(layer.keys[:, :, 6], before[:, :, 6])
    assert backend.filled[:, :7].sum().item() == 6 + 3 + 2


@pytest.mark.parametrize("kind", [StaticBackend, CacheBackend])
def test_selecting_rows_keeps_their_logits(small_model, kind):
    def make():
        if kind is StaticBackend:
            return StaticBackend(small_model, static_shapes=False, compile_step=False)
        return CacheBackend(small_model)

    with torch.no_grad():
        full = _run(make())
        picked = _run(make(), rows=[1, 1, 0])
    for f, p in zip(full, picked, strict=True):
        assert (f[[1, 1, 0]] - p).abs().max() < 1e-5


def test_the_prefill_scores_the_prompts_and_keeps_their_states(small_model):
    ids, mask, positions = _padded(PROMPTS)
    head = small_model.get_output_embeddings()
    with torch.no_grad():
        scored = CacheBackend(small_model)
        scored.prefill(ids, mask, positions, length=12, prompt_logprobs=True)
        kept = CacheBackend(small_model)
        kept.prefill(ids, mask, positions, length=12, prompt_hidden=True)
        for r, prompt in enumerate(PROMPTS):
            n = len(prompt) - 1  # left padding: a row's own values are its last
            hidden = small_model.model(input_ids=torch.tensor([prompt])).last_hidden_state
            want = next_token_logprobs(head, hidden[:, :-1], torch.tensor([prompt[1:]]))[0]
            assert (scored.prompt_logprobs[r, -n:] - want).abs().max() < 1e-5
            states = head_logits(head, kept.prompt_hidden[r, -n:])
            assert (states - head_logits(head, hidden[0, :-1])).abs().max() < 1e-4
    assert scored.prompt_hidden is None and kept.prompt_logprobs is None
