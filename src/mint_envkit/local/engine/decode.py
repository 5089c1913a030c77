"""The device-agnostic decode loop: draw, record and stop on the device, sync every N steps.

Every row's tokens, logprobs, lengths and finished flags live in device tensors; stop
token ids and ``max_tokens`` are checked there too. The host reads the finished flags
only every ``sync_every`` steps (and at the end), where it also checks stop strings and
multi-token stop sequences (they need the token history; a row that matched one is cut
at the match, so a late check never changes a result) and drops finished rows from the
batch. The same code runs on CPU and CUDA; only the :class:`DecodePolicy` differs: CPU
syncs every step (finished rows leave at once, as before), CUDA every 16 steps, keeps
finished rows in the batch until it can halve, and may compile the step (``MINT_ENVKIT_COMPILE=1``, off by default).

Draws use the exponential race (``argmax(p / E)``, ``E ~ Exp(1)``, :func:`exp_noise`),
which samples from ``p`` exactly. Each request draws its noise for all its ``num_samples`` rows every step
from its own generator on the device, so a sample's tokens depend on its request (seed,
prompt, options) only, not on the rest of the batch or on when its siblings stop. The
same seed gives different tokens on CPU and on CUDA (different generators).

Example::

    from mint_envkit.local.engine.decode import decode, policy_for
    from mint_envkit.local.engine.sampling import sample_spec

    model = state.loaded.model  # the tiny base model the package's example loaded
    spec = sample_spec(state, [2044, 10, 11], num_samples=2, max_tokens=4, seed=0)
    seqs = decode(model, [spec], policy_for(state.loaded.device), None)
    assert [len(s.tokens) for s in seqs[0]] == [4, 4]  # one request, two samples
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .kvcache import backend_for
from .numerics import token_logprobs
from .records import SampledSequence, SampleSpec

# Measured (torch 2.13, MKL, 1 thread, a row of F.linear alone vs inside 2..300 rows):
# with MKL_CBWR=AVX2,STRICT on an AVX2 or AVX-512 CPU every row count rounds alike; MKL's
# SSE4.2 kernels round 1-7 rows differently from 8 or more (its default AVX-512 ones 1-15
# rows, its default AVX2 ones 1-3 and again from 56). 8 rows cover every instruction set
# under the pin. docs/architecture.md, "Numerics in the tests".
CPU_MIN_ROWS = 8


@dataclass(frozen=True)
class DecodePolicy:
    """How often the host looks at the decode loop, and whether the step is compiled.

    Example::

        DecodePolicy(sync_every=1, compile_step=False, static_shapes=False, min_rows=8)
        # (policy_for(torch.device("cpu")) when MINT_ENVKIT_SYNC_EVERY is unset)

    ``min_rows``: the model always runs at least this many rows (copies of the first
    one fill up; their results are dropped). CPU matrix products round a batch of a few
    rows differently from a larger one (another kernel), so without it a request's
    logprobs would depend on how many other requests share its batch.
    """

    sync_every: int
    compile_step: bool
    static_shapes: bool
    min_rows: int = 1


def policy_for(device: torch.device) -> DecodePolicy:
    """The policy of ``device``: CPU syncs every step; CUDA every 16 (env overrides).

    ``MINT_ENVKIT_SYNC_EVERY`` sets the interval, ``MINT_ENVKIT_COMPILE=1`` compiles the
    step with CUDA graphs (CUDA only; ignored on CPU).

    Example::

        policy_for(torch.device("cpu")).sync_every  # 1 (unless MINT_ENVKIT_SYNC_EVERY is set)
    """
    cuda = device.type == "cuda"
    every = int(os.environ.get("MINT_ENVKIT_SYNC_EVERY", "16" if cuda else "1"))
    compile_step = cuda and os.environ.get("MINT_ENVKIT_COMPILE", "0") == "1"
    return DecodePolicy(
        sync_every=max(1, every),
        compile_step=compile_step,
        static_shapes=cuda,
        min_rows=1 if cuda else CPU_MIN_ROWS,
    )


def _padded(index: torch.Tensor, rows: int) -> torch.Tensor:
    """``index`` extended to ``rows`` entries with copies of its first one."""
    short = rows - index.shape[0]
    return index if short <= 0 else torch.cat([index, index[:1].expand(short)])


def exp_noise(rows: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    """``(rows, vocab)`` float32 ``Exp(1)`` draws from ``gen``, on its device.

    On CPU as ``-log(U)`` of float64 uniforms (``U = 0``, probability 2^-53, gives an
    infinite draw: that token cannot win): 2.7x faster than ``exponential_``, whose
    one-at-a-time loop was 12% of SmolLM2's decode time (issue 21). CUDA keeps
    ``exponential_``. Draw for draw, these are other numbers than ``exponential_``'s.

    Example::

        noise = exp_noise(2, 2048, torch.Generator().manual_seed(0))
        assert noise.shape == (2, 2048) and bool((noise > 0).all())
    """
    dev = gen.device
    if dev.type == "cuda":
        return torch.empty((rows, vocab), device=dev).exponential_(generator=gen)
    uniform = torch.empty((rows, vocab), dtype=torch.float64, device=dev).uniform_(generator=gen)
    return uniform.log_().neg_().float()


def draw(
    logits: torch.Tensor, spec: SampleSpec, noise: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row and its logprob under the drawn-from law (temperature, truncation).

    ``noise`` holds one ``Exp(1)`` draw per row and vocabulary entry.

    Example::

        logits = torch.randn(2, 2048)  # two rows
        tokens, logprobs = draw(logits, spec, torch.empty_like(logits).exponential_())
        assert tokens.shape == logprobs.shape == (2,) and bool((logprobs <= 0).all())
    """
    scaled = logits / spec.temperature
    if 0 < spec.top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, spec.top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if spec.top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs
        drop_sorted = before >= spec.top_p
        drop_sorted[:, 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    # argmax(log p - log E) = argmax(scaled - log E): the row's normaliser is one shift;
    # only the drawn token's logprob is computed (no full log_softmax per step)
    tokens = (scaled - noise.clamp_min(1e-30).log()).argmax(dim=-1)
    return tokens, token_logprobs(scaled, tokens)


def _is_plain(spec: SampleSpec) -> bool:
    """Whether ``spec`` draws from the model's own distribution (T=1, no truncation)."""
    return spec.temperature == 1.0 and spec.top_p >= 1.0 and spec.top_k <= 0


def _host_stop(spec: SampleSpec, seq: list[int], start: int, tokenizer: Any) -> int | None:
    """The first length >= ``start`` + 1 at which ``seq`` ends in a stop sequence or string."""
    window = 4 * max((len(x) for x in spec.stop_strs), default=0) + 4
    for n in range(start + 1, len(seq) + 1):
        head = seq[:n]
        if any(n >= len(s) and tuple(head[-len(s) :]) == s for s in spec.stop_seqs):
            return n
        if spec.stop_strs:
            text = tokenizer.decode(head[-window:], skip_special_tokens=False)
            if any(x in text for x in spec.stop_strs):
                return n
    return None


class _Rows:
    """The device-side state of every row, indexed by row (one row per sample)."""

    def __init__(self, specs: Sequence[SampleSpec], steps: int, dev: torch.device) -> None:
        self.rows = [(r, k) for r, spec in enumerate(specs) for k in range(spec.num_samples)]
        n = len(self.rows)
        self.tokens = torch.zeros((n, steps), dtype=torch.long, device=dev)
        self.logprobs = torch.zeros((n, steps), dtype=torch.float32, device=dev)
        self.length = torch.zeros(n, dtype=torch.long, device=dev)
        self.stopped = torch.zeros(n, dtype=torch.bool, device=dev)
        self.finished = torch.zeros(n, dtype=torch.bool, device=dev)
        self.limit = torch.tensor([specs[r].max_tokens for r, _ in self.rows], device=dev)
        width = max(len(s.stop_ids) for s in specs) or 1
        table = [sorted(specs[r].stop_ids) + [-1] * width for r, _ in self.rows]
        self.stop_ids = torch.tensor([t[:width] for t in table], dtype=torch.long, device=dev)
        self.checked = [0] * n  # host: tokens already checked for host-side stops
        self.plain: torch.Tensor | None = None  # T=1 untruncated logprob of each token
        self.after: torch.Tensor | None = None  # logits after each row's last token
        self.followed = torch.zeros(n, dtype=torch.bool, device=dev)

    def follow(self, specs: Sequence[SampleSpec], vocab: int) -> None:
        """Also keep each row's T=1 logprobs and the logits after its last token."""
        n, steps = self.tokens.shape
        dev = self.tokens.device
        self.plain = torch.zeros((n, steps), dtype=torch.float32, device=dev)
        self.after = torch.zeros((n, vocab), dtype=torch.float32, device=dev)
        # a host-side stop cuts a row behind the decode step: no logits after its cut
        self.followable = torch.tensor(
            [not (specs[r].stop_seqs or specs[r].stop_strs) for r, _ in self.rows], device=dev
        )

    def capture(self, live: torch.Tensor, t: int, logits: torch.Tensor) -> None:
        """Keep ``logits`` (of the live rows, after token ``t``) of rows whose last token is ``t``."""
        if self.after is None:
            return
        just = self.finished[live] & (self.length[live] == t + 1) & self.followable[live]
        kept = torch.where(just[:, None], logits.float(), self.after.index_select(0, live))
        self.after.index_copy_(0, live, kept)
        self.followed.index_copy_(0, live, self.followed[live] | just)

    def record(self, live: torch.Tensor, t: int, tok: torch.Tensor, lp: torch.Tensor) -> None:
        self.tokens[live, t] = tok
        self.logprobs[live, t] = lp
        hit = (tok[:, None] == self.stop_ids[live]).any(-1)
        done = ~self.finished[live] & (hit | (self.limit[live] <= t + 1))
        self.length[live] = torch.where(done, t + 1, self.length[live])
        self.stopped[live] |= done & hit
        self.finished[live] |= done

    def host_stops(self, specs: Sequence[SampleSpec], tokenizer: Any, t: int) -> None:
        """Check stop strings / sequences of unfinished rows up to step ``t`` (host side)."""
        want = [i for i, (r, _) in enumerate(self.rows) if specs[r].stop_seqs or specs[r].stop_strs]
        if not want:
            return
        index = torch.tensor(want, device=self.tokens.device)
        toks = self.tokens[index, : t + 1].tolist()
        lengths = self.length[index].tolist()
        finished = self.finished[index].tolist()
        for i, seq, n, done in zip(want, toks, lengths, finished, strict=True):
            upto = n if done else t + 1
            cut = _host_stop(specs[self.rows[i][0]], seq[:upto], self.checked[i], tokenizer)
            self.checked[i] = upto
            if cut is not None:
                self.length[i], self.stopped[i], self.finished[i] = cut, True, True

    def followups(self) -> dict[tuple[int, int], tuple[list[float], torch.Tensor]]:
        """Per row ``(request, sample)`` that has them: its T=1 logprobs and next logits."""
        if self.plain is None or self.after is None:
            return {}
        out = {}
        plain = self.plain.tolist()
        for i, (n, ok) in enumerate(zip(self.length.tolist(), self.followed.tolist(), strict=True)):
            if ok:
                out[self.rows[i]] = (plain[i][:n], self.after[i].clone())
        return out

    def results(self, specs: Sequence[SampleSpec]) -> list[list[SampledSequence]]:
        out: list[list[SampledSequence]] = [[] for _ in specs]
        toks, lps = self.tokens.tolist(), self.logprobs.tolist()
        for i, (n, stop) in enumerate(
            zip(self.length.tolist(), self.stopped.tolist(), strict=True)
        ):
            reason = "stop" if stop else "length"
            seq = SampledSequence(tokens=toks[i][:n], logprobs=lps[i][:n], stop_reason=reason)
            out[self.rows[i][0]].append(seq)
        return out


def _prompts(specs: Sequence[SampleSpec], dev: torch.device) -> tuple[torch.Tensor, ...]:
    """Left-padded prompt ids, their mask and positions."""
    width = max(len(spec.prompt) for spec in specs)
    ids = torch.zeros((len(specs), width), dtype=torch.long)
    mask = torch.zeros((len(specs), width), dtype=torch.long)
    for r, spec in enumerate(specs):
        ids[r, width - len(spec.prompt) :] = torch.tensor(spec.prompt)
        mask[r, width - len(spec.prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(dev), mask.to(dev), positions.to(dev)


class _Layout:
    """Index tensors of one batch composition (rebuilt only when it changes: a host-to-device
    copy would sync): the batch's rows, per request its positions and sample numbers, and
    the positions of each set of equal draw options (one draw per set, not per request)."""

    def __init__(self, specs: Sequence[SampleSpec], state: _Rows, live_rows: list[int]) -> None:
        dev = state.tokens.device
        requests: dict[int, tuple[list[int], list[int]]] = {}
        options: dict[tuple[float, float, int], list[int]] = {}
        for position, row in enumerate(live_rows):
            r, k = state.rows[row]
            requests.setdefault(r, ([], []))
            requests[r][0].append(position)
            requests[r][1].append(k)
            spec = specs[r]
            options.setdefault((spec.temperature, spec.top_p, spec.top_k), []).append(position)
        self.live = torch.tensor(live_rows, device=dev)
        self.requests = [
            (r, torch.tensor(at, device=dev), torch.tensor(ks, device=dev))
            for r, (at, ks) in requests.items()
        ]
        first = {opts: specs[state.rows[live_rows[at[0]]][0]] for opts, at in options.items()}
        whole = len(options) == 1
        self.draws = [
            (first[opts], None if whole else torch.tensor(at, device=dev))
            for opts, at in options.items()
        ]

    def plain(self, logits: torch.Tensor, tok: torch.Tensor, lp: torch.Tensor) -> torch.Tensor:
        """The T=1 untruncated logprob of each drawn token (``lp`` when that is what was drawn)."""
        if all(_is_plain(spec) for spec, _ in self.draws):
            return lp
        return token_logprobs(logits, tok)

    def sample(
        self, logits: torch.Tensor, specs: Sequence[SampleSpec], gens: list[torch.Generator]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per request its noise (own generator, all its samples), then one draw per option set."""
        noise = torch.empty_like(logits)
        for r, at, samples in self.requests:
            fresh = exp_noise(specs[r].num_samples, logits.shape[-1], gens[r])
            noise.index_copy_(0, at, fresh.index_select(0, samples))
        if self.draws[0][1] is None:
            return draw(logits, self.draws[0][0], noise)
        tok = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
        lp = torch.empty(logits.shape[0], dtype=logits.dtype, device=logits.device)
        for spec, at in self.draws:
            drawn, drawn_lp = draw(logits.index_select(0, at), spec, noise.index_select(0, at))
            tok.index_copy_(0, at, drawn)
            lp.index_copy_(0, at, drawn_lp)
        return tok, lp


def decode(
    model: Any,
    specs: Sequence[SampleSpec],
    policy: DecodePolicy,
    tokenizer: Any,
    check: Callable[[], None] | None = None,
    prompt_logprobs: dict[int, list[float]] | None = None,
    followups: dict[tuple[int, int], tuple[list[float], torch.Tensor]] | None = None,
    prompt_hidden: dict[int, torch.Tensor] | None = None,
) -> list[list[SampledSequence]]:
    """Sample every spec in one batch on ``model``; one list of sequences per spec.

    ``tokenizer`` is needed only when a spec has stop strings; ``check`` (the engine's
    cancellation check) runs before every decode step and may raise. Given a dict,
    ``prompt_logprobs`` receives, per spec index, the logprobs of its prompt tokens
    after the first, from the prefill pass (when the backend computes them). Given a
    dict, ``followups`` receives per row ``(spec index, sample)`` its tokens' T=1
    untruncated logprobs and the fp32 logits after its last token (a row that stops at
    step t stays in the batch for that one more step; at the end, one more step runs).
    Given a dict, ``prompt_hidden`` receives per spec index the prefill's final normed
    hidden states of its prompt positions but the last (when the backend keeps them).

    Example::

        decode(model, [spec], policy_for(torch.device("cpu")), None)[0][0].tokens  # 4 tokens
    """
    dev = next(model.parameters()).device
    steps = max(spec.max_tokens for spec in specs)
    state = _Rows(specs, steps, dev)
    gens = [torch.Generator(device=dev).manual_seed(spec.seed) for spec in specs]
    backend = backend_for(
        model, static_shapes=policy.static_shapes, compile_step=policy.compile_step
    )
    ids, mask, positions = _prompts(specs, dev)
    fill = policy.min_rows
    live_rows = list(range(len(state.rows)))
    with torch.no_grad():
        width = ids.shape[1]
        if len(specs) < fill:
            rows = _padded(torch.arange(len(specs), device=dev), fill)
            ids, mask, positions = ids[rows], mask[rows], positions[rows]
        want, keep = prompt_logprobs is not None, prompt_hidden is not None
        logits = backend.prefill(
            ids, mask, positions, length=width + steps, prompt_logprobs=want, prompt_hidden=keep
        )
        if prompt_logprobs is not None and backend.prompt_logprobs is not None:
            table = backend.prompt_logprobs.tolist()
            for r, spec in enumerate(specs):
                n = len(spec.prompt) - 1
                prompt_logprobs[r] = table[r][len(table[r]) - n :] if n else []
        if prompt_hidden is not None and backend.prompt_hidden is not None:
            for r, spec in enumerate(specs):  # left padding: a row's own states are its last
                if len(spec.prompt) > 1:
                    start = width - len(spec.prompt)
                    prompt_hidden[r] = backend.prompt_hidden[r, start:].clone()
            backend.prompt_hidden = None
        rows_of = [r for r, _ in state.rows]
        prompt_of = torch.tensor(rows_of, device=dev)
        if rows_of != list(range(len(specs))):  # else the cache rows are already the batch's
            backend.expand(_padded(prompt_of, fill))  # (a copy of the cache: one sample each)
        logits, next_pos = logits[prompt_of], mask.sum(-1)[prompt_of]
        layout = _Layout(specs, state, live_rows)
        if followups is not None:
            state.follow(specs, logits.shape[-1])
        t = 0
        for t in range(steps):
            if check is not None:
                check()
            tok, lp = layout.sample(logits, specs, gens)
            state.record(layout.live, t, tok, lp)
            if state.plain is not None:
                state.plain[layout.live, t] = layout.plain(logits, tok, lp)
            if t + 1 == steps:
                break
            if (t + 1) % policy.sync_every == 0:
                state.host_stops(specs, tokenizer, t)
                done = state.finished[layout.live].tolist()
                if state.after is not None:  # a row that just stopped gets one more step
                    ended = state.length[layout.live].tolist()
                    done = [d and n != t + 1 for d, n in zip(done, ended, strict=True)]
                keep = [p for p, d in enumerate(done) if not d]
                if not keep:
                    break
                # static shapes (CUDA graphs) shrink the batch only when it halves
                shrink = len(live_rows) // 2 if policy.static_shapes else len(live_rows) - 1
                if len(keep) <= shrink:
                    index = torch.tensor(keep, device=dev)
                    backend.select(_padded(index, fill))
                    tok, next_pos = tok[index], next_pos[index]
                    live_rows = [live_rows[p] for p in keep]
                    layout = _Layout(specs, state, live_rows)
            logits = _step(backend, tok, next_pos, width + t, fill)
            state.capture(layout.live, t, logits)
            next_pos = next_pos + 1
        if state.after is not None and t + 1 == steps:  # the logits after the last tokens
            state.capture(layout.live, t, _step(backend, tok, next_pos, width + t, fill))
    state.host_stops(specs, tokenizer, steps - 1)
    if followups is not None:
        followups.update(state.followups())
    return state.results(specs)


def _step(backend: Any, tok: torch.Tensor, pos: torch.Tensor, column: int, fill: int):
    """One decode step of the live rows (padded to ``fill`` rows with copies of the first)."""
    live = tok.shape[0]
    if live < fill:
        pad = _padded(torch.arange(live, device=tok.device), fill)
        return backend.step(tok[pad], pos[pad], column=column)[:live]
    return backend.step(tok, pos, column=column)
