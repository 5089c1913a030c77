"""The sample batcher: requests sent together share one engine batch, however far apart
they arrive within a share of the batch's expected engine time."""

from __future__ import annotations

import threading
import time

from mint_envkit.local.http.worker import (
    BURST_FRACTION,
    MAX_WAIT_S,
    WAIT_FRACTION,
    EngineWorker,
    SampleBatcher,
    SampleJob,
)


class SlowEngine:
    """An engine whose sample batches each take ``seconds`` (a model on a slow CPU)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls: list[int] = []
        self.samplers: set[str] = set()

    def ensure_base_model(self, name):
        pass

    def create_sampler(self, *, base_model):
        self.samplers.add("warm-up")
        return "warm-up"

    def sample(self, sampler, prompt, *, max_tokens, seed):
        time.sleep(self.seconds * max_tokens)

    def release_sampler(self, sampler):
        self.samplers.remove(sampler)

    def sample_many(self, requests):
        self.calls.append(len(requests))
        time.sleep(self.seconds)
        return [[f"sample of {prompt}"] for _, prompt, _ in requests]


def _job(n: int, max_tokens: int) -> SampleJob:
    return SampleJob(
        resolve=lambda e: "sampler",
        prompt=[n],
        kwargs={"num_samples": 1, "max_tokens": max_tokens},
        prompt_logprobs=False,
    )


def _two_jobs_apart(batcher: SampleBatcher, gap_s: float, max_tokens: int) -> list[SampleJob]:
    jobs = [_job(1, max_tokens), _job(2, max_tokens)]
    batcher.enqueue(jobs[0])
    time.sleep(gap_s)
    batcher.enqueue(jobs[1])
    for job in jobs:
        job.future.result(timeout=20)
    return jobs


def test_requests_tens_of_ms_apart_share_a_batch_once_batches_are_known_to_be_slow():
    engine = SlowEngine(seconds=0.5)
    worker = EngineWorker(lambda: engine)
    try:
        batcher = SampleBatcher(worker, window_s=0.005)
        assert batcher.wait_s(16) == 0.005  # nothing measured yet: the plain window
        _two_jobs_apart(batcher, gap_s=0.3, max_tokens=1)  # 300 ms apart: two batches
        assert engine.calls == [1, 1]
        # 0.5 s for one token step: 16 steps are expected to take 8 s, so a batch of
        # 16-token jobs waits 3% of that (240 ms) and the second job, 40 ms late, joins it
        assert WAIT_FRACTION * 0.5 * 16 <= batcher.wait_s(16) <= MAX_WAIT_S
        assert batcher.wait_s(1000) == MAX_WAIT_S  # bounded
        _two_jobs_apart(batcher, gap_s=0.04, max_tokens=16)
        assert engine.calls == [1, 1, 2]
        assert list(batcher.batches) == [1, 1, 2]
    finally:
        worker.close()


def test_a_fast_engine_keeps_the_plain_window_and_a_zero_window_waits_for_nothing():
    engine = SlowEngine(seconds=0.0)
    worker = EngineWorker(lambda: engine)
    try:
        batcher = SampleBatcher(worker, window_s=0.005)
        _two_jobs_apart(batcher, gap_s=0.0, max_tokens=16)
        assert batcher.wait_s(16) == 0.005  # batches of ~0 s: the window stays 5 ms
        off = SampleBatcher(worker, window_s=0.0)
        busy = threading.Event()
        worker.submit(lambda e: busy.wait(10))  # the jobs pile up while the worker is busy
        jobs = [_job(n, 4) for n in range(3)]
        for job in jobs:
            off.enqueue(job)
        busy.set()
        assert [job.future.result(timeout=20)[0] for job in jobs] == [
            ["sample of [0]"],
            ["sample of [1]"],
            ["sample of [2]"],
        ]
        assert off.wait_s(16) == 0.0 and list(off.batches) == [3]
    finally:
        worker.close()


def test_the_warm_up_times_a_token_step_so_the_first_batch_already_waits():
    engine = SlowEngine(seconds=0.5)  # 0.5 s a token step
    worker = EngineWorker(lambda: engine)
    try:
        batcher = SampleBatcher(worker, window_s=0.005)
        worker.submit(lambda e: batcher.warm_up(e, "a-model")).result(timeout=20)
        assert engine.samplers == set()  # the warm-up's sampler is released
        assert batcher.wait_s(16) >= WAIT_FRACTION * 0.5 * 16  # 240 ms
        _two_jobs_apart(batcher, gap_s=0.04, max_tokens=16)  # the very first batch
        assert engine.calls == [2]
        # an engine that cannot sample still loads; the warm-up is skipped
        worker.submit(lambda e: batcher.warm_up(object.__new__(Bare), "a-model")).result(20)
    finally:
        worker.close()


def _burst(batcher: SampleBatcher, jobs: int, gap_s: float) -> None:
    sent = [_job(n, 16) for n in range(jobs)]
    for job in sent:
        batcher.enqueue(job)
        time.sleep(gap_s)
    for job in sent:
        job.future.result(timeout=30)


def test_a_burst_of_requests_longer_than_the_quiet_gap_shares_one_batch_up_to_a_bound():
    engine = SlowEngine(seconds=0.5)  # 16 token steps: 8 s expected
    worker = EngineWorker(lambda: engine)
    try:
        batcher = SampleBatcher(worker, window_s=0.005)
        worker.submit(lambda e: batcher.warm_up(e, "a-model")).result(timeout=20)
        quiet, most = batcher.wait_s(16), batcher.burst_s(16)
        assert abs(quiet - WAIT_FRACTION * 8) < 0.02 and abs(most - BURST_FRACTION * 8) < 0.05
        # six jobs 80 ms apart (400 ms in all, longer than the 240 ms quiet gap), as a
        # held-out eval's requests arrive: one batch, not one at 240 ms and the rest after
        _burst(batcher, jobs=6, gap_s=0.08)
        assert engine.calls == [6]
        # jobs that never stop coming: the batch runs once the 800 ms bound is reached
        engine.calls.clear()
        _burst(batcher, jobs=20, gap_s=0.08)  # 1.6 s of arrivals
        assert len(engine.calls) >= 2 and 2 <= engine.calls[0] <= 14
    finally:
        worker.close()


class Bare:
    """An engine that loads models and has no samplers."""

    def ensure_base_model(self, name):
        pass
