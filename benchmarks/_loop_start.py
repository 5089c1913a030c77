"""Mark when a training loop starts: its first weight snapshot, whichever SDK call makes it.

Shared by ``loop_vs_peer.py`` (our loop, in our venv) and ``peer/cookbook_run.py``
(tinker-cookbook's loop, in the peer venv), so both sides start their clocks at the
same event. It wraps ``TrainingClient`` methods only to record a timestamp; the
calls themselves are unchanged. Standard library only: it runs in both venvs.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

SNAPSHOT_METHODS = (
    "save_weights_and_get_sampling_client_async",
    "save_weights_and_get_sampling_client",
    "save_weights_for_sampler_async",
    "save_weights_for_sampler",
    "save_state_async",
    "save_state",
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
