"""Split sample requests draw what one engine call draws for the same seed (real tiny engine).

Segmenting long samples is off by default because a segmented draw cannot match
(issue 21); cutting by rows matches the engine's own cut, seed for seed.
"""

from __future__ import annotations

from typing import Any

import pytest

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.http.limits import Limits
from mint_envkit.local.http.splitting import submit_split
from mint_envkit.local.http.worker import SampleJob

SMALL = "mint-envkit/tiny-qwen3-small"
PROMPT = [2044, 100, 200, 300, 2045, 2044, 400]


class _RunAtOnce:
    """A batcher that runs every job on the engine as it is queued (no worker thread)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.jobs = 0

    def enqueue(self, job: SampleJob) -> None:
        self.jobs += 1
        [result] = self.engine.sample_many([(job.resolve(self.engine), job.prompt, job.kwargs)])
        job.future.set_result((result, None))


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Engine:
    return Engine(state_dir=tmp_path_factory.mktemp("split-state"), device="cpu")


def _split(engine: Engine, limits: Limits, sampler: str, **kwargs: Any) -> tuple[list, int]:
    batcher = _RunAtOnce(engine)
    future = submit_split(
        batcher,  # type: ignore[arg-type]
        limits,
        resolve=lambda _: sampler,
        ready=None,
        prompt=PROMPT,
        kwargs=kwargs,
        prompt_logprobs=False,
    )
    sequences, _ = future.result(timeout=60)
    return [(s.tokens, s.logprobs) for s in sequences], batcher.jobs


def test_default_limits_draw_a_long_seeded_sample_as_one_engine_call(engine):
    sampler = engine.create_sampler(base_model=SMALL)
    kwargs = {"num_samples": 3, "max_tokens": 150, "seed": 11}
    whole = [(s.tokens, s.logprobs) for s in engine.sample(sampler, PROMPT, **kwargs)]
    got, jobs = _split(engine, Limits(), sampler, **kwargs)
    assert jobs == 1 and got == whole  # segmenting is off by default
    segmented, jobs = _split(engine, Limits(sample_segment_tokens=64), sampler, **kwargs)
    assert jobs > 1 and segmented != whole  # what segments draw: another draw (documented)


def test_a_request_cut_by_rows_draws_what_the_engine_draws_when_it_cuts(engine):
    sampler = engine.create_sampler(base_model=SMALL)
    kwargs = {"num_samples": 10, "max_tokens": 20, "seed": 5}
    budget = 3 * (len(PROMPT) + 20)  # 3 samples a pass: parts of 3, 3, 3, 1
    kept = engine.max_tokens_per_pass
    engine.max_tokens_per_pass = budget
    try:
        whole = [(s.tokens, s.logprobs) for s in engine.sample(sampler, PROMPT, **kwargs)]
    finally:
        engine.max_tokens_per_pass = kept
    got, jobs = _split(engine, Limits(sample_chunk_tokens=budget), sampler, **kwargs)
    assert jobs == 4
    assert [t for t, _ in got] == [t for t, _ in whole]
    for (_, a), (_, b) in zip(got, whole, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
