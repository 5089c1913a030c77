"""Timing marks for a training loop, the same on both sides of a comparison.

Shared by ``loop_vs_peer.py`` (our loop, in our venv) and ``peer/cookbook_run.py``
(tinker-cookbook's loop, in the peer venv), so both sides start their clocks at the
same event and record the same things. It wraps SDK methods only to record
timestamps and token counts; the calls themselves are unchanged. Standard library
only (the SDK module is passed in): it runs in both venvs.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

SNAPSHOT_METHODS = (
    "save_weights_and_get_sampling_client_async",
    "save_weights_and_get_sampling_client",
    "save_weights_for_sampler_async",
    "save_weights_for_sampler",
    "save_state_async",
    "save_state",
    # what the public saves call first; mint_envkit's begin_snapshot calls it directly
    "_save_weights_for_sampler_impl",
)


def on_first_snapshot(training_client_cls: Any, callback: Callable[[], None]) -> None:
    """Call ``callback`` once, at the first weight snapshot of any training client."""
    started = threading.Event()

    def note() -> None:
        if not started.is_set():
            started.set()
            callback()

    def wrap(name: str) -> None:
        original = getattr(training_client_cls, name, None)
        if original is None:
            return
        if inspect.iscoroutinefunction(original):

            async def wrapper(self, *a, **kw):
                note()
                return await original(self, *a, **kw)
        else:

            def wrapper(self, *a, **kw):
                note()
                return original(self, *a, **kw)

        setattr(training_client_cls, name, wrapper)

    for name in SNAPSHOT_METHODS:
        wrap(name)


class Marks:
    """Wall-clock marks with the server's request counts (and tokens sampled so far) at each."""

    def __init__(self, base_url: str, tinker: Any) -> None:
        self.url = base_url.rstrip("/") + "/api/v1/mint_envkit/stats"
        self.items: list[dict[str, Any]] = []
        self.sampled_tokens = 0
        original = tinker.SamplingClient.sample_async

        async def sample_async(client, *a, **kw):
            result = await original(client, *a, **kw)
            self.sampled_tokens += sum(len(s.tokens) for s in result.sequences)
            return result

        tinker.SamplingClient.sample_async = sample_async

    def mark(self, label: str) -> None:
        now = time.time()
        with urllib.request.urlopen(self.url, timeout=10) as response:
            counts = json.load(response)["request_counts"]
        self.items.append(
            {"label": label, "t": now, "counts": counts, "sampled_tokens": self.sampled_tokens}
        )
