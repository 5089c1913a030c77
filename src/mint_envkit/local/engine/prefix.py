"""Training datums that share a prompt: the shared prefix runs once, each datum's rest after it.

An RL step's datums come in groups: a group's samples are one prompt plus different
replies, so most of each datum is the same tokens (about 3/4 in the arithmetic demo,
issue 21). :func:`plan` cuts a micro-batch's worth of consecutive datums into
*units*: a run of datums with a long common prefix becomes one shared unit, and
:func:`shared_logprobs` runs that prefix once (batch of one, with a KV cache), then
every datum's remaining tokens after it (the cache repeated per datum), so autograd
sums each datum's gradient through the one prefix. The logprobs, loss and gradient
are those of the datums run apart, to float rounding (another matmul shape: ~1e-6
in fp32; tests in ``tests/local/engine/test_engine_training.py``).

The fp32 head and log-softmax of a prefix position also run once: each datum's own
target there is picked from the same row (datums may have different targets at a
shared position; the prefix's last position predicts each reply's first token).

Example::

    from mint_envkit.local.engine import prefix

    prompt = list(range(100, 140))  # four datums: one 40-token prompt, each its own reply
    items = [{"tokens": prompt + [200 + i] * 5, "target_tokens": prompt[1:] + [200 + i] * 6}
             for i in range(4)]
    units = prefix.plan(items, per_batch=170, min_shared=prefix.SHARED_PREFIX_MIN_TOKENS)
    assert [(len(u.items), u.shared) for u in units] == [(4, 40)]  # the prompt runs once
"""

from __future__ import annotations

from typing import Any

import attrs
import torch
import torch.nn.functional as F

from .numerics import causal_lm, decoder_of, head_logprobs

SHARED_PREFIX_MIN_TOKENS = 16
"""Consecutive datums whose ``model_input`` share at least this many first tokens train as
one shared unit (``forward`` runs the prefix once). A huge value turns sharing off."""

PACKED_ROW_MAX_TOKENS = 2048
"""A packed shared pass (float32, :func:`packs_exactly`) holds at most this many tokens, so
its (tokens, tokens) attention mask stays within 16 MB whatever the engine's per-pass budget."""


@attrs.frozen
class Unit:
    """Consecutive datums of one micro-batch; ``shared`` first tokens common to all (0: none).

    Example::

        Unit(items=items, shared=40)
    """

    items: list[dict[str, list]]
    shared: int = 0


def _common(a: list[int], b: list[int], upto: int) -> int:
    n = 0
    for x, y in zip(a[:upto], b[:upto], strict=False):
        if x != y:
            break
        n += 1
    return n


def _cost_of(total: int, datums: int, shared: int) -> int:
    """Tokens a shared unit holds: the prefix once, then each datum's rest (``total``: the
    datums' tokens in all)."""
    return total - (datums - 1) * shared


def plan(items: list[dict[str, list]], per_batch: int, min_shared: int) -> list[Unit]:
    """Consecutive datums cut into shared units (prefix >= ``min_shared`` tokens, at least
    two datums, within ``per_batch`` tokens) and plain ones (``shared`` 0, one each), the
    cut with the fewest tokens in all (:func:`pass_cost`).

    A shared prefix stops one token short of the shortest datum, so every datum has a rest.
    The fewest tokens, not the longest runs: the groups of an RL step share the system
    prompt too, and one unit running on past its group shares only that (the demo's
    first step as units of 7 datums sharing 25 tokens held 924 tokens, one unit per
    group 744; issue 21).

    Example::

        assert [u.shared for u in plan(items, per_batch=50, min_shared=16)] == [40, 40]
        assert [u.shared for u in plan(items, per_batch=170, min_shared=41)] == [0, 0, 0, 0]
    """
    n = len(items)
    lengths = [len(i["tokens"]) for i in items]
    adjacent = [  # common first tokens of datums k and k + 1, at most one short of either
        _common(items[k]["tokens"], items[k + 1]["tokens"], min(lengths[k : k + 2]) - 1)
        for k in range(n - 1)
    ]
    best = [0] + [0] * n  # best[j]: the fewest tokens of items[:j]
    cut = [0] * (n + 1)  # where the last unit of best[j] starts
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1] + lengths[j - 1], j - 1  # the last datum plain
        shared, total = lengths[j - 1], lengths[j - 1]
        for i in range(j - 2, -1, -1):  # the unit items[i:j], longer and longer
            shared, total = min(shared, adjacent[i]), total + lengths[i]
            cost = _cost_of(total, j - i, shared)
            if shared < min_shared or cost > per_batch:
                break  # a longer run only shares less and costs more
            if best[i] + cost < best[j]:
                best[j], cut[j] = best[i] + cost, i
    units: list[Unit] = []
    j = n
    while j > 0:
        i = cut[j]
        if j - i == 1:
            units.append(Unit(items=[items[i]]))
        else:
            shared = min(adjacent[i : j - 1])
            units.append(Unit(items=items[i:j], shared=shared))
        j = i
    return units[::-1]


def supports(model: Any) -> bool:
    """Whether ``model`` can run a shared prefix (a decoder body with a plain output head).

    Example::

        assert supports(state.peft)  # True for the Llama / Qwen bodies
    """
    return decoder_of(model) is not None


def pack(units: list[Unit], budget: int, *, padded: bool = False) -> list[list[Unit]]:
    """Consecutive shared units packed into passes of at most ``budget`` tokens
    (:func:`pass_cost`, ``padded`` for the KV cache path).

    A pass runs its units together (:func:`shared_logprobs`): fewer, larger matrix
    products, which on CPU cost much less per token than one small pass per group
    (issue 21).

    Example::

        units = [Unit(items=items, shared=40)] * 3  # 40 + 4 * 5 = 60 tokens each
        assert [len(p) for p in pack(units, budget=130)] == [2, 1]
    """
    passes: list[list[Unit]] = []
    for unit in units:
        trial = [*passes[-1], unit] if passes else [unit]
        if passes and pass_cost(trial, padded=padded) <= budget:
            passes[-1] = trial
        else:
            passes.append([unit])
    return passes


def pass_cost(units: list[Unit], *, padded: bool = False) -> int:
    """Tokens of one pass over ``units``: each prefix once, then each datum's rest (one
    packed row, no padding); ``padded``: the KV cache path's, each prefix padded to the
    longest, then each rest to the longest rest (:func:`packs_exactly`).

    Example::

        assert pass_cost([Unit(items=items, shared=40)]) == 40 + 4 * 5
    """
    if padded:
        rest = [len(i["tokens"]) - u.shared for u in units for i in u.items]
        return len(units) * max(u.shared for u in units) + len(rest) * max(rest)
    return sum(
        _cost_of(sum(len(i["tokens"]) for i in u.items), len(u.items), u.shared) for u in units
    )


def _live(items: list[dict[str, list]], key: str | None, start: int, stop: int) -> list[bool]:
    """Per position in [start, stop): whether any datum's loss weight ``key`` is non-zero there
    (all True without a key, or when a datum has none)."""
    if key is None or any(key not in i for i in items):
        return [True] * (stop - start)
    return [any(i[key][p] != 0 for i in items) for p in range(start, stop)]


def packs_exactly(model: Any) -> bool:
    """Whether ``model``'s shared passes run as one packed row (float32 weights), not
    through a KV cache.

    A packed row puts other datums' (masked) tokens among a rest's keys, so the
    attention sums in another order than the decode: in float32 that is ~1e-7, in
    bfloat16 it is a rounding step of the attention output (0.01 nats in the logprobs,
    tiny-qwen3-small), while the KV cache path keeps the decode's key order (on CPU the bf16
    logprobs equal the sampler's). bfloat16 therefore takes the KV cache path.

    Example::

        assert packs_exactly(state.peft)  # the CPU engine's float32 models
    """
    body = decoder_of(model)
    return body is not None and next(body.parameters()).dtype == torch.float32


def _visible(unit_of: list[int], datum_of: list[int], dev: Any) -> torch.Tensor:
    """(tokens, tokens) of one packed pass: whether a token sees another (earlier or itself,
    of its own unit, and in the prefix or its own datum's rest). ``unit_of``, ``datum_of``:
    each token's unit and datum (-1 for the unit's prefix)."""
    units_t, datums_t = torch.tensor(unit_of, device=dev), torch.tensor(datum_of, device=dev)
    index = torch.arange(len(unit_of), device=dev)
    earlier = index[None, :] <= index[:, None]  # [query, key]
    mine = (datums_t[None, :] == -1) | (datums_t[None, :] == datums_t[:, None])
    return earlier & (units_t[None, :] == units_t[:, None]) & mine


def _packed(body: Any, units: list[Unit], dev: Any) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Hidden states of one packed row: each unit's prefix once, then every datum's rest,
    with an attention mask that lets a rest see its own prefix and its own earlier tokens
    only, and positions that go on from the prefix. No padding, no KV cache copies, the
    weights read once a pass. Returns (per unit (shared, hidden), (rest tokens, hidden))."""
    ids: list[int] = []
    positions: list[int] = []
    unit_of: list[int] = []
    datum_of: list[int] = []
    prefix_at, rest_at = [], []
    for u, unit in enumerate(units):
        n = unit.shared
        prefix_at.append(len(ids))
        ids += unit.items[0]["tokens"][:n]
        positions += range(n)
        unit_of += [u] * n
        datum_of += [-1] * n
        for d, item in enumerate(unit.items):
            rest = len(item["tokens"]) - n
            rest_at += range(len(ids), len(ids) + rest)
            ids += item["tokens"][n:]
            positions += range(n, len(item["tokens"]))
            unit_of += [u] * rest
            datum_of += [d] * rest
    dtype = next(body.parameters()).dtype
    mask = torch.zeros((len(ids), len(ids)), dtype=dtype, device=dev)
    hidden_from = ~_visible(unit_of, datum_of, dev)
    mask.masked_fill_(hidden_from, torch.finfo(dtype).min)  # additive: eager and sdpa
    hidden = body(
        input_ids=torch.tensor([ids], device=dev),
        position_ids=torch.tensor([positions], device=dev),
        attention_mask=mask[None, None],
        use_cache=False,
    ).last_hidden_state[0]
    prefixes = [hidden[at : at + u.shared] for at, u in zip(prefix_at, units, strict=True)]
    return prefixes, hidden[torch.tensor(rest_at, device=dev)]


def _cached(body: Any, units: list[Unit], dev: Any) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Hidden states through a KV cache: the units' prefixes as one right-padded batch, then
    every datum's rest (right-padded) after its prefix's cache, repeated per datum; the
    same returns as :func:`_packed`."""
    width = max(u.shared for u in units)
    padded = any(u.shared != width for u in units)
    ids = torch.zeros((len(units), width), dtype=torch.long)
    for row, unit in enumerate(units):
        ids[row, : unit.shared] = torch.tensor(unit.items[0]["tokens"][: unit.shared])
    mask = (torch.arange(width)[None] < torch.tensor([u.shared for u in units])[:, None]).long()
    extra = {"attention_mask": mask.to(dev)} if padded else {}
    positions = torch.arange(width, device=dev)[None].expand(len(units), -1)
    out = body(input_ids=ids.to(dev), position_ids=positions, use_cache=True, **extra)
    cache = out.cache
    prefixes = [out.last_hidden_state[row, : u.shared] for row, u in enumerate(units)]
    items = [(row, u.shared, i) for row, u in enumerate(units) for i in u.items]
    rests = [len(i["tokens"]) - n for _, n, i in items]
    rest = torch.zeros((len(items), max(rests)), dtype=torch.long)
    for r, (_, n, item) in enumerate(items):
        rest[r, : rests[r]] = torch.tensor(item["tokens"][n:])
    cache.batch_select_indices(torch.tensor([row for row, _, _ in items], device=dev))
    starts = torch.tensor([n for _, n, _ in items], device=dev)
    positions = starts[:, None] + torch.arange(rest.shape[1], device=dev)[None]
    if padded:  # a datum sees its own prefix, not the padding after it, then its rest
        keep = torch.arange(width, device=dev)[None] < starts[:, None]
        ones = torch.ones(rest.shape, dtype=torch.long, device=dev)
        extra = {"attention_mask": torch.cat([keep.long(), ones], dim=1)}
    # right padding, causal: a datum's own positions never see its padding
    tail = body(
        input_ids=rest.to(dev),
        position_ids=positions,
        cache=cache,
        use_cache=True,
        **extra,
    ).last_hidden_state
    real = torch.arange(rest.shape[1])[None] < torch.tensor(rests)[:, None]
    return prefixes, tail[real.to(dev)]


def shared_logprobs(model: Any, units: list[Unit], grad_key: str | None = None) -> torch.Tensor:
    """(datums, longest) right-padded target logprobs of the datums of shared ``units``.

    One forward with autograd: one packed row (float32) or prefixes then rests through a
    KV cache (:func:`packs_exactly`); datums in unit order. ``grad_key`` names the
    per-token input where a zero makes the loss's gradient zero (``weights`` for
    cross-entropy, ``advantages`` for the RL losses): a frozen head skips the gradient
    of such positions (a group's prompt).

    Example::

        lp = shared_logprobs(state.peft, [Unit(items=items[:2], shared=40)])
        assert lp.shape == (2, 45)  # (datums, longest)
    """
    body = decoder_of(model)
    head = causal_lm(model).get_output_embeddings()
    dev = next(model.parameters()).device
    run = _packed if packs_exactly(model) else _cached
    prefix_hidden, rest_hidden = run(body, units, dev)
    firsts = []  # per unit (datums, shared): each datum's targets at the prefix positions
    for hidden, unit in zip(prefix_hidden, units, strict=True):
        n = unit.shared
        targets = torch.tensor([i["target_tokens"][:n] for i in unit.items], device=dev)
        need = torch.tensor(_live(unit.items, grad_key, 0, n), device=dev)
        firsts.append(head_logprobs(head, hidden, targets.T, need).T)
    items = [(u.shared, i) for u in units for i in u.items]
    targets = [t for n, i in items for t in i["target_tokens"][n:]]
    need = [ok for n, i in items for ok in _live([i], grad_key, n, len(i["tokens"]))]
    flat = head_logprobs(
        head,
        rest_hidden,
        torch.tensor(targets, device=dev)[:, None],
        torch.tensor(need, device=dev),
    )[:, 0]
    rests = [len(i["tokens"]) - n for n, i in items]
    longest = max(len(i["tokens"]) for _, i in items)
    prefixes = [first[k] for first in firsts for k in range(first.shape[0])]  # datum order
    rows = [torch.cat([a, b]) for a, b in zip(prefixes, flat.split(rests), strict=True)]
    return torch.stack([F.pad(row, (0, longest - row.shape[0])) for row in rows])
