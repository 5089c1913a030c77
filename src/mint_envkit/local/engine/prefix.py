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

from .hf_compat import cache_of, with_cache
from .numerics import causal_lm, decoder_of, head_logprobs

SHARED_PREFIX_MIN_TOKENS = 16
"""Consecutive datums whose ``model_input`` share at least this many first tokens train as
one shared unit (``forward`` runs the prefix once). A huge value turns sharing off."""


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


def _cost_of(datums: int, longest: int, shared: int) -> int:
    """Padded tokens a shared unit holds: the prefix once, each datum's rest padded."""
    return shared + datums * (longest - shared)


def plan(items: list[dict[str, list]], per_batch: int, min_shared: int) -> list[Unit]:
    """Consecutive datums cut into shared units (prefix >= ``min_shared`` tokens, at least
    two datums, within ``per_batch`` padded tokens) and plain ones (``shared`` 0, one each),
    the cut with the fewest padded tokens in all.

    A shared prefix stops one token short of the shortest datum, so every datum has a rest.
    The fewest tokens, not the longest runs: the groups of an RL step share the system
    prompt too, and one unit running on past its group shares only that (the demo's
    groups as units of 7 datums sharing 25 tokens held 982 tokens, one unit per group
    778; issue 21).

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
    best = [0] + [0] * n  # best[j]: the fewest padded tokens of items[:j]
    cut = [0] * (n + 1)  # where the last unit of best[j] starts
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1] + lengths[j - 1], j - 1  # the last datum plain
        shared, longest = lengths[j - 1], lengths[j - 1]
        for i in range(j - 2, -1, -1):  # the unit items[i:j], longer and longer
            shared, longest = min(shared, adjacent[i]), max(longest, lengths[i])
            cost = _cost_of(j - i, longest, shared)
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


def pack(units: list[Unit], budget: int) -> list[list[Unit]]:
    """Consecutive shared units packed into passes of at most ``budget`` padded tokens.

    A pass runs its units' prefixes as one batch (padded to the longest) and every
    datum's rest as another (padded to the longest rest): fewer, larger matrix products,
    which on CPU cost much less per token than one small pass per group (issue 21).

    Example::

        units = [Unit(items=items, shared=40)] * 3  # 40 + 4 * 5 = 60 padded tokens each
        assert [len(p) for p in pack(units, budget=130)] == [2, 1]
    """
    passes: list[list[Unit]] = []
    for unit in units:
        trial = [*passes[-1], unit] if passes else [unit]
        if passes and pass_cost(trial) <= budget:
            passes[-1] = trial
        else:
            passes.append([unit])
    return passes


def pass_cost(units: list[Unit]) -> int:
    """Padded tokens of one pass over ``units``: each prefix padded to the longest, then each
    datum's rest padded to the longest rest.

    Example::

        assert pass_cost([Unit(items=items, shared=40)]) == 40 + 4 * 5
    """
    prefix = len(units) * max(u.shared for u in units)
    rest = [len(i["tokens"]) - u.shared for u in units for i in u.items]
    return prefix + len(rest) * max(rest)


def _live(items: list[dict[str, list]], key: str | None, start: int, stop: int) -> list[bool]:
    """Per position in [start, stop): whether any datum's loss weight ``key`` is non-zero there
    (all True without a key, or when a datum has none)."""
    if key is None or any(key not in i for i in items):
        return [True] * (stop - start)
    return [any(i[key][p] != 0 for i in items) for p in range(start, stop)]


def shared_logprobs(model: Any, units: list[Unit], grad_key: str | None = None) -> torch.Tensor:
    """(datums, longest) right-padded target logprobs of the datums of shared ``units``.

    One pass over the units' prefixes (right-padded), one over every datum's rest after
    its prefix's KV cache, with autograd; datums in unit order. ``grad_key`` names the
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
    width = max(u.shared for u in units)
    padded = any(u.shared != width for u in units)
    ids = torch.zeros((len(units), width), dtype=torch.long)
    for row, unit in enumerate(units):
        ids[row, : unit.shared] = torch.tensor(unit.items[0]["tokens"][: unit.shared])
    mask = (torch.arange(width)[None] < torch.tensor([u.shared for u in units])[:, None]).long()
    extra = {"attention_mask": mask.to(dev)} if padded else {}
    positions = torch.arange(width, device=dev)[None].expand(len(units), -1)
    out = body(input_ids=ids.to(dev), position_ids=positions, use_cache=True, **extra)
    cache = cache_of(out)
    firsts = []  # per unit (datums, shared): each datum's targets at the prefix positions
    for row, unit in enumerate(units):
        n = unit.shared
        targets = torch.tensor([i["target_tokens"][:n] for i in unit.items], device=dev)
        need = torch.tensor(_live(unit.items, grad_key, 0, n), device=dev)
        firsts.append(head_logprobs(head, out.last_hidden_state[row, :n], targets.T, need).T)
    items = [(row, u.shared, i) for row, u in enumerate(units) for i in u.items]
    rests = [len(i["tokens"]) - n for _, n, i in items]
    rest = torch.zeros((len(items), max(rests)), dtype=torch.long)
    rest_tgt = torch.zeros_like(rest)
    for r, (_, n, item) in enumerate(items):
        rest[r, : rests[r]] = torch.tensor(item["tokens"][n:])
        rest_tgt[r, : rests[r]] = torch.tensor(item["target_tokens"][n:])
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
        use_cache=True,
        **with_cache(body, cache),
        **extra,
    ).last_hidden_state
    real = torch.arange(rest.shape[1])[None] < torch.tensor(rests)[:, None]
    need = [ok for _, n, i in items for ok in _live([i], grad_key, n, len(i["tokens"]))]
    flat = head_logprobs(
        head, tail[real.to(dev)], rest_tgt[real].to(dev)[:, None], torch.tensor(need, device=dev)
    )[:, 0]
    longest = max(len(i["tokens"]) for _, _, i in items)
    prefixes = [first[k] for first in firsts for k in range(first.shape[0])]  # datum order
    rows = [torch.cat([a, b]) for a, b in zip(prefixes, flat.split(rests), strict=True)]
    return torch.stack([F.pad(row, (0, longest - row.shape[0])) for row in rows])
