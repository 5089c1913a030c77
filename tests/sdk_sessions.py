"""Checking that code closes the SDK sessions it opens (shared by several test files).

The ``mint`` SDK heartbeats each ``ServiceClient``'s session for the life of the process,
and warns every 10 s once its server is gone, unless the session is closed.

Example::

    from sdk_sessions import heartbeat_stopped, record_service_clients

    made = record_service_clients(monkeypatch)
    run_the_code()
    assert len(made) == 1 and heartbeat_stopped(made[0])
"""

from __future__ import annotations

import time
from typing import Any

import pytest


def record_service_clients(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make ``mint.ServiceClient`` record every client it creates; return the list."""
    import mint

    made: list[Any] = []
    real = mint.ServiceClient

    def recording(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(mint, "ServiceClient", recording)
    return made


def heartbeat_stopped(client: Any, timeout_s: float = 5.0) -> bool:
    """Whether ``client``'s session heartbeat (the SDK's own task) ends cancelled in time."""
    heartbeat = client.holder._session_heartbeat_task
    deadline = time.monotonic() + timeout_s
    while not heartbeat.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    return heartbeat.cancelled()
