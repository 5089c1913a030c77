"""Integration: a Judge on the embedded backend's tiny model, through the mint SDK.

The tiny model's verdicts are random; the test checks the plumbing: the prompt reaches
the server, text comes back, identical requests are cached, the concurrency limit holds
and a failing judge is counted.
"""

from __future__ import annotations

import asyncio

import pytest
from server_helpers import SMALL

from mint_envkit.judge import Judge
from mint_envkit.rendering import get_renderer

pytestmark = pytest.mark.integration

# The module's server loads the tiny model (the fixture's setup): measured 6 s of the
# test's 7 s alone on 2 busy cores; the judging itself takes under 1 s.


async def test_judge_on_the_tiny_model(real_server, service_client) -> None:
    client = await service_client.create_sampling_client_async(base_model=SMALL)
    judge = Judge.from_sampling_client(
        client,
        get_renderer("qwen3", SMALL),
        "Is the reply polite?",
        max_tokens=4,
        max_concurrency=2,
    )
    model = judge.complete
    running, peak = 0, 0

    async def tracked(messages):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            return await model(messages)
        finally:
            running -= 1

    judge.complete = tracked
    real_server.reset_counts()
    replies = [f"reply {i}" for i in range(3)] * 2
    results = await asyncio.gather(*(judge("Ask me for a pen.", reply) for reply in replies))
    assert real_server.request_counts()["asample"] == 3
    counts = dict(judge.counts)
    unparsed = counts.pop("unparsed", 0)
    assert counts == {"requests": 6, "calls": 3, "cached": 3}
    assert unparsed == sum(r.status == "unparsed" for r in results if not r.cached)
    assert peak == 2
    for result in results:
        assert result.status in ("ok", "unparsed") and isinstance(result.text, str)
        assert result.score in (0.0, 1.0)

    failing = Judge.from_sampling_client(
        client,
        get_renderer("qwen3", SMALL),
        "Is the reply polite?",
        max_tokens=4,
        timeout=1e-6,
    )
    result = await failing("Ask me for a pen.", "Pen.")
    assert result.status == "failed" and failing.counts["failed"] == 1
