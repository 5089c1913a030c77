"""Releasing what clients left behind: idle training clients and sessions.

A training client holds its LoRA weights and Adam state in memory until
``unload_model``; a client that crashed never sends it. A session that has
sent nothing (no request, no heartbeat; the SDK beats every ~10 s while it
lives) for ``Limits.idle_timeout_s`` is dropped, and so is a training client
with no request for that long: its engine state is unloaded and its
``model_id`` then answers 404. Checkpoints on disk are kept.

:class:`IdleReaper` sweeps on a timer on the server's event loop, started by
the first request.

Example::

    reaper = IdleReaper(backend)
    reaper.touch_session("session-1")
    reaper.sweep()          # releases what has been idle past the timeout
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mint_envkit.local.http.state import Backend

logger = logging.getLogger("mint_envkit.local.server")


class IdleReaper:
    """Tracks session activity and releases idle sessions and training clients.

    Example::

        reaper = IdleReaper(backend); reaper.ensure_running()   # on the event loop
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.session_seen: dict[str, float] = {}
        self._task: asyncio.Task[Any] | None = None

    @property
    def timeout_s(self) -> float:
        """The idle timeout (``Limits.idle_timeout_s``)."""
        return self._backend.limits.idle_timeout_s

    def touch_session(self, session_id: str) -> None:
        """Note activity on a session (a request or a heartbeat).

        Example::

            reaper.touch_session("session-1")
        """
        self.session_seen[session_id] = time.monotonic()

    def ensure_running(self) -> None:
        """Start the periodic sweep on the running event loop (once).

        Example::

            reaper.ensure_running()
        """
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        period = min(max(self.timeout_s / 4, 0.05), 60.0)
        while not self._backend.closing:
            await asyncio.sleep(period)
            self.sweep()

    def sweep(self) -> list[str]:
        """Release idle sessions and training clients now; returns the released ids.

        Example::

            reaper.sweep()   # ['session-1', 'model-3']
        """
        b = self._backend
        released: list[str] = []
        now_mono, now_wall = time.monotonic(), time.time()
        for sid, seen in list(self.session_seen.items()):
            if now_mono - seen > self.timeout_s:
                del self.session_seen[sid]
                b.sessions.pop(sid, None)
                released.append(sid)
        for model_id, info in list(b.model_registry.items()):
            last = float(info.get("last_request_time", now_wall))
            if now_wall - last > self.timeout_s:
                b.forget_model(model_id)
                b.worker.submit(lambda e, m=model_id: e.unload(m), f"release idle {model_id}")
                released.append(model_id)
        if released:
            logger.info("released after %.0f s idle: %s", self.timeout_s, ", ".join(released[:10]))
        return released
