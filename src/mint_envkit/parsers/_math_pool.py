"""The math-verify worker processes behind :mod:`mint_envkit.parsers.math` (private).

A :class:`_Pool` hands one idle worker to one caller at a time, in order of arrival, on
``lanes`` lanes. A call that has run over ``SLOW_S`` (1 s, likely a hopeless input)
stops holding its lane: the next caller gets a further worker, up to ``2 * lanes``
workers at once (each under its memory cap); only ``lanes`` are kept idle. Each call has
a deadline measured from its submission: waiting for a turn and computing share the
budget, so a flood of hard inputs delays a call by at most its own ``timeout``. Starting a worker (importing sympy, about 2 s) is not charged to the
call. Workers are spawned from one long-lived thread of the pool, because Linux sends a
worker's parent-death signal when the *thread* that spawned it ends, not the process.

Each worker is capped at ``memory_mb`` MiB of address space (``RLIMIT_AS``, set by the
worker after importing math-verify) and dies with this process (``PR_SET_PDEATHSIG`` on
Linux, plus a thread polling ``os.getppid()``): see ``_math_worker.py``.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mint_envkit.errors import MissingExtraError

SLOW_S = 1.0  # a call running longer than this stops holding its lane
STARTUP_TIMEOUT = 120.0  # importing sympy on a busy machine; not part of a call's budget
INSTALL = "pip install 'mint-envkit[math]' (or: pip install math-verify)"
_WORKER = Path(__file__).with_name("_math_worker.py")


class _Spawner:
    """One daemon thread that starts every worker, so a worker's parent thread lives on."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[list[str], Future[subprocess.Popen[str]]]]
        self.jobs = queue.SimpleQueue()
        threading.Thread(target=self._run, name="math-verify-spawner", daemon=True).start()

    def _run(self) -> None:
        while True:
            argv, future = self.jobs.get()
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    encoding="utf-8",
                    errors="replace",
                )
            except BaseException as err:  # handed to the caller, who raises it
                future.set_exception(err)
            else:
                future.set_result(process)

    def spawn(self, argv: list[str]) -> subprocess.Popen[str]:
        future: Future[subprocess.Popen[str]] = Future()
        self.jobs.put((argv, future))
        return future.result(timeout=STARTUP_TIMEOUT)


class _Worker:
    """One math-verify process; its replies arrive on a queue filled by a reader thread."""

    def __init__(self, spawner: _Spawner, memory_mb: int) -> None:
        bootstrap = f"import runpy; runpy.run_path({str(_WORKER)!r}, run_name='__main__')"
        argv = [sys.executable, "-u", "-c", bootstrap, str(memory_mb), str(os.getpid())]
        self.process = spawner.spawn(argv)
        self.replies: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="math-verify-reader", daemon=True).start()
        ready = self._next(STARTUP_TIMEOUT)
        if ready is None or not ready.get("ready"):
            self.kill()
            reason = "it did not start" if ready is None else ready.get("error", "unknown")
            raise MissingExtraError(
                f"the math-verify worker could not load math-verify ({reason}); run {INSTALL}"
            )

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)
        self.replies.put(None)

    def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self.replies.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None
        if line is None:
            return None
        try:
            reply = json.loads(line)
        except ValueError:
            return None
        return reply if isinstance(reply, dict) else None

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The reply to ``request``, or None (and the process killed) after ``timeout`` s.

        A worker that died without replying (killed by the kernel, aborted by a C
        library out of memory) gives ``{"memory": True}``: it ran out of its budget.
        """
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError:
            self.kill()
            return None
        reply = self._next(timeout)
        if reply is None:
            died = self.process.poll() is not None
            self.kill()
            return {"memory": True} if died else None
        if reply.get("memory"):
            self.kill()  # it exits by itself; a fresh worker replaces it
        return reply

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class _Pool:
    """Idle workers handed to one caller at a time; a dead or timed-out one is replaced."""

    def __init__(self, lanes: int, memory_mb: int) -> None:
        self.lanes = lanes
        self.memory_mb = memory_mb
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.lock = threading.Lock()
        self.turns = threading.Condition()
        self.waiting: collections.deque[object] = collections.deque()  # first come, first in
        self.running: dict[object, float] = {}  # each call in a worker -> when it began
        self.workers: list[_Worker] = []
        self.spawner: _Spawner | None = None
        self.started = False  # True once a worker loaded math-verify
        self.closed = False

    def _new_worker(self) -> _Worker:
        with self.lock:
            if self.spawner is None:
                self.spawner = _Spawner()
            spawner = self.spawner
        worker = _Worker(spawner, self.memory_mb)
        with self.lock:
            self.workers.append(worker)
            self.started = True
        return worker

    def _enter(self, deadline: float) -> object | None:
        """A turn in a worker, in order of arrival, or None when ``deadline`` passed first.

        A lane is free when fewer than ``lanes`` calls are running that began under
        :data:`SLOW_S` ago: a slow (likely hopeless) call stops holding its lane and a
        further worker starts beside it, up to ``2 * lanes`` workers in all.
        """
        turn = object()
        with self.turns:
            self.waiting.append(turn)
            try:
                while True:
                    now = time.monotonic()
                    young = [begun for begun in self.running.values() if now - begun < SLOW_S]
                    full = len(self.running) >= 2 * self.lanes
                    if self.waiting[0] is turn and len(young) < self.lanes and not full:
                        self.running[turn] = now
                        return turn
                    if now >= deadline:
                        return None
                    wait = deadline - now
                    if young and not full:  # a lane frees up when a call turns slow
                        wait = min(wait, min(young) + SLOW_S - now)
                    self.turns.wait(max(wait, 0.001))
            finally:
                self.waiting.remove(turn)
                self.turns.notify_all()

    def _leave(self, turn: object) -> None:
        with self.turns:
            del self.running[turn]
            self.turns.notify_all()

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The worker's reply, or None when ``timeout`` s (from now) passed first."""
        deadline = time.monotonic() + timeout
        turn = self._enter(deadline)
        if turn is None:
            return None  # every lane stayed busy past this call's deadline
        try:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                started = time.monotonic()
                worker = self._new_worker()
                deadline += time.monotonic() - started  # starting is not the call's time
            reply = worker.ask(request, deadline - time.monotonic())
            with self.lock:
                keep = worker.alive and not self.closed and self.idle.qsize() < self.lanes
                if not keep and worker in self.workers:
                    self.workers.remove(worker)
            if keep:
                self.idle.put(worker)
            else:
                worker.kill()  # a burst worker beyond the lanes is not kept idle
            return reply
        finally:
            self._leave(turn)

    def close(self, *, busy_too: bool = True) -> None:
        """Kill the idle workers (and, with ``busy_too``, those in a call); refuse new ones.

        A busy worker that is spared is killed when its call returns.
        """
        with self.lock:
            self.closed = True
            if busy_too:
                doomed, self.workers = self.workers, []
            else:
                doomed = []
                while True:
                    try:
                        doomed.append(self.idle.get_nowait())
                    except queue.Empty:
                        break
                self.workers = [worker for worker in self.workers if worker not in doomed]
        for worker in doomed:
            worker.kill()
