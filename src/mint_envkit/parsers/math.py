"""Math answers graded the way math graders do, with math-verify, in bounded time.

:data:`math_answer` reads the final answer of a reply (``\\boxed{}`` first, then other
LaTeX or plain expressions) and :func:`math_equal` decides whether two answers are the
same mathematical object: ``0.5`` = ``1/2`` = ``\\frac{1}{2}``, ``\\{1,2\\}`` = ``\\{2,1\\}``,
intervals, ``5\\text{ cm}`` = ``5``, ``x=2`` = ``2``. Both use the ``math-verify``
package (``pip install 'mint-envkit[math]'``), loaded only when first used.

math-verify's own timeout uses ``signal.alarm``, which fails off the main thread and
cannot stop a runaway sympy computation (``9^{9^{9^{9}}}``). So every call runs in a
worker process with math-verify's timeout disabled, and the worker is killed when a call
takes longer than ``timeout`` seconds: the parse gives status ``"timeout"``, the check
gives ``False``. No signals, safe from any thread, a pathological answer costs at most
``timeout`` seconds. Up to :data:`MAX_WORKERS` workers run at once (one per concurrent
caller); each starts once (about 2 s, importing sympy) and is then reused.

Example::

    from mint_envkit.parsers import math_answer, math_equal

    result = math_answer(r"so the answer is \\boxed{\\frac{1}{2}}")
    assert result.value == r"\\frac{1}{2}"
    assert math_equal(result.value, "0.5")
    assert math_answer(r"\\boxed{9^{9^{9^{9}}}").status == "truncated"
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mint_envkit.errors import ConfigError, MissingExtraError
from mint_envkit.parsers.parser import Parser
from mint_envkit.parsers.result import ParseResult
from mint_envkit.parsers.tags import boxed

__all__ = [
    "DEFAULT_MATH_TIMEOUT",
    "MAX_WORKERS",
    "grade_math",
    "math_answer",
    "math_equal",
    "read_math_answer",
]

DEFAULT_MATH_TIMEOUT = 5.0
"""Seconds one math-verify call may take before its worker is killed (math-verify's own
default is also 5 s).

Example::

    assert DEFAULT_MATH_TIMEOUT == 5.0
"""

MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
"""The most math-verify worker processes alive at once (one per concurrent caller).

Example::

    assert 1 <= MAX_WORKERS <= 4
"""

_STARTUP_TIMEOUT = 120.0  # importing sympy on a busy machine; not part of a call's budget
_WORKER = Path(__file__).with_name("_math_worker.py")
_INSTALL = "pip install 'mint-envkit[math]' (or: pip install math-verify)"


def _require_math_verify() -> None:
    if importlib.util.find_spec("math_verify") is None:
        raise MissingExtraError(
            f"math answers need the math-verify package, which is not installed; run {_INSTALL}"
        )


class _Worker:
    """One math-verify process; its replies arrive on a queue filled by a reader thread."""

    def __init__(self) -> None:
        bootstrap = f"import runpy; runpy.run_path({str(_WORKER)!r}, run_name='__main__')"
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-c", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self.replies: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="math-verify-reader", daemon=True).start()
        ready = self._next(_STARTUP_TIMEOUT)
        if ready is None or not ready.get("ready"):
            self.kill()
            reason = "it did not start" if ready is None else ready.get("error", "unknown")
            raise MissingExtraError(
                f"the math-verify worker could not load math-verify ({reason}); run {_INSTALL}"
            )

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)
        self.replies.put(None)

    def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self.replies.get(timeout=timeout)
        except queue.Empty:
            return None
        return None if line is None else json.loads(line)

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The reply to ``request``, or None (and the process killed) after ``timeout`` s."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError:
            self.kill()
            return None
        reply = self._next(timeout)
        if reply is None:
            self.kill()
        return reply

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class _Pool:
    """Idle workers handed to one caller at a time; a timed-out worker is replaced."""

    def __init__(self) -> None:
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.slots = threading.BoundedSemaphore(MAX_WORKERS)
        self.lock = threading.Lock()
        self.workers: list[_Worker] = []

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        with self.slots:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                _require_math_verify()
                worker = _Worker()
                with self.lock:
                    self.workers.append(worker)
            reply = worker.ask(request, timeout)
            if worker.alive:
                self.idle.put(worker)
            else:
                with self.lock:
                    self.workers.remove(worker)
            return reply

    def close(self) -> None:
        with self.lock:
            for worker in self.workers:
                worker.kill()
            self.workers.clear()


_POOL = _Pool()
atexit.register(lambda: _POOL.close())  # the pool of this process, also after a fork


def _forget_parent_workers() -> None:
    """In a forked child the parent's workers are the parent's: start afresh, kill nothing."""
    global _POOL
    _POOL = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_workers)


def _check_timeout(timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}; e.g. 5.0")
    return float(timeout)


def _precheck(text: str) -> ParseResult | None:
    """A result decided without math-verify: a blank reply, or only an unclosed box."""
    if not text.strip():
        return ParseResult.fail("empty")
    box = boxed(text)
    if box.status in ("truncated", "empty"):
        return box
    return None


def _value(reply: dict[str, Any] | None) -> ParseResult:
    if reply is None:
        return ParseResult.fail("timeout")
    value = reply.get("value")
    if not isinstance(value, str) or not value.strip():
        return ParseResult.fail("no_match")
    return ParseResult.ok(value)


def read_math_answer(text: str, timeout: float = DEFAULT_MATH_TIMEOUT) -> ParseResult:
    """The final math answer of ``text``, read by math-verify within ``timeout`` seconds.

    The function behind :data:`math_answer`; call it for another time limit, or wrap it:
    ``Parser.from_function(lambda t: read_math_answer(t, 1.0), name="math_answer")``.

    Example::

        assert read_math_answer(r"\\boxed{2}", timeout=10.0).value == "2"
    """
    limit = _check_timeout(timeout)
    early = _precheck(text)
    if early is not None:
        return early
    return _value(_POOL.ask({"op": "extract", "text": text}, limit))


math_answer = Parser(name="math_answer", fn=read_math_answer)
"""The final answer of a math reply, as math-verify reads it (install the ``math`` extra).

The last ``\\boxed{}`` wins; without a box, math-verify looks for a LaTeX or plain final
answer ("the answer is 42"). The value is the answer's text as math-verify normalizes
it (LaTeX kept, ``\\text{}`` units dropped, ``0.5`` may read as ``\\frac{1}{2}``); compare it with :func:`math_equal`. Statuses: ``ok``,
``empty`` (blank reply or blank box), ``truncated`` (a box opened, none closed),
``no_match`` (nothing math-verify reads as an answer), ``timeout`` (reading took over
:data:`DEFAULT_MATH_TIMEOUT` s). Raises :class:`~mint_envkit.errors.MissingExtraError`
when math-verify is not installed.

Example::

    assert math_answer(r"so \\boxed{\\frac{1}{2}}").value == r"\\frac{1}{2}"
    assert math_answer("").status == "empty"
"""


def math_equal(value: object, answer: object, *, timeout: float = DEFAULT_MATH_TIMEOUT) -> bool:
    """True when ``value`` and the reference ``answer`` are the same math answer.

    Both are read by math-verify (a bare answer is read as if boxed) and compared
    symbolically and numerically: ``0.5`` = ``1/2`` = ``\\frac{1}{2}``, sets in any order,
    intervals, ``\\text{}`` units dropped, ``x = 2`` = ``2``. When math-verify reads no
    expression in one of them, the stripped strings are compared. A comparison that takes
    over ``timeout`` seconds (or fails inside math-verify) gives ``False``. A check for
    :func:`~mint_envkit.rewards.correct` and :meth:`SingleTurnEnv.check`.

    Example::

        assert math_equal(r"\\frac{1}{2}", "0.5") and math_equal(r"\\{2, 1\\}", r"\\{1,2\\}")
        assert not math_equal("3", "4")
    """
    limit = _check_timeout(timeout)
    request = {"op": "equal", "value": str(value), "answer": str(answer)}
    reply = _POOL.ask(request, limit)
    return bool(reply is not None and reply.get("equal") is True)


def grade_math(
    text: str, answer: object, *, timeout: float = DEFAULT_MATH_TIMEOUT
) -> tuple[ParseResult, bool]:
    """Read the final answer of ``text`` and compare it with ``answer`` in one worker call.

    Returns ``(parse result, equal)``. When reading or comparing takes over ``timeout``
    seconds the result has status ``"timeout"`` and ``equal`` is ``False``: a
    pathological answer counts as unparsed, with its own status. The reward
    :func:`~mint_envkit.rewards.math_correct` is built on it.

    Example::

        result, equal = grade_math(r"so \\boxed{0.5}", r"\\frac{1}{2}")
        assert result.value == "0.5" and equal
    """
    if not isinstance(text, str):
        raise TypeError(f"grade_math expects the reply as a str, got {type(text).__name__}")
    limit = _check_timeout(timeout)
    early = _precheck(text)
    if early is not None:
        return early, False
    reply = _POOL.ask({"op": "grade", "text": text, "answer": str(answer)}, limit)
    result = _value(reply)
    return result, bool(result and reply is not None and reply.get("equal") is True)
