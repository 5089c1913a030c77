"""The decode loop's backends: the preallocated cache against the transformers cache."""

from __future__ import annotations

import torch

from mint_envkit.local.engine.kvcache import CacheBackend, StaticBackend, backend_for

PROMPTS = [[2044, 5, 6, 7, 8, 9], [2044, 30, 31]]
STEPS = [[40, 41], [42, 43], [44, 45], [46, 47]]


def _padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def _run(backend, rows: list[int] | None = None) -> list[torch.Tensor]:
    ids, mask, positions = _padded(PROMPTS)
    out = [backend.prefill(ids, mask, positions, length=ids.shape[1] + len(STEPS))]
    pos = mask.sum(-1)
    if rows is not None:
        backend.select(torch.tensor(rows))
        out, pos = [out[0][rows]], pos[rows]
    for t, toks in enumerate(STEPS):
        tokens = torch.tensor(toks if rows is None else [toks[r] for r in rows])
        out.append(backend.step(tokens, pos + t, column=ids.shape[1] + t))
    return out


def test_layouts_pick_their_backend(small_model, gpt2_model):
    assert StaticBackend.supports(small_model) and not StaticBackend.supports(gpt2_model)
    assert isinstance(
        backend_for(small_model, static_shapes=False, compile_step=False), StaticBackend
    )
    assert isinstance(backend_for(gpt2_model, static_shapes=True, compile_step=False), CacheBackend)


def test_static_cache_gives_the_transformers_cache_logits(small_model):
    with torch.no_grad():
        want = _run(CacheBackend(small_model))
        for static_shapes in (False, True):
            got = _run(StaticBackend(small_model, static_shapes=static_shapes, compile_step=False))
            assert all(g.dtype == torch.float32 for g in got)
            assert max((g - w).abs().max().item() for g, w in zip(got, want, strict=True)) < 1e-4


def test_static_cache_is_written_in_place(small_model):
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


def test_selecting_rows_keeps_their_logits(small_model):
    with torch.no_grad():
        full = _run(StaticBackend(small_model, static_shapes=False, compile_step=False))
        picked = _run(
            StaticBackend(small_model, static_shapes=False, compile_step=False), rows=[1, 1, 0]
        )
    for f, p in zip(full, picked, strict=True):
        assert (f[[1, 1, 0]] - p).abs().max() < 1e-5
