"""Futures and per-model request ordering for the embedded server.

Both classes live on the server's event loop (not thread-safe by design:
every call happens on that one loop).

- :class:`FutureStore` hands out ``request_id``s for long operations and
  answers ``retrieve_future`` long-polls: it waits for the result up to a
  bound, then tells the client to try again (never a tight try-again loop).
- :class:`Sequencer` applies training requests of one model in ``seq_id``
  order: a request that arrives before its predecessors waits for them.

Example::

    store = FutureStore()                 # on the server's event loop
    request_id = store.create("optim_step")
    store.set_result(request_id, {"metrics": {}})
    assert await store.wait(request_id, timeout=30.0) == {"metrics": {}}

    started = []
    seq = Sequencer("m-1", gap_timeout=30.0)
    seq.submit(2, "optim_step", "req-b", lambda: started.append("b"))  # waits for seq_id 1
    assert started == []
    seq.submit(1, "forward_backward", "req-a", lambda: started.append("a"))  # a, then b
    assert started == ["a", "b"]
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from mint_envkit.lru import LRU

logger = logging.getLogger("mint_envkit.local.server")


@attrs.define
class _Entry:
    kind: str
    future: asyncio.Future[dict[str, Any]]
    created: float


class FutureStore:
    """Results of long operations, by ``request_id``.

    Completed results are kept after they are read (a client may re-read
    after a lost response), up to ``keep_retrieved`` of them; at most
    ``max_entries`` futures are kept in all (oldest completed go first).

    Example::

        store = FutureStore()
        rid = store.create("asample")
        store.set_error(rid, "prompt token 99999 is outside the vocabulary", "user")
        assert await store.wait(rid, 1.0) == {
            "error": "prompt token 99999 is outside the vocabulary", "category": "user"}
        assert await store.wait(rid, 1.0) is not None   # kept: a client may read it again
    """

    def __init__(self, *, keep_retrieved: int = 256, max_entries: int = 8192) -> None:
        # every future, newest last (a read makes it the newest); past max_entries the
        # oldest completed ones go, a pending one never does
        self._entries: LRU[str, _Entry] = LRU(
            max_entries,
            can_drop=lambda rid, entry: entry.future.done(),
            on_drop=lambda rid, entry: self._retrieved.pop(rid),
        )
        # the ones read at least once, last read last: past keep_retrieved the oldest go
        self._retrieved: LRU[str, None] = LRU(
            keep_retrieved, on_drop=lambda rid, _: self._entries.pop(rid)
        )
        self._counter = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]
        self._closed = asyncio.Event()

    def create(self, kind: str) -> str:
        """A new pending future; returns its ``request_id``.

        Example::

            store = FutureStore()
            rid = store.create("forward_backward")   # 'req-1a2b3c4d-1'
            assert rid.startswith("req-") and rid.endswith("-1")
            assert await store.wait(rid, timeout=0) is None   # pending: "try again"
        """
        request_id = f"req-{self._prefix}-{next(self._counter)}"
        loop = asyncio.get_running_loop()
        self._entries.put(request_id, _Entry(kind, loop.create_future(), time.monotonic()))
        return request_id

    def kind(self, request_id: str) -> str:
        """The kind of request (endpoint name) a ``request_id`` was made for.

        Example::

            store = FutureStore()
            assert store.kind(store.create("asample")) == "asample"
            assert store.kind("req-unknown") == ""
            assert await store.wait(store.create("optim_step"), 0) is None
        """
        entry = self._entries.get(request_id)
        return entry.kind if entry is not None else ""

    def set_result(self, request_id: str, payload: dict[str, Any]) -> None:
        """Complete a future with a success payload (a response body).

        Example::

            store = FutureStore()
            rid = store.create("create_model")
            store.set_result(rid, {"type": "create_model", "model_id": "m-1"})
            store.set_result(rid, {"type": "ignored"})   # the first result stays
            assert (await store.wait(rid, 0))["model_id"] == "m-1"
        """
        entry = self._entries.get(request_id)
        if entry is not None and not entry.future.done():
            entry.future.set_result(payload)

    def set_error(self, request_id: str, message: str, category: str) -> None:
        """Complete a future as failed: the SDK raises ``RequestFailedError(message)``.

        Example::

            store = FutureStore()
            rid = store.create("asample")
            store.set_error(rid, "unknown sampler_id 's-9'", "user")
            assert await store.wait(rid, 0) == {"error": "unknown sampler_id 's-9'", "category": "user"}
        """
        category = category if category in ("user", "server", "unknown") else "unknown"
        self.set_result(request_id, {"error": message, "category": category})

    @property
    def pending(self) -> int:
        """How many futures have no result yet.

        Example::

            store = FutureStore()
            rid = store.create("optim_step")
            assert store.pending == 1
            store.set_result(rid, {"metrics": {}})
            assert store.pending == 0   # 0 when the server is idle
            assert await store.wait(rid, 0) == {"metrics": {}}
        """
        return sum(1 for _, e in self._entries.items() if not e.future.done())

    def close(self) -> None:
        """Wake every long-poll (they answer try_again) so the server can stop.

        Example::

            store = FutureStore()
            poll = asyncio.ensure_future(store.wait(store.create("asample"), 30.0))  # a long-poll
            await asyncio.sleep(0)
            store.close()   # from another thread: loop.call_soon_threadsafe(store.close)
            assert await poll is None   # answered at once: try again
        """
        self._closed.set()

    async def wait(self, request_id: str, timeout: float) -> dict[str, Any] | None:
        """The result, waiting up to ``timeout`` s; None means "try again".

        Raises KeyError for an unknown ``request_id``.

        Example::

            store = FutureStore()
            rid = store.create("optim_step")
            payload = await store.wait(rid, 0.01)   # no result within the bound
            body = payload if payload is not None else {"type": "try_again", "request_id": rid}
            assert body["type"] == "try_again"
        """
        entry = self._entries.get(request_id)
        if entry is None:
            raise KeyError(request_id)
        if not entry.future.done() and timeout > 0 and not self._closed.is_set():
            closed = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait(
                    [entry.future, closed], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                closed.cancel()
        if not entry.future.done():
            return None
        self._retrieved.put(request_id, None)
        self._entries.get(request_id, touch=True)
        return entry.future.result()


class Sequencer:
    """Runs one model's training requests in ``seq_id`` order.

    ``submit(seq_id, kind, request_id, start)`` calls ``start()`` when every
    lower ``seq_id`` has been started (``start`` must hand the work to the
    FIFO engine worker synchronously, so start order is execution order).
    Requests without ``seq_id`` start at once. A ``seq_id`` seen before (a
    re-sent request) returns the earlier ``request_id`` instead of running
    twice. If a predecessor never arrives within ``gap_timeout`` seconds (its
    submission failed on the client side), the waiting requests go ahead.

    Example::

        started = []
        seq = Sequencer("m-1")
        seq.submit(1, "forward_backward", "req-1", lambda: started.append("fb"))   # starts fb
        seq.skip(2)       # seq 2 was refused at submission: don't wait for it
        seq.submit(3, "optim_step", "req-3", lambda: started.append("opt"))        # starts opt
        assert started == ["fb", "opt"] and seq.next_seq == 4
    """

    def __init__(self, model_id: str, *, gap_timeout: float = 30.0, remember: int = 4096) -> None:
        self.model_id = model_id
        self.next_seq = 1
        self._gap_timeout = gap_timeout
        self._remember = remember
        self._waiting: dict[int, Callable[[], None]] = {}
        self._seen: dict[int, tuple[str, str]] = {}
        self._gap_task: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """How many requests wait for a predecessor.

        Example::

            seq = Sequencer("m-2", gap_timeout=0.01)
            seq.submit(2, "optim_step", "req-2", lambda: None)
            assert seq.waiting == 1   # seq_id 1 is missing
            await asyncio.sleep(0.2)  # it never arrives: past gap_timeout, seq_id 2 goes ahead
            assert seq.waiting == 0 and seq.next_seq == 3
        """
        return len(self._waiting)

    def previous(self, seq_id: int | None, kind: str) -> str | None:
        """The ``request_id`` already given to this ``seq_id``, if it was submitted before.

        Raises ValueError when that ``seq_id`` was used by a different kind of request.

        Example::

            seq = Sequencer("m-1")
            seq.submit(1, "optim_step", "req-1", lambda: None)
            assert seq.previous(1, "optim_step") == "req-1"   # a re-sent request: the same future
            assert seq.previous(2, "optim_step") is None
            try:
                seq.previous(1, "forward_backward")
            except ValueError as err:
                assert "already used by a optim_step request" in str(err)
            else:
                raise AssertionError("a seq_id used by another kind is refused")
        """
        if seq_id is None or seq_id not in self._seen:
            return None
        seen_kind, request_id = self._seen[seq_id]
        if seen_kind != kind:
            raise ValueError(
                f"seq_id {seq_id} of model {self.model_id} was already used by a "
                f"{seen_kind} request (this one is {kind}); seq_ids must be unique per model"
            )
        return request_id

    def submit(
        self, seq_id: int | None, kind: str, request_id: str, start: Callable[[], None]
    ) -> None:
        """Start ``start`` now or when its predecessors have started.

        Example::

            started = []   # the server's start() hands the work to the engine worker
            seq = Sequencer("m-1")
            seq.submit(None, "forward", "req-0", lambda: started.append(0))   # no seq_id: at once
            seq.submit(1, "forward_backward", "req-1", lambda: started.append(1))
            assert started == [0, 1]
        """
        if seq_id is None:
            start()
            return
        self._seen[seq_id] = (kind, request_id)
        self._prune()
        if seq_id < self.next_seq:
            logger.warning(
                "model %s: seq_id %d arrived after seq_id %d had started; running it now",
                self.model_id,
                seq_id,
                self.next_seq - 1,
            )
            start()
            return
        self._waiting[seq_id] = start
        self._drain()

    def skip(self, seq_id: int | None) -> None:
        """Mark ``seq_id`` as done without work (its request was refused).

        Example::

            started = []
            seq = Sequencer("m-1")
            seq.skip(1)   # seq_id 1 was refused at submission
            seq.submit(2, "optim_step", "req-2", lambda: started.append(2))   # does not wait for 1
            assert started == [2]
        """
        if seq_id is None or seq_id < self.next_seq or seq_id in self._waiting:
            return
        self._seen.setdefault(seq_id, ("refused", ""))
        self._waiting[seq_id] = lambda: None
        self._drain()

    def _drain(self) -> None:
        while self.next_seq in self._waiting:
            start = self._waiting.pop(self.next_seq)
            self.next_seq += 1
            try:
                start()
            except Exception:  # start() reports its own errors; keep the queue moving
                logger.exception("model %s: starting a request failed", self.model_id)
        if self._waiting and (self._gap_task is None or self._gap_task.done()):
            self._gap_task = asyncio.get_running_loop().create_task(self._watch_gap())

    async def _watch_gap(self) -> None:
        while self._waiting:
            expected = self.next_seq
            await asyncio.sleep(self._gap_timeout)
            if self._waiting and self.next_seq == expected:
                first = min(self._waiting)
                logger.warning(
                    "model %s: seq_id %s never arrived in %.0f s; going on with seq_id %d",
                    self.model_id,
                    f"{expected}" if first == expected + 1 else f"{expected}..{first - 1}",
                    self._gap_timeout,
                    first,
                )
                self.next_seq = first
                self._drain()  # this task is still running, so no second watcher starts

    def _prune(self) -> None:
        if len(self._seen) > self._remember:
            for key in sorted(self._seen)[: len(self._seen) - self._remember]:
                del self._seen[key]
