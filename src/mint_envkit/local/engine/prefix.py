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

from .hf_compat import cache_of, with_cache
from .numerics import causal_lm, decoder_of, head_logits

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


def _cost(lengths: list[int], shared: int) -> int:
    """Padded tokens a shared unit holds: the prefix once, each datum's rest padded."""
    return shared + len(lengths) * (max(lengths) - shared)


def plan(items: list[dict[str, list]], per_batch: int, min_shared: int) -> list[Unit]:
    """Consecutive datums grouped into shared units (prefix >= ``min_shared`` tokens, at least
    two datums, within ``per_batch`` padded tokens) and plain ones (``shared`` 0, one each).

    A shared prefix stops one token short of the shortest datum, so every datum has a rest.

    Example::

        assert [u.shared for u in plan(items, per_batch=50, min_shared=16)] == [40, 40]
        assert [u.shared for u in plan(items, per_batch=170, min_shared=41)] == [0, 0, 0, 0]
    """
    units: list[Unit] = []
    start = 0
    while start < len(items):
        tokens = items[start]["tokens"]
        shared, end = len(tokens) - 1, start + 1
        while end < len(items):
            other = items[end]["tokens"]
            common = _common(tokens, other, min(shared, len(other) - 1))
            lengths = [len(i["tokens"]) for i in items[start : end + 1]]
            if common < min_shared or _cost(lengths, common) > per_batch:
                break
            shared, end = common, end + 1
        if end - start >= 2:
            units.append(Unit(items=items[start:end], shared=shared))
        else:
            units.append(Unit(items=[items[start]]))
        start = end
    return units


def supports(model: Any) -> bool:
    """Whether ``model`` can run a shared prefix (a decoder body with a plain output head).

    Example::

        assert supports(state.peft)  # True for the Llama / Qwen bodies
    """
    return decoder_of(model) is not None


def shared_logprobs(model: Any, unit: Unit) -> torch.Tensor:
    """(datums, longest) right-padded target logprobs of a shared unit, with autograd.

    Example::

        lp = shared_logprobs(state.peft, Unit(items=items[:2], shared=40))
        assert lp.shape == (2, 45)  # (datums, longest)
    """
    body = decoder_of(model)
    head = causal_lm(model).get_output_embeddings()
    dev = next(model.parameters()).device
    items, n = unit.items, unit.shared
    rows = len(items)
    width = max(len(i["tokens"]) for i in items)
    ids = torch.tensor([items[0]["tokens"][:n]], device=dev)
    out = body(input_ids=ids, position_ids=torch.arange(n, device=dev)[None], use_cache=True)
    cache = cache_of(out)
    logits = head_logits(head, out.last_hidden_state[0])  # (n, vocab), once for every datum
    norm = torch.logsumexp(logits, dim=-1)
    targets = torch.tensor([i["target_tokens"][:n] for i in items], device=dev)
    first = logits.gather(-1, targets.T).T - norm[None]  # (rows, n)
    rest = torch.zeros((rows, width - n), dtype=torch.long)
    rest_tgt = torch.zeros((rows, width - n), dtype=torch.long)
    for row, item in enumerate(items):
        tail = item["tokens"][n:]
        rest[row, : len(tail)] = torch.tensor(tail)
        rest_tgt[row, : len(tail)] = torch.tensor(item["target_tokens"][n:])
    cache.batch_select_indices(torch.zeros(rows, dtype=torch.long, device=dev))
    positions = torch.arange(n, width, device=dev)[None].expand(rows, -1)
    # right padding, causal: a datum's own positions never see its padding
    tail_out = body(
        input_ids=rest.to(dev), position_ids=positions, use_cache=True, **with_cache(body, cache)
    )
    tail_logits = head_logits(head, tail_out.last_hidden_state)
    picked = tail_logits.gather(-1, rest_tgt.to(dev)[..., None]).squeeze(-1)
    second = picked - torch.logsumexp(tail_logits, dim=-1)
    return torch.cat([first, second], dim=1)
