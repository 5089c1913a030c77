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

    import tempfile
    import time
    from mint_envkit.local.http.limits import Limits
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp(),
                      limits=Limits(idle_timeout_s=0.05))
    reaper = backend.reaper   # the backend's IdleReaper(backend)
    backend.session("session-1")   # a session; this touches it
    assert reaper.sweep() == []    # active
    time.sleep(0.1)
    assert reaper.sweep() == ["session-1"]   # released: idle past the timeout
    assert "session-1" not in backend.sessions
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

        reaper = IdleReaper(backend)
        reaper.touch_session("session-2")
        reaper.ensure_running()   # on the event loop: it sweeps every timeout / 4
        await asyncio.sleep(0.3)
        assert "session-2" not in reaper.session_seen
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
            assert reaper.sweep() == []   # just seen
        """
        self.session_seen[session_id] = time.monotonic()

    def ensure_running(self) -> None:
        """Start the periodic sweep on the running event loop (once).

        Example::

            reaper.ensure_running()
            reaper.ensure_running()   # once: a second call keeps the running sweep
            await asyncio.sleep(0)
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

            model_id = backend.worker.submit(
                lambda e: e.create_lora("mint-envkit/tiny-qwen3-small", rank=4)).result()
            backend.model_registry[model_id] = {"model_id": model_id,
                                                "last_request_time": time.time() - 1}
            reaper.touch_session("session-3")
            time.sleep(0.1)
            released = reaper.sweep()   # [..., 'session-3', model_id]: sessions, then clients
            assert released[-2:] == ["session-3", model_id]   # the training client is unloaded
            assert model_id not in backend.model_registry
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
