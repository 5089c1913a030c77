"""Big sample requests cut into small engine jobs, so small requests are not starved.

A sample request is cut two ways (see :class:`~mint_envkit.local.http.limits.Limits`):

- **by rows**: sub-requests of a few samples (``sample_chunk_tokens`` of KV cache each);
- **by decode steps** (off by default: ``sample_segment_tokens`` 0): a sample longer
  than ``sample_segment_tokens`` is drawn in segments; each next segment continues
  from the prompt plus what was drawn so far (the same distribution; logprobs are
  those of the drawn tokens), with its own derived seed. Requests with stop
  *strings* are not segmented (a string could span two segments).

Each piece is one :class:`~mint_envkit.local.http.worker.SampleJob`; a piece's
``rank`` grows with its place in the request, and the batcher runs the lowest
ranks first, so a request that arrives meanwhile waits for one piece, not for
the whole job.

Seeds: a request cut by rows only draws exactly what the engine draws for it in one
call (when ``sample_chunk_tokens`` equals the engine's ``max_tokens_per_pass``, as by
default): the engine cuts an over-budget request into the same sub-batches and seeds
each part as the chunk here is seeded (``split_seed(seed, first sample + 1)``), and
each part draws its noise from its own generator. Segments cannot keep that promise
(a continuation re-reads the prompt and draws with a seed of its own), so a seeded
sample drawn in segments differs from the unsegmented draw: that is why segmenting is
off unless asked for (``mint-envkit serve --sample-segment-tokens N``).

Example::

    import tempfile
    from mint_envkit.local.engine.core import Engine
    from mint_envkit.local.http.worker import EngineWorker

    worker = EngineWorker(lambda: Engine(state_dir=tempfile.mkdtemp()))
    batcher = SampleBatcher(worker, window_s=0.005)
    sampler = worker.submit(
        lambda e: e.create_sampler(base_model="mint-envkit/tiny-qwen3-small")).result()

    limits = Limits(sample_chunk_tokens=8)   # 8 // (2 + 2) = 2 samples per piece
    assert limits.sample_chunks(num_samples=5, per_sample=2 + 2) == [2, 2, 1]
    future = submit_split(batcher, limits, resolve=lambda e: sampler, ready=None, prompt=[1, 2],
                          kwargs={"num_samples": 5, "max_tokens": 2, "seed": 3},
                          prompt_logprobs=False)
    sequences, prompt_lp = future.result(timeout=20)   # in sample order, as one request
    assert len(sequences) == 5 and prompt_lp is None
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import attrs

from mint_envkit.local.bounds import ENGINE_DEFAULT_MAX_TOKENS
from mint_envkit.local.http.limits import Limits, split_seed
from mint_envkit.local.http.worker import SampleBatcher, SampleJob


class _Request:
    """The pieces of one sample request and what they drew, slot by slot."""

    def __init__(
        self,
        batcher: SampleBatcher,
        limits: Limits,
        resolve: Callable[[Any], str],
        ready: concurrent.futures.Future[Any] | None,
        prompt: list[int],
        kwargs: dict[str, Any],
    ) -> None:
        self.batcher, self.resolve, self.ready = batcher, resolve, ready
        self.prompt, self.kwargs = prompt, kwargs
        self.max_tokens = int(kwargs.get("max_tokens") or ENGINE_DEFAULT_MAX_TOKENS)
        stop = kwargs.get("stop")
        segmentable = not (stop and isinstance(stop[0], str))
        segment = limits.sample_segment_tokens
        self.segment = segment if segmentable and segment > 0 else self.max_tokens
        self.split_rows = False
        self.slots: list[Any] = []
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.prompt_lp: Any = None
        self._lock = threading.Lock()
        self._open = 0

    def submit(self, limits: Limits, prompt_logprobs: bool) -> None:
        sizes = limits.sample_chunks(
            num_samples=int(self.kwargs.get("num_samples", 1)),
            per_sample=len(self.prompt) + min(self.max_tokens, self.segment),
        )
        self.slots = [None] * sum(sizes)
        self._open = len(sizes)
        self.split_rows = len(sizes) > 1
        first = 0
        for i, n in enumerate(sizes):
            slots = list(range(first, first + n))
            first += n
            self._queue(slots, self.prompt, 0, rank=i, logprobs=prompt_logprobs and i == 0)

    def _queue(
        self, slots: list[int], prompt: list[int], drawn: int, *, rank: int, logprobs: bool
    ) -> None:
        steps = min(self.segment, self.max_tokens - drawn)
        # a seed index unique to the piece, whatever order the pieces run in; a row chunk
        # gets the seed the engine gives the part of a request it cuts at that sample
        if drawn == 0:
            piece = slots[0] + 1 if self.split_rows else 0
        else:
            piece = len(self.slots) + slots[0] * (self.max_tokens + 1) + drawn
        job = SampleJob(
            resolve=self.resolve,
            prompt=prompt,
            kwargs={
                **self.kwargs,
                "num_samples": len(slots),
                "max_tokens": steps,
                "seed": split_seed(self.kwargs.get("seed"), piece),
            },
            prompt_logprobs=logprobs,
            ready=self.ready,
            cost=len(slots) * (len(prompt) + steps),
            rank=rank,
        )
        job.future.add_done_callback(lambda f: self._done(f, slots, drawn, rank, logprobs))
        self.batcher.enqueue(job)

    def _done(
        self,
        f: concurrent.futures.Future[Any],
        slots: list[int],
        drawn: int,
        rank: int,
        logprobs: bool,
    ) -> None:
        if self.future.done():
            return
        if f.cancelled() or f.exception() is not None:
            with self._lock:
                if not self.future.done():
                    if f.cancelled():
                        self.future.cancel()
                    else:
                        self.future.set_exception(f.exception())  # type: ignore[arg-type]
            return
        sequences, prompt_lp = f.result()
        if logprobs:
            self.prompt_lp = prompt_lp
        more: list[tuple[int, Any]] = []
        for slot, seq in zip(slots, sequences, strict=True):
            so_far = self.slots[slot]
            if so_far is not None:
                seq = attrs.evolve(
                    seq,
                    tokens=[*so_far.tokens, *seq.tokens],
                    logprobs=[*so_far.logprobs, *seq.logprobs],
                )
            self.slots[slot] = seq
            if seq.stop_reason == "length" and len(seq.tokens) < self.max_tokens:
                more.append((slot, seq))
        with self._lock:
            self._open += len(more) - 1
            finished = self._open == 0
        for slot, seq in more:  # each sample continues from its own prefix
            self._queue(
                [slot], [*self.prompt, *seq.tokens], len(seq.tokens), rank=rank + 1, logprobs=False
            )
        if finished:
            self.future.set_result((list(self.slots), self.prompt_lp))


def submit_split(
    batcher: SampleBatcher,
    limits: Limits,
    *,
    resolve: Callable[[Any], str],
    ready: concurrent.futures.Future[Any] | None,
    prompt: list[int],
    kwargs: dict[str, Any],
    prompt_logprobs: bool,
) -> concurrent.futures.Future[Any]:
    """Queue a sample request in pieces; the future gives ``(sequences, prompt_logprobs)``.

    ``kwargs`` are the engine's sample arguments (``num_samples``, ``max_tokens``,
    ``seed``, ``stop``, ...); the sequences come back in sample order.

    Example::

        sequences, _ = submit_split(batcher, Limits(), resolve=lambda e: sampler, ready=None,
                                    prompt=[1, 2], kwargs={"num_samples": 2, "max_tokens": 8},
                                    prompt_logprobs=False).result(timeout=20)
        assert len(sequences) == 2 and all(len(s.tokens) <= 8 for s in sequences)
    """
    request = _Request(batcher, limits, resolve, ready, prompt, kwargs)
    request.submit(limits, prompt_logprobs)
    return request.future
