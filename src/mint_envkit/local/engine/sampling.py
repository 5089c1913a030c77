"""Sampling: snapshots, request checks, batched generation with a KV cache, prompt logprobs.

Requests on one sampler share one padded batch: each prompt runs once, its KV
cache is repeated for its rows, all rows step together and a row that stops
leaves the batch. Each request draws from its own seeded generator, so its
tokens do not depend on what else is in the batch. A sampled logprob is that of
the distribution the token was drawn from (temperature-scaled, renormalised
after ``top_k`` / ``top_p`` truncation).

The protocol checks ``temperature`` (> 0), ``top_p`` (in (0, 1]) and ``top_k``
(-1 or >= 1); they are not checked again here.

Example::

    from mint_envkit.local.engine import sampling

    spec = sampling.sample_spec(state, [2044, 10], num_samples=2, max_tokens=4, seed=0)
    [seqs] = sampling.generate(state, snapshot, [spec], Control(max_tokens_per_pass=4096))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

from .adapters import use_sampler
from .budget import RELEASE_AFTER_TOKENS, Control, release_memory
from .hf_compat import cache_of, with_cache
from .inputs import int_list, is_int, token_ids
from .records import (
    BaseModelState,
    EngineError,
    SampledSequence,
    SampleSpec,
    Snapshot,
    Trainer,
    context_length,
)
from .training import logprobs_batch

__all__ = ["compute_logprobs", "generate", "sample_many", "sample_spec", "snapshot_of"]


def snapshot_of(trainer: Trainer) -> Snapshot:
    """A frozen copy of a training client's adapter tensors (later training never changes it).

    Example::

        snap = snapshot_of(trainer)
    """
    tensors = {k: p.detach().clone() for k, p in trainer.params.items()}
    return Snapshot(base=trainer.base, spec=trainer.spec, tensors=tensors, source=trainer.model_id)


def _parse_stop(stop: Any, vocab: int) -> tuple[set[int], list[list[int]], list[str]]:
    ids: set[int] = set()
    seqs: list[list[int]] = []
    strings: list[str] = []
    if stop is None:
        return ids, seqs, strings
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, Sequence):
        raise EngineError(
            f"stop must be a string, a list of strings, token ids or token id lists; got {stop!r}"
        )
    for i, item in enumerate(stop):
        if is_int(item):
            ids.add(int(item))
        elif isinstance(item, str):
            if not item:
                raise EngineError(f"stop[{i}] is an empty string; remove it")
            strings.append(item)
        elif isinstance(item, Sequence):
            seq = int_list(item, f"stop[{i}]")
            if not seq:
                raise EngineError(f"stop[{i}] is an empty token sequence; remove it")
            if len(seq) == 1:
                ids.add(seq[0])
            else:
                seqs.append(seq)
        else:
            raise EngineError(f"stop[{i}] must be a token id, a token list or a string")
    for t in [*ids, *(t for s in seqs for t in s)]:
        if t < 0 or t >= vocab:
            raise EngineError(f"stop token id {t} is outside the vocabulary [0, {vocab})")
    return ids, seqs, strings


def sample_spec(
    base: BaseModelState,
    prompt: Any,
    *,
    num_samples: Any = 1,
    max_tokens: Any = 16,
    temperature: Any = 1.0,
    top_p: Any = 1.0,
    top_k: Any = -1,
    seed: Any = None,
    stop: Any = None,
) -> SampleSpec:
    """Check one request's arguments against the model (EngineError naming the bad one).

    Example::

        sample_spec(state, [2044, 10], max_tokens=8, stop=["\\n"]).stop_strs  # ('\\n',)
    """
    vocab = base.loaded.vocab_size
    tokens = token_ids(prompt, vocab)
    if not is_int(num_samples) or not 1 <= num_samples <= 4096:
        raise EngineError(f"num_samples must be an integer from 1 to 4096, got {num_samples!r}")
    if not is_int(max_tokens) or max_tokens < 1:
        raise EngineError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    if seed is not None and not is_int(seed):
        raise EngineError(f"seed must be an integer or null, got {seed!r}")
    max_len = context_length(base)
    if len(tokens) + max_tokens > max_len:
        raise EngineError(
            f"prompt ({len(tokens)} tokens) + max_tokens ({max_tokens}) exceeds the "
            f"model's context of {max_len}"
        )
    stop_ids, stop_seqs, stop_strs = _parse_stop(stop, vocab)
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") >> 1
    return SampleSpec(
        prompt=tokens,
        num_samples=int(num_samples),
        max_tokens=int(max_tokens),
        temperature=float(temperature),
        top_p=float(top_p),
        top_k=int(top_k),
        seed=int(seed) % (2**63),
        stop_ids=frozenset(stop_ids),
        stop_seqs=tuple(tuple(q) for q in stop_seqs),
        stop_strs=tuple(stop_strs),
    )


def _draw(
    logits: torch.Tensor, temperature: float, top_p: float, top_k: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row; return the tokens and their logprobs under the drawn-from law."""
    scaled = logits / temperature
    if 0 < top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs
        drop_sorted = before >= top_p
        drop_sorted[:, 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    logp = torch.log_softmax(scaled, dim=-1)
    probs = logp.exp()
    if probs.device.type != gen.device.type:
        probs = probs.to(gen.device)
    tokens = torch.multinomial(probs, 1, generator=gen).to(logp.device)
    return tokens.squeeze(-1), logp.gather(-1, tokens).squeeze(-1)


def _stopped(spec: SampleSpec, seq: list[int], tokenizer: Any) -> bool:
    if seq[-1] in spec.stop_ids:
        return True
    for stop in spec.stop_seqs:
        if len(seq) >= len(stop) and tuple(seq[-len(stop) :]) == stop:
            return True
    if spec.stop_strs:
        window = 4 * max(len(x) for x in spec.stop_strs) + 4
        text = tokenizer.decode(seq[-window:], skip_special_tokens=False)
        return any(x in text for x in spec.stop_strs)
    return False


def _tokenizer(base: BaseModelState) -> Any:
    if base.tokenizer is None:
        from mint_envkit.rendering.tokenizer import get_tokenizer

        base.tokenizer = get_tokenizer(base.loaded.tokenizer_dir)
    return base.tokenizer


def _prefill(
    model: Any, specs: Sequence[SampleSpec], rows: list[tuple[int, int]], dev: Any
) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, bool]:
    """Run the left-padded prompts once; return cache, last logits, mask, positions per row."""
    width = max(len(spec.prompt) for spec in specs)
    ids = torch.zeros((len(specs), width), dtype=torch.long, device=dev)
    mask = torch.zeros((len(specs), width), dtype=torch.long, device=dev)
    for r, spec in enumerate(specs):
        ids[r, width - len(spec.prompt) :] = torch.tensor(spec.prompt, device=dev)
        mask[r, width - len(spec.prompt) :] = 1
    padded = bool((mask == 0).any())
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(
        input_ids=ids,
        attention_mask=mask if padded else None,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
    )
    cache = cache_of(out)
    expand = torch.tensor([r for r, _ in rows], dtype=torch.long, device=dev)
    if len(rows) > 1 or len(specs) > 1:
        cache.batch_select_indices(expand)
    logits = out.logits[:, -1, :].float()[expand]
    mask = mask[expand]
    return cache, logits, mask, mask.sum(-1), padded


def plan_rows(specs: Sequence[SampleSpec], budget: int) -> list[list[tuple[int, int]]]:
    """Rows ``(request, sample)`` in sub-batches of at most ``budget`` tokens of KV cache.

    A row costs ``len(prompt) + max_tokens``; a sub-batch ``rows * its costliest row``.
    Requests are packed whole, in order (a request's draws then never depend on its
    neighbours); one that alone exceeds the budget is split into sub-batches of its own.

    Example::

        plan_rows([spec_a, spec_b], budget=4096)  # [[(0, 0), (0, 1), (1, 0)]]
    """
    plan: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    width = 0
    for r, spec in enumerate(specs):
        cost = len(spec.prompt) + spec.max_tokens
        rows = [(r, k) for k in range(spec.num_samples)]
        per = max(1, budget // cost)
        if len(rows) > per:
            if current:
                plan.append(current)
                current, width = [], 0
            plan.extend(rows[i : i + per] for i in range(0, len(rows), per))
            continue
        if current and max(width, cost) * (len(current) + len(rows)) > budget:
            plan.append(current)
            current, width = [], 0
        current += rows
        width = max(width, cost)
    if current:
        plan.append(current)
    return plan


def generate(
    base: BaseModelState, snap: Snapshot, specs: Sequence[SampleSpec], control: Control
) -> list[list[SampledSequence]]:
    """Sample every spec on ``snap``'s weights, in sub-batches under the token budget.

    Example::

        generate(state, snap, [spec_a, spec_b], Control(max_tokens_per_pass=4096))[1][0].tokens
    """
    tokenizer = _tokenizer(base) if any(s.stop_strs for s in specs) else None
    gens = [torch.Generator(device="cpu").manual_seed(spec.seed) for spec in specs]
    out = _Outputs(specs)
    try:
        with torch.no_grad(), use_sampler(base, snap) as model:
            for rows in plan_rows(specs, control.max_tokens_per_pass):
                control.check()
                _generate_rows(
                    model, base.loaded.device, specs, rows, gens, out, tokenizer, control
                )
    finally:
        if sum(len(s.prompt) + s.max_tokens * s.num_samples for s in specs) > RELEASE_AFTER_TOKENS:
            release_memory(base.loaded.device)
    return [
        [
            SampledSequence(tokens=t, logprobs=lps, stop_reason=reason)
            for t, lps, reason in zip(out.tokens[r], out.lps[r], out.reasons[r], strict=True)
        ]
        for r in range(len(specs))
    ]


class _Outputs:
    """What the sampled rows produced, by request and sample."""

    def __init__(self, specs: Sequence[SampleSpec]) -> None:
        self.tokens: list[list[list[int]]] = [[[] for _ in range(s.num_samples)] for s in specs]
        self.lps: list[list[list[float]]] = [[[] for _ in range(s.num_samples)] for s in specs]
        self.reasons: list[list[Literal["stop", "length"]]] = [
            ["length"] * s.num_samples for s in specs
        ]


def _generate_rows(
    model: Any,
    dev: Any,
    specs: Sequence[SampleSpec],
    rows: list[tuple[int, int]],
    gens: list[torch.Generator],
    out: _Outputs,
    tokenizer: Any,
    control: Control,
) -> None:
    """Sample one sub-batch of rows to the end, stepping them together with a KV cache."""
    requests = sorted({r for r, _ in rows})
    local = {r: i for i, r in enumerate(requests)}
    cache, logits, mask, next_pos, padded = _prefill(
        model, [specs[r] for r in requests], [(local[r], k) for r, k in rows], dev
    )
    active = list(range(len(rows)))
    while True:
        control.check()
        tok = torch.empty(len(active), dtype=torch.long, device=dev)
        lp = torch.empty(len(active), dtype=torch.float32, device=dev)
        by_request: dict[int, list[int]] = {}
        for position, row in enumerate(active):
            by_request.setdefault(rows[row][0], []).append(position)
        for r, positions_of_r in by_request.items():
            spec = specs[r]
            index = torch.tensor(positions_of_r, dtype=torch.long, device=dev)
            drawn, drawn_lp = _draw(
                logits[index], spec.temperature, spec.top_p, spec.top_k, gens[r]
            )
            tok[index] = drawn
            lp[index] = drawn_lp
        tok_list, lp_list = tok.tolist(), lp.tolist()
        keep: list[int] = []
        for position, row in enumerate(active):
            r, k = rows[row]
            seq = out.tokens[r][k]
            seq.append(tok_list[position])
            out.lps[r][k].append(lp_list[position])
            if _stopped(specs[r], seq, tokenizer):
                out.reasons[r][k] = "stop"
            elif len(seq) < specs[r].max_tokens:
                keep.append(position)
        if not keep:
            return
        if len(keep) < len(active):
            index = torch.tensor(keep, dtype=torch.long, device=dev)
            cache.batch_select_indices(index)
            tok, mask, next_pos = tok[index], mask[index], next_pos[index]
            active = [active[p] for p in keep]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
        step = model(
            input_ids=tok.unsqueeze(-1),
            attention_mask=mask if padded else None,
            position_ids=next_pos.unsqueeze(-1),
            use_cache=True,
            **with_cache(model, cache),
        )
        next_pos = next_pos + 1
        cache = cache_of(step)
        logits = step.logits[:, -1, :].float()


def sample_many(
    requests: Sequence[tuple[str, list[int], dict[str, Any]]],
    lookup: Callable[[str], tuple[BaseModelState, Snapshot]],
    control: Control,
) -> list[list[SampledSequence] | EngineError]:
    """Sample several requests, batched per sampler; a bad one gets its EngineError.

    ``lookup`` gives the base model and snapshot of a ``sampler_id`` (EngineError if
    unknown). A cancel raises (it is not one request's error).

    Example::

        sample_many([(sid, [1, 2], {"seed": 0})], engine_lookup, control)[0][0].tokens
    """
    results: list[list[SampledSequence] | EngineError | None] = [None] * len(requests)
    groups: dict[str, list[tuple[int, SampleSpec]]] = {}
    found: dict[str, tuple[BaseModelState, Snapshot]] = {}
    for index, (sampler_id, prompt, kwargs) in enumerate(requests):
        try:
            found[sampler_id] = found.get(sampler_id) or lookup(sampler_id)
            spec = sample_spec(found[sampler_id][0], prompt, **kwargs)
        except EngineError as err:
            results[index] = err
        except Exception as err:  # a bad keyword, for instance
            results[index] = EngineError(f"invalid sample request: {err}")
        else:
            groups.setdefault(sampler_id, []).append((index, spec))
    for sampler_id, items in groups.items():
        try:
            outs = generate(*found[sampler_id], [spec for _, spec in items], control)
        except EngineError as err:
            if err.category == "cancelled":
                raise
            outs = [err] * len(items)
        except Exception as err:
            outs = [EngineError(f"sampling failed: {err}", "server")] * len(items)
        for (index, _), out in zip(items, outs, strict=True):
            results[index] = out
    return results  # type: ignore[return-value]


def compute_logprobs(
    base: BaseModelState, snap: Snapshot, prompt: Any, control: Control
) -> list[float | None]:
    """Per-token logprobs of ``prompt`` under the snapshot's weights; the first is ``None``.

    A prompt longer than the token budget runs in chunks through the KV cache.

    Example::

        compute_logprobs(state, snap, [2044, 10, 11], control)  # [None, -7.6, -7.5]
    """
    tokens = token_ids(prompt, base.loaded.vocab_size)
    if len(tokens) == 1:
        return [None]
    budget = control.max_tokens_per_pass
    with torch.no_grad(), use_sampler(base, snap) as model:
        if len(tokens) - 1 <= budget:
            return [None, *logprobs_batch(model, [tokens[:-1]], [tokens[1:]])[0].cpu().tolist()]
        dev = base.loaded.device
        out: list[float | None] = [None]
        cache = None
        try:
            for start in range(0, len(tokens) - 1, budget):
                control.check()
                ids = torch.tensor([tokens[start : start + budget]], device=dev)
                end = start + ids.shape[1]
                kwargs = {} if cache is None else with_cache(model, cache)
                step = model(
                    input_ids=ids,
                    position_ids=torch.arange(start, end, device=dev).unsqueeze(0),
                    use_cache=True,
                    **kwargs,
                )
                cache = cache_of(step)
                logits = step.logits[0].float()
                del step
                target = torch.tensor(tokens[start + 1 : end + 1], device=dev)
                logits = logits[: len(target)]
                picked = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
                out.extend((picked - torch.logsumexp(logits, dim=-1)).cpu().tolist())
        finally:
            del cache
            release_memory(dev)
        return out
