"""A request's samples do not depend on what is sampled beside it (CPU, bit for bit).

The server batches whatever requests arrive together, so without this a fixed seed
would not reproduce a run: CPU matrix products of a few rows round differently from
more, and left padding moves a prompt's keys to other SIMD lanes. Bit for bit under
the suite's pinned MKL path (``MKL_CBWR``, tests/conftest.py), on every instruction set:
``MKL_ENABLE_INSTRUCTIONS=SSE4_2 python -m pytest tests/local/engine`` (or AVX2, AVX512).
"""

from __future__ import annotations

import pytest
import torch
from engine_kit import trained_lora

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.decode import CPU_MIN_ROWS, policy_for
from mint_envkit.local.engine.records import EngineError

SHORT = [2044, 7, 8, 2045]
PROMPT = [2044, *range(100, 116), 2045]
LONG = [2044, *range(200, 231), 2045]


def _sampler(engine: Engine) -> str:
    model_id = trained_lora(engine, seed=0)  # B != 0: the adapter changes the outputs
    sampler_id, _ = engine.save_for_sampler(model_id, None)
    return sampler_id


def _request(sid: str, prompt: list[int], seed: int, n: int = 1) -> tuple:
    return (sid, prompt, {"num_samples": n, "max_tokens": 6, "temperature": 1.0, "seed": seed})


def _exact(a: list, b: list) -> bool:
    return [(s.tokens, s.logprobs) for s in a] == [(s.tokens, s.logprobs) for s in b]


def test_the_cpu_policy_runs_at_least_eight_rows():
    assert policy_for(torch.device("cpu")).min_rows == CPU_MIN_ROWS == 8
    assert policy_for(torch.device("cuda")).min_rows == 1


def test_one_row_alone_is_the_same_row_in_a_batch_of_equal_length_prompts(engine):
    sid = _sampler(engine)
    alone = engine.sample_many([_request(sid, PROMPT, seed=5)])[0]
    for others in (1, 2, 7):
        batch = [_request(sid, PROMPT, seed=5)] + [
            _request(sid, PROMPT, seed=10 + i, n=2) for i in range(others)
        ]
        assert _exact(engine.sample_many(batch)[0], alone)


@pytest.fixture(scope="module")
def invariant_engine(tmp_path_factory) -> Engine:
    return Engine(state_dir=tmp_path_factory.mktemp("inv"), num_threads=1, batch_invariant=True)


def test_a_batch_invariant_engine_ignores_prompts_of_other_lengths(invariant_engine):
    engine = invariant_engine
    sid = _sampler(engine)
    alone = engine.sample_many([_request(sid, PROMPT, seed=5, n=3)])[0]
    mixed = [
        _request(sid, LONG, seed=1, n=4),
        _request(sid, PROMPT, seed=5, n=3),
        _request(sid, SHORT, seed=2, n=2),
        _request(sid, PROMPT, seed=6, n=1),
    ]
    out = engine.sample_many(mixed)
    assert _exact(out[1], alone)
    # and each of the others is what it gets alone too
    for request, got in zip(mixed, out, strict=True):
        assert _exact(got, engine.sample_many([request])[0])


def test_batch_invariant_must_be_a_bool(tmp_path):
    with pytest.raises(EngineError, match="batch_invariant must be True or False"):
        Engine(state_dir=tmp_path, batch_invariant="yes")  # type: ignore[arg-type]
