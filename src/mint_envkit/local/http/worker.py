"""The engine worker thread and the sample-request batcher.

Every engine call runs on one worker thread, one at a time, in FIFO order, so
the event loop never does torch work (:class:`EngineWorker`). Sample requests
that arrive while the worker is busy pile up and run as one engine batch
(:class:`SampleBatcher`), so many small concurrent requests (one per env, as
tinker-cookbook sends) cost about as much as one large request.

Example::

    import tempfile
    from mint_envkit.local.engine.core import Engine

    worker = EngineWorker(lambda: Engine(state_dir=tempfile.mkdtemp()))
    batcher = SampleBatcher(worker, window_s=0.005)
    sampler = worker.submit(
        lambda e: e.create_sampler(base_model="mint-envkit/tiny-qwen3-small")).result()
    job = SampleJob(resolve=lambda e: sampler, prompt=[1, 2],
                    kwargs={"num_samples": 2, "max_tokens": 3, "seed": 0}, prompt_logprobs=True)
    batcher.enqueue(job)
    sequences, prompt_logprobs = job.future.result(timeout=20)
    assert len(sequences) == 2 and prompt_logprobs[0] is None   # the first token has none
    # worker.close() when done (the server does, when it stops)
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from mint_envkit.errors import MintEnvkitError

logger = logging.getLogger("mint_envkit.local.server")

EngineFactory = Callable[[], Any]
"""Builds the engine; called once, on the worker thread."""

WAIT_FRACTION = 0.03
"""A sample batch waits for more jobs up to this share of the last batch's engine time."""

MAX_WAIT_S = 0.25
"""The longest quiet gap a sample batch waits for (the first one waits ``window_s``)."""

BURST_FRACTION = 0.1
"""Jobs still arriving hold a sample batch at most this share of its expected engine time."""

MAX_BURST_S = 1.0
"""The longest jobs still arriving hold a sample batch."""


class EngineWorker:
    """One thread that builds the engine and then runs every call on it, in FIFO order.

    Example::

        assert worker.ready.result(timeout=20) is None   # the engine is built
        models = await worker.call(lambda e: e.supported_models)
        assert "mint-envkit/tiny-qwen3-small" in models
    """

    def __init__(self, factory: EngineFactory) -> None:
        self._engine: Any = None
        self._error: BaseException | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="mint-envkit-engine"
        )
        self.ready = self._executor.submit(self._build, factory)
        """Done when the engine is built (raises the factory's error if it failed)."""

    def _build(self, factory: EngineFactory) -> None:
        t0 = time.perf_counter()
        try:
            self._engine = factory()
        except BaseException as err:
            self._error = err
            logger.error("the engine could not start: %s", err)
            raise
        logger.info("engine ready in %.2f s", time.perf_counter() - t0)

    def _run(self, fn: Callable[[Any], Any], label: str, queued_at: float) -> Any:
        if self._engine is None:
            raise MintEnvkitError(f"the local engine could not start: {self._error}")
        start = time.perf_counter()
        try:
            return fn(self._engine)
        finally:
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "engine %s: %.3f s (waited %.3f s in the queue)",
                    label or "call",
                    time.perf_counter() - start,
                    start - queued_at,
                )

    def submit(self, fn: Callable[[Any], Any], label: str = "") -> concurrent.futures.Future[Any]:
        """Queue ``fn(engine)`` on the worker thread (FIFO); returns its future.

        After ``close()`` the future is already cancelled (the server is stopping).

        Example::

            future = worker.submit(lambda e: e.ensure_base_model("mint-envkit/tiny-qwen3-small"))
            assert future.result(timeout=20) is None
        """
        try:
            return self._executor.submit(self._run, fn, label, time.perf_counter())
        except RuntimeError:  # shut down
            cancelled: concurrent.futures.Future[Any] = concurrent.futures.Future()
            cancelled.cancel()
            return cancelled

    async def call(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(engine)`` on the worker thread and await it from the event loop.

        Example::

            model_id = await worker.call(lambda e: e.create_lora("mint-envkit/tiny-qwen3-small", rank=4))
            info = await worker.call(lambda e: e.model_info(model_id))
            assert info["lora_rank"] == 4
        """
        return await asyncio.wrap_future(self.submit(fn))

    def close(self, *, cancel_running: bool = False) -> None:
        """Stop the thread: queued calls are cancelled; the running one finishes first,
        or, with ``cancel_running``, is cancelled through the engine's ``cancel_running``
        hook (it stops at its next check between chunks) when the engine has one.

        Example::

            other = EngineWorker(lambda: Engine(state_dir=tempfile.mkdtemp()))
            other.close(cancel_running=True)
            assert other.submit(lambda e: e.supported_models).cancelled()   # closed
        """
        self._executor.shutdown(wait=False, cancel_futures=True)
        hook = getattr(self._engine, "cancel_running", None)
        if cancel_running and callable(hook):
            try:
                hook()
            except Exception:
                logger.exception("cancelling the running engine call failed")
        self._executor.shutdown(wait=True)


@attrs.define(eq=False)
class SampleJob:
    """One queued ``asample`` request.

    ``resolve(engine)`` gives the engine sampler id (it may create one);
    ``ready``, when set, must be done before the job can run (a sampler still
    being created); ``future`` resolves to ``(sequences, prompt_logprobs)``.
    ``cost`` is its price in tokens; ``rank`` its index among the sub-requests
    of a split request (lower ranks run first, so a new request overtakes the
    rest of a big job).

    Example::

        job = SampleJob(resolve=lambda e: sampler, prompt=[1, 2],
                        kwargs={"num_samples": 1}, prompt_logprobs=False)
        assert (job.rank, job.ready, job.future.done()) == (0, None, False)
    """

    resolve: Callable[[Any], str]
    prompt: list[int]
    kwargs: dict[str, Any]
    prompt_logprobs: bool
    ready: concurrent.futures.Future[Any] | None = None
    future: concurrent.futures.Future[Any] = attrs.field(factory=concurrent.futures.Future)
    cost: int = 0
    rank: int = 0


class SampleBatcher:
    """Queues sample jobs; the jobs queued together run as one ``Engine.sample_many`` call.

    One batch holds jobs of the lowest ``rank`` queued, of at most
    ``batch_tokens`` tokens in all (at least one job); the rest wait for the
    next batch, which is queued behind whatever else the worker has to do.

    How long a batch waits for more jobs before it runs: until no job has arrived for
    :meth:`wait_s` (at least ``window_s``, up to :data:`WAIT_FRACTION` of its expected
    engine time, at most :data:`MAX_WAIT_S`), and while jobs keep arriving at most
    :meth:`burst_s` (:data:`BURST_FRACTION` of it, at most :data:`MAX_BURST_S`). So
    requests sent together share one batch even when they arrive tens of milliseconds
    apart (an RL step's one request per group reached the server over 40-110 ms for
    SmolLM2's 8 groups, and a 5 ms window split them into two batches; a 40-problem
    eval's requests came over 480 ms, and a fixed 186 ms wait split them 15 + 25). On a
    model whose batches take milliseconds the wait stays ``window_s``; on SmolLM2 on
    CPU, where a decode step costs about as much for 8 rows as for 32, a step's
    requests cost one decode instead of two.

    Example::

        import threading

        batcher = SampleBatcher(worker, window_s=0.005, batch_tokens=8192)
        busy = threading.Event()
        worker.submit(lambda e: busy.wait(10))   # the worker is busy meanwhile
        jobs = [SampleJob(resolve=lambda e: sampler, prompt=[1, 2, n],
                          kwargs={"num_samples": 1, "max_tokens": 2}, prompt_logprobs=False)
                for n in range(3)]
        for job in jobs:
            batcher.enqueue(job)      # they pile up, and run as one engine batch
        busy.set()
        assert all(len(job.future.result(timeout=20)[0]) == 1 for job in jobs)
        assert list(batcher.batches) == [3]   # requests served by each recent engine batch
    """

    def __init__(
        self, worker: EngineWorker, *, window_s: float, batch_tokens: int | None = None
    ) -> None:
        self._worker = worker
        self._lock = threading.Lock()
        self._queue: list[SampleJob] = []
        self._batch_queued = False
        self.window_s = float(window_s)
        self.batch_tokens = batch_tokens
        self.batches: collections.deque[int] = collections.deque(maxlen=1000)
        """How many requests each recent engine sample batch served."""
        self._step_seconds: collections.deque[float] = collections.deque(maxlen=8)
        self._last_enqueue = 0.0

    def wait_s(self, max_tokens: int = 16) -> float:
        """How long a batch of ``max_tokens`` steps waits for more jobs at most.

        :data:`WAIT_FRACTION` of its expected engine time (the slowest engine
        seconds per token step of the last 8 batches, times ``max_tokens``), at
        least ``window_s``, at most :data:`MAX_WAIT_S`; 0 when ``window_s`` is 0.

        Example::

            assert batcher.wait_s(16) >= batcher.window_s
        """
        if self.window_s <= 0:
            return 0.0
        return max(self.window_s, min(MAX_WAIT_S, WAIT_FRACTION * self._expected_s(max_tokens)))

    def burst_s(self, max_tokens: int = 16) -> float:
        """How long jobs that keep arriving hold a batch of ``max_tokens`` steps at most.

        :data:`BURST_FRACTION` of its expected engine time (see :meth:`wait_s`), at
        least :meth:`wait_s`, at most :data:`MAX_BURST_S`.

        Example::

            assert batcher.burst_s(16) >= batcher.wait_s(16)
        """
        expected = self._expected_s(max_tokens)
        return max(self.wait_s(max_tokens), min(MAX_BURST_S, BURST_FRACTION * expected))

    def _expected_s(self, max_tokens: int) -> float:
        """A batch's expected engine time: the slowest seconds per token step of the last
        8 batches, times ``max_tokens`` (0 before any is measured)."""
        return max(self._step_seconds, default=0.0) * max_tokens

    def warm_up(self, engine: Any, base_model: str) -> None:
        """Load ``base_model``, then time a 2-token sample of it (on the worker thread).

        The first batch then knows how long a token step takes (it waits for the rest of
        a burst of requests as later ones do), and the weights are read in before a
        client waits. A failed load raises; a failed warm-up sample is only logged.

        Example::

            worker.submit(lambda e: batcher.warm_up(e, "mint-envkit/tiny-qwen3-small")).result()
            assert batcher.wait_s(16) >= batcher.window_s
        """
        engine.ensure_base_model(base_model)
        try:
            sampler = engine.create_sampler(base_model=base_model)
            try:
                started = time.monotonic()
                engine.sample(sampler, [0], max_tokens=2, seed=0)
                self._step_seconds.append((time.monotonic() - started) / 2)
            finally:
                engine.release_sampler(sampler)
        except Exception as err:  # an engine without samplers (a test double), for instance
            logger.debug("warm-up sample of %s skipped: %s", base_model, err)

    def enqueue(self, job: SampleJob) -> None:
        """Queue a sample job; it joins the next batch the worker runs.

        Example::

            job = SampleJob(resolve=lambda e: sampler, prompt=[3, 4],
                            kwargs={"num_samples": 1, "max_tokens": 2}, prompt_logprobs=False)
            batcher.enqueue(job)
            sequences, prompt_logprobs = job.future.result(timeout=20)
            assert len(sequences[0].tokens) <= 2 and prompt_logprobs is None
        """
        with self._lock:
            self._queue.append(job)
            self._last_enqueue = time.monotonic()
            if self._batch_queued:
                return
            self._batch_queued = True
        self._queue_batch()

    def _queue_batch(self) -> None:
        cf = self._worker.submit(self._run_batch, "asample")
        if cf.cancelled():  # the worker is closed: nothing will run these jobs
            with self._lock:
                jobs, self._queue = self._queue, []
            for job in jobs:
                job.future.cancel()

    def _take(self) -> list[SampleJob]:
        """The next batch: jobs of the lowest rank only, under ``batch_tokens``; the rest waits.

        A new request (rank 0) so never shares an engine batch with the long rest of
        a split job: it answers as soon as its own few tokens are drawn.
        """
        if not self._queue:
            return []
        low = min(job.rank for job in self._queue)
        order = [i for i, job in enumerate(self._queue) if job.rank == low]
        chosen: set[int] = set()
        total = 0
        for i in order:
            cost = self._queue[i].cost
            if chosen and self.batch_tokens is not None and total + cost > self.batch_tokens:
                continue
            chosen.add(i)
            total += cost
        taken = [job for i, job in enumerate(self._queue) if i in chosen]
        self._queue = [job for i, job in enumerate(self._queue) if i not in chosen]
        return taken

    def _run_batch(self, engine: Any) -> None:
        # Requests sent together (one per group, or one per env) reach the server
        # milliseconds apart: wait for a quiet gap (or the burst limit) so they share it.
        with self._lock:
            max_tokens = _max_tokens(self._queue[:1])
            quiet, most = self.wait_s(max_tokens), self.burst_s(max_tokens)
        start = time.monotonic()
        while quiet > 0:
            with self._lock:
                until = min(start + most, max(start, self._last_enqueue) + quiet)
            left = until - time.monotonic()
            if left <= 0:
                break
            time.sleep(left)
        with self._lock:
            jobs = self._take()
            self._batch_queued = bool(self._queue)
        if self._batch_queued:
            self._queue_batch()
        self._run_jobs(engine, jobs)

    def run_pending(self, engine: Any) -> None:
        """Run one batch of the queued jobs now, on the worker thread, inside a long call.

        A split training job calls this between its pieces, so a sample request that
        arrives meanwhile waits for one piece, not for the whole job. The batch the
        queue asked the worker for still runs later (and takes what is left).

        Example::

            # a split training job: engine.forward(..., between=lambda: batcher.run_pending(engine))
            job = SampleJob(resolve=lambda e: sampler, prompt=[5],
                            kwargs={"num_samples": 1, "max_tokens": 2}, prompt_logprobs=False)
            batcher.enqueue(job)
            worker.submit(batcher.run_pending).result(timeout=20)   # runs it, if still queued
            assert job.future.result(timeout=20)[0]
        """
        with self._lock:
            jobs = self._take()
        if jobs:
            self._run_jobs(engine, jobs)

    def _run_jobs(self, engine: Any, jobs: list[SampleJob]) -> None:
        # A job whose sampler is still being created (queued behind this batch)
        # waits for the next batch instead of blocking the worker.
        later = [j for j in jobs if j.ready is not None and not j.ready.done()]
        jobs = [j for j in jobs if j not in later]
        for job in later:
            self.enqueue(job)
        runnable: list[tuple[SampleJob, str]] = []
        for job in jobs:
            try:
                runnable.append((job, job.resolve(engine)))
            except BaseException as err:
                job.future.set_exception(err)
        if not runnable:
            return
        started = time.monotonic()
        try:
            results = engine.sample_many([(sid, job.prompt, job.kwargs) for job, sid in runnable])
        except BaseException as err:  # e.g. cancelled while the server stops
            for job, _ in runnable:
                job.future.set_exception(err)
            return
        self._step_seconds.append((time.monotonic() - started) / _max_tokens(jobs))
        self.batches.append(len(runnable))
        for (job, sid), result in zip(runnable, results, strict=True):
            if isinstance(result, BaseException):
                job.future.set_exception(result)
                continue
            try:
                prompt_lp = (
                    engine.compute_logprobs(sid, job.prompt) if job.prompt_logprobs else None
                )
            except BaseException as err:
                job.future.set_exception(err)
                continue
            job.future.set_result((result, prompt_lp))


def _max_tokens(jobs: list[SampleJob]) -> int:
    """The most token steps one of ``jobs`` asks for (16, the engine's default, if none says)."""
    asked = [job.kwargs.get("max_tokens", 16) for job in jobs]
    return max([n for n in asked if isinstance(n, int) and n > 0] or [16])
