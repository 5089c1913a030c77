"""Sampling: snapshots, request checks, batched generation with a KV cache, prompt logprobs.

Requests on one sampler share one padded batch, run by the decode loop
(:mod:`.decode`): each prompt runs once, its KV cache is repeated for its rows,
all rows step together and a row that stops leaves the batch (on CPU at once, on
CUDA when the batch can halve). Each request draws from its own seeded generator,
so its tokens do not depend on what else is in the batch. A sampled logprob is
that of the distribution the token was drawn from (temperature-scaled,
renormalised after ``top_k`` / ``top_p`` truncation), computed in fp32.

The protocol checks ``temperature`` (> 0), ``top_p`` (in (0, 1]) and ``top_k``
(-1 or >= 1); they are not checked again here.

Example::

    from mint_envkit.local.engine import sampling
    from mint_envkit.local.engine.budget import Control

    control = Control(max_tokens_per_pass=4096)
    spec = sampling.sample_spec(state, [2044, 10], num_samples=2, max_tokens=4, seed=0)
    [seqs] = sampling.generate(state, snap, [spec], control)
    assert [len(s.tokens) for s in seqs] == [4, 4]  # two samples of four tokens
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import torch

from mint_envkit.local.bounds import ENGINE_DEFAULT_MAX_TOKENS

from .adapters import use_sampler
from .budget import RELEASE_AFTER_TOKENS, Control, release_memory
from .decode import decode, draw, exp_noise, policy_for
from .inputs import int_list, is_int, token_ids
from .kvcache import next_token_logprobs
from .lpcache import Followup
from .numerics import all_finite, causal_lm
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


def snapshot_of(trainer: Trainer) -> Snapshot:
    """A frozen copy of a training client's adapter tensors (later training never changes it).

    Example::

        snap = snapshot_of(trainer)
        assert snap.spec == trainer.spec and snap.source == trainer.model_id
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
    max_tokens: Any = ENGINE_DEFAULT_MAX_TOKENS,
    temperature: Any = 1.0,
    top_p: Any = 1.0,
    top_k: Any = -1,
    seed: Any = None,
    stop: Any = None,
) -> SampleSpec:
    """Check one request's arguments against the model (EngineError naming the bad one).

    Example::

        assert sample_spec(state, [2044, 10], max_tokens=8, stop=["\\n"]).stop_strs == ("\\n",)
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


def _tokenizer(base: BaseModelState) -> Any:
    if base.tokenizer is None:
        from mint_envkit.rendering.tokenizer import get_tokenizer

        base.tokenizer = get_tokenizer(base.loaded.tokenizer_dir)
    return base.tokenizer


def plan_rows(specs: Sequence[SampleSpec], budget: int) -> list[list[tuple[int, int]]]:
    """Rows ``(request, sample)`` in sub-batches of at most ``budget`` tokens of KV cache.

    A row costs ``len(prompt) + max_tokens``; a sub-batch ``rows * its costliest row``.
    Requests are packed whole, in order (a request's draws then never depend on its
    neighbours); one that alone exceeds the budget is split into sub-batches of its own.

    Example::

        spec_a = sample_spec(state, [2044, 10], num_samples=2, max_tokens=4)  # 6 tokens a row
        spec_b = sample_spec(state, [2044, 11], max_tokens=4)
        assert plan_rows([spec_a, spec_b], budget=4096) == [[(0, 0), (0, 1), (1, 0)]]
        assert plan_rows([spec_a, spec_b], budget=12) == [[(0, 0), (0, 1)], [(1, 0)]]
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


def _sub_specs(specs: Sequence[SampleSpec], rows: list[tuple[int, int]]) -> list[SampleSpec]:
    """One spec per request in ``rows``; a request split over sub-batches gets, per part,
    its sample count and a seed derived from the part's first sample (deterministic)."""
    parts: dict[int, list[int]] = {}
    for r, k in rows:
        parts.setdefault(r, []).append(k)
    out = []
    for r, ks in parts.items():
        spec = specs[r]
        if len(ks) == spec.num_samples:
            out.append(spec)
        else:
            seed = (spec.seed * 1_000_003 + ks[0] + 1) % (2**63)
            out.append(attrs.evolve(spec, num_samples=len(ks), seed=seed))
    return out


def _length_groups(specs: Sequence[SampleSpec], by_length: bool) -> list[list[int]]:
    """Request indices in batches that decode together: one per prompt length if ``by_length``.

    Left padding moves a prompt's keys to other SIMD lanes of the CPU attention
    reduction, which rounds differently (~1e-7): requests of one length share a batch
    with no padding, so a request's logprobs do not depend on its neighbours.

    Example::

        spec_len5, spec_len7 = sample_spec(state, [2044] * 5), sample_spec(state, [2044] * 7)
        assert _length_groups([spec_len5, spec_len7, spec_len5], True) == [[0, 2], [1]]
    """
    if not by_length:
        return [list(range(len(specs)))]
    groups: dict[int, list[int]] = {}
    for r, spec in enumerate(specs):
        groups.setdefault(len(spec.prompt), []).append(r)
    return list(groups.values())


def generate(
    base: BaseModelState, snap: Snapshot, specs: Sequence[SampleSpec], control: Control
) -> list[list[SampledSequence]]:
    """Sample every spec on ``snap``'s weights, in sub-batches under the token budget.

    Each sub-batch runs :func:`.decode.decode` (device-side draws, a static KV cache);
    ``control`` is checked at every decode step, so a cancelled call stops within one.

    Example::

        spec_a = sample_spec(state, [2044, 10], num_samples=2, max_tokens=4, seed=0)
        spec_b = sample_spec(state, [2044, 11, 12], max_tokens=3, seed=1)
        out = generate(state, snap, [spec_a, spec_b], Control(max_tokens_per_pass=4096))
        assert [len(seqs) for seqs in out] == [2, 1] and len(out[1][0].tokens) == 3
    """
    tokenizer = _tokenizer(base) if any(s.stop_strs for s in specs) else None
    policy = policy_for(base.loaded.device)
    out: list[list[SampledSequence] | None] = [None] * len(specs)
    for r, spec in enumerate(specs):  # one-token continuations of sequences just sampled
        out[r] = continue_sampled(base, snap, spec, control.max_tokens_per_pass)
    left = [r for r, seqs in enumerate(out) if seqs is None]
    try:
        with torch.no_grad(), use_sampler(base, snap) as model:
            for group in _length_groups([specs[r] for r in left], control.batch_invariant):
                part = [specs[left[r]] for r in group]
                for rows in plan_rows(part, control.max_tokens_per_pass):
                    control.check()
                    requests = list(dict.fromkeys(left[group[r]] for r, _ in rows))
                    sub = _sub_specs(part, rows)
                    done = _decode_and_keep(base, snap, model, sub, policy, tokenizer, control)
                    for r, seqs in zip(requests, done, strict=True):
                        out[r] = [*(out[r] or []), *seqs]
    finally:
        if sum(len(s.prompt) + s.max_tokens * s.num_samples for s in specs) > RELEASE_AFTER_TOKENS:
            release_memory(base.loaded.device)
    result = [seqs or [] for seqs in out]
    if not all(all_finite(s.logprobs) for seqs in result for s in seqs):
        raise non_finite(snap, "sampled logprobs")
    return result


def non_finite(snap: Snapshot, what: str) -> EngineError:
    """The error for NaN or infinite results of a snapshot (they are never returned).

    Example::

        assert "are not finite" in non_finite(snap, "sampled logprobs").message
    """
    return EngineError(
        f"the {what} of weights {snap.source!r} are not finite (NaN or infinity): these "
        "weights overflow the model (a checkpoint trained with too high a learning rate, or "
        "interpolated with huge coefficients); use other weights"
    )


def _decode_and_keep(
    base: BaseModelState,
    snap: Snapshot,
    model: Any,
    sub: list[SampleSpec],
    policy: Any,
    tokenizer: Any,
    control: Control,
) -> list[list[SampledSequence]]:
    """Decode one sub-batch; keep what ``compute_logprobs`` of its results will need.

    One-token samples are how the SDK asks for a prompt's logprobs: their prefill
    scores the prompt too. Longer samples keep each sequence's T=1 logprobs and next
    logits (:class:`.lpcache.FollowupCache`) when they fit the cache.
    """
    scored: dict[int, list[float]] | None = {} if any(s.max_tokens == 1 for s in sub) else None
    rows = sum(s.num_samples for s in sub)
    longer = any(s.max_tokens > 1 for s in sub)
    fits = rows * base.loaded.vocab_size <= base.followups.max_floats
    follow: dict[tuple[int, int], tuple[list[float], torch.Tensor]] | None = (
        {} if longer and fits else None
    )
    hidden: dict[int, torch.Tensor] | None = {} if follow is not None else None
    done = decode(model, sub, policy, tokenizer, control.check, scored, follow, hidden)
    for i, lps in (scored or {}).items():
        if sub[i].max_tokens == 1:
            base.prompt_logprobs.put(snap.key, sub[i].prompt, lps)
    for (i, k), (plain, logits) in (follow or {}).items():
        seq = done[i][k]
        followup = Followup(len(sub[i].prompt), plain, logits)
        base.followups.put(snap.key, [*sub[i].prompt, *seq.tokens], followup)
    for i, states in (hidden or {}).items():
        base.prompt_hidden.put(snap.key, sub[i].prompt, states)
    return done


def continue_sampled(
    base: BaseModelState, snap: Snapshot, spec: SampleSpec, budget: int
) -> list[SampledSequence] | None:
    """A one-token sample of a sequence this snapshot just sampled, from its kept next logits.

    Draws as the decode loop's first step does (the request's seed, the exponential race
    over the same logits to ~1e-6); None when there are none kept, or the request asks
    for more than one token, for stop strings or sequences, or more than one pass.

    Example::

        assert continue_sampled(state, snap, spec, 4096) is None  # spec asks for 4 tokens
        one = sample_spec(state, [2044, 10] + seqs[0].tokens, max_tokens=1, seed=0)
        [again] = continue_sampled(state, snap, one, 4096)  # from the kept logits, no pass
        assert len(again.tokens) == 1
    """
    if spec.max_tokens != 1 or spec.stop_seqs or spec.stop_strs:
        return None
    if spec.num_samples * (len(spec.prompt) + 1) > budget:
        return None  # the decode loop would cut it into parts with seeds of their own
    kept = base.followups.get(snap.key, spec.prompt)
    if kept is None:
        return None
    logits = kept.next_logits
    gen = torch.Generator(device=logits.device).manual_seed(spec.seed)
    noise = exp_noise(spec.num_samples, logits.shape[-1], gen)
    tokens, lps = draw(logits.expand(spec.num_samples, -1), spec, noise)
    return [
        SampledSequence(
            tokens=[tok], logprobs=[lp], stop_reason="stop" if tok in spec.stop_ids else "length"
        )
        for tok, lp in zip(tokens.tolist(), lps.tolist(), strict=True)
    ]


def sample_many(
    requests: Sequence[tuple[str, list[int], dict[str, Any]]],
    lookup: Callable[[str], tuple[BaseModelState, Snapshot]],
    control: Control,
) -> list[list[SampledSequence] | EngineError]:
    """Sample several requests, batched per sampler; a bad one gets its EngineError.

    ``lookup`` gives the base model and snapshot of a ``sampler_id`` (EngineError if
    unknown). A cancel raises (it is not one request's error).

    Example::

        out = sample_many([(sampler_id, [1, 2], {"seed": 0}), ("nope", [1, 2], {})],
                          engine.registry.sampler, control)
        assert len(out[0][0].tokens) == 16 and isinstance(out[1], EngineError)
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


def _prompt_logprobs(base: BaseModelState, snap: Snapshot, prompt: list[int]) -> list[float]:
    """The logprobs of ``prompt[1:]``: from its sampling prefill's kept hidden states when
    there are some (only the fp32 head runs), else from a pass over the prompt."""
    hidden = base.prompt_hidden.take(snap.key, prompt)
    with torch.no_grad(), use_sampler(base, snap) as model:
        if hidden is None:
            return logprobs_batch(model, [prompt[:-1]], [prompt[1:]])[0].cpu().tolist()
        head = causal_lm(model).get_output_embeddings()
        targets = torch.tensor([prompt[1:]], device=hidden.device)
        return next_token_logprobs(head, hidden[None], targets)[0].cpu().tolist()


def compute_logprobs(
    base: BaseModelState, snap: Snapshot, prompt: Any, control: Control
) -> list[float | None]:
    """Per-token logprobs of ``prompt`` under the snapshot's weights; the first is ``None``.

    A prompt longer than the token budget runs in chunks through the KV cache. When a
    one-token sample of exactly these tokens on this snapshot just ran, its prefill
    already scored them (:mod:`.lpcache`): no model pass (the SDK's ``compute_logprobs``).
    When these tokens are a sequence this snapshot just sampled, the reply's logprobs are
    the ones the sampler computed (T=1, untruncated) and only the prompt runs (once per
    prompt). Either way the values agree with a fresh pass to ~1e-6 in fp32.

    Raises EngineError(user) when the weights give NaN or infinite logprobs.

    Example::

        compute_logprobs(state, snap, [2044, 10, 11], control)  # [None, -7.6, -7.9]
        assert compute_logprobs(state, snap, [2044, 10, 11], control)[0] is None
    """
    out = _logprobs_of(base, snap, token_ids(prompt, base.loaded.vocab_size), control)
    if not all_finite(out):
        raise non_finite(snap, "prompt logprobs")
    return out


def _logprobs_of(
    base: BaseModelState, snap: Snapshot, tokens: list[int], control: Control
) -> list[float | None]:
    if len(tokens) == 1:
        return [None]
    kept = base.prompt_logprobs.take(snap.key, tokens)
    if kept is not None:  # the one-token sample of these tokens just scored them
        return kept
    budget = control.max_tokens_per_pass
    followup = base.followups.take(snap.key, tokens)
    if followup is not None and 1 < followup.reply_start <= budget + 1:
        prompt = tokens[: followup.reply_start]
        scored = base.prompt_logprobs.get(snap.key, prompt)
        if scored is None:  # once per prompt: the group's other samples share it
            scored = _prompt_logprobs(base, snap, prompt)
            base.prompt_logprobs.put(snap.key, prompt, scored)
        return [None, *scored, *followup.reply_logprobs]
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
                step = model(
                    input_ids=ids,
                    position_ids=torch.arange(start, end, device=dev).unsqueeze(0),
                    cache=cache,
                    use_cache=True,
                )
                cache = step.cache
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
