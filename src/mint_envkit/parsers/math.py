"""Math answers graded the way math graders do, with math-verify, in bounded time.

:data:`math_answer` reads the final answer of a reply (``\\boxed{}`` first, then other
LaTeX or plain expressions) and :func:`math_equal` decides whether two answers are the
same mathematical object: ``0.5`` = ``1/2`` = ``\\frac{1}{2}``, ``\\{1,2\\}`` = ``\\{2,1\\}``,
intervals, ``5\\text{ cm}`` = ``5``, ``x=2`` = ``2``. Both use the ``math-verify``
package (``pip install 'mint-envkit[math]'``), loaded only when first used.

math-verify's own timeout uses ``signal.alarm``, which fails off the main thread and
cannot stop a runaway sympy computation (``9^{9^{9^{9}}}``). So every call runs in a
worker process with math-verify's timeout disabled, and the worker is killed when a call
takes longer than ``timeout`` seconds, counted from the call's submission (waiting for
a free worker included, starting one not): the parse gives status ``"timeout"``, the
check gives ``False``. No signals, safe from any thread, a pathological answer costs at
most ``timeout`` seconds. Up to :data:`MAX_WORKERS` workers (lanes, at least 2) run at
once; each starts once (about 2 s, importing sympy) and is then reused. Each worker's
address space is capped at :data:`DEFAULT_MATH_MEMORY_MB` MiB; a call that runs out of
memory fails: status ``"timeout"`` and ``False`` when the worker notices (it is then
replaced), else math-verify's own "no answer" / ``False``. A worker dies with this
process, even after ``kill -9``. Both limits: :func:`configure_math_workers`. A call
that has run over a second stops holding its lane: the next caller gets a further
worker, up to twice :data:`MAX_WORKERS`.

Answers that are plainly one number never reach a worker once math-verify has loaded
(a first call did): a reply whose only ``\\boxed{}`` holds an integer or ``\\frac{a}{b}``
(or that is only an integer) is read here, and two plain numbers (integers, decimals,
``a/b``, ``\\frac{a}{b}``) are compared here when the verdict is plain (equal; different
integers; more than 0.1% apart), giving what math-verify gives. So easy answers are not
queued behind hard ones.

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
import os
import re
import threading
from fractions import Fraction
from typing import Any

from mint_envkit.errors import ConfigError, MissingExtraError
from mint_envkit.parsers._math_pool import INSTALL, _Pool
from mint_envkit.parsers.parser import Parser
from mint_envkit.parsers.result import ParseResult
from mint_envkit.parsers.tags import boxed

DEFAULT_MATH_TIMEOUT = 5.0
"""Seconds one math-verify call may take, from its submission, before it gives up (waiting
for a free worker counts; starting one does not). math-verify's own default is also 5 s.

Example::

    assert DEFAULT_MATH_TIMEOUT == 5.0
"""

MAX_WORKERS = max(2, min(4, os.cpu_count() or 1))
"""The default number of math-verify worker processes alive at once (the pool's lanes).

At least 2, so one hard answer never holds every lane; at most 4. Change it with
:func:`configure_math_workers`.

Example::

    assert 2 <= MAX_WORKERS <= 4
"""

DEFAULT_MATH_MEMORY_MB = 1024
"""The default address-space cap of one math-verify worker, in MiB (``RLIMIT_AS``).

A worker that reaches it (``(x+1)^{1000000000}`` does within a second) fails the call
with status ``"timeout"`` and is replaced. Change it with :func:`configure_math_workers`.

Example::

    assert DEFAULT_MATH_MEMORY_MB == 1024
"""

_MIN_MEMORY_MB = 256  # math-verify and sympy need about 100 MiB of address space to run


def _require_math_verify() -> None:
    if importlib.util.find_spec("math_verify") is None:
        raise MissingExtraError(
            f"math answers need the math-verify package, which is not installed; run {INSTALL}"
        )


_POOL = _Pool(MAX_WORKERS, DEFAULT_MATH_MEMORY_MB)
_POOL_LOCK = threading.Lock()
atexit.register(lambda: _POOL.close())  # the pool of this process, also after a fork


def _forget_parent_workers() -> None:
    """In a forked child the parent's workers are the parent's: start afresh, kill nothing."""
    global _POOL, _POOL_LOCK
    started = _POOL.started
    _POOL = _Pool(_POOL.lanes, _POOL.memory_mb)
    _POOL.started = started
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_workers)


def configure_math_workers(*, workers: int | None = None, memory_mb: int | None = None) -> None:
    """Set the number of math-verify workers (lanes) and each one's memory cap in MiB.

    Idle workers are stopped at once and calls in progress finish on their old worker;
    the next calls start workers with the new settings. ``None`` keeps a setting.
    Defaults: :data:`MAX_WORKERS` workers, :data:`DEFAULT_MATH_MEMORY_MB` MiB each.

    Example::

        configure_math_workers(workers=2, memory_mb=2048)
        configure_math_workers(workers=MAX_WORKERS, memory_mb=DEFAULT_MATH_MEMORY_MB)
    """
    global _POOL
    for name, value, least in (("workers", workers, 1), ("memory_mb", memory_mb, _MIN_MEMORY_MB)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < least
        ):
            raise ConfigError(
                f"{name} must be an int >= {least}, got {value!r}; "
                f"e.g. configure_math_workers(workers={MAX_WORKERS}, "
                f"memory_mb={DEFAULT_MATH_MEMORY_MB})"
            )
    with _POOL_LOCK:
        old = _POOL
        _POOL = _Pool(
            old.lanes if workers is None else workers,
            old.memory_mb if memory_mb is None else memory_mb,
        )
        _POOL.started = old.started
    old.close(busy_too=False)


def _ask(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    if not _POOL.started:
        _require_math_verify()
    return _POOL.ask(request, timeout)


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


# The fast path: answers simple enough to read and compare here, without a worker.
_SIMPLE_BOX = re.compile(
    r"\\boxed\{\s*([+-]?\d{1,40}|-?\\frac\{\d{1,40}\}\{\d{1,40}\})\s*\}", re.ASCII
)
_INTEGER = re.compile(r"\s*-?\d{1,40}\s*", re.ASCII)
_NUMBER = re.compile(r"\s*([+-]?)(\d{1,40}(?:\.\d{1,40})?|\.\d{1,40})\s*", re.ASCII)
_RATIO = re.compile(r"\s*([+-]?)(\d{1,40})\s*/\s*(\d{1,40})\s*", re.ASCII)
_FRAC = re.compile(r"\s*([+-]?)\\[dt]?frac\{\s*(\d{1,40})\s*\}\{\s*(\d{1,40})\s*\}\s*", re.ASCII)
_CLOSE = Fraction(1, 1000)  # nearer than this (relative), math-verify's rounding decides


def _simple_reading(text: str) -> str | None:
    """The answer math-verify would read from ``text``, when it is plainly one integer or
    one ``\\frac{a}{b}`` in the only box (or the whole text is an integer); else None."""
    if _INTEGER.fullmatch(text):
        return text.strip()
    if text.count("\\boxed") != 1 or any(m in text for m in ("$", "\\(", "\\[", "\\fbox")):
        return None
    box = _SIMPLE_BOX.search(text)
    return None if box is None else box.group(1)


def _number(text: str) -> tuple[Fraction, bool] | None:
    """A plain number (``-3``, ``0.25``, ``3/4``, ``\\frac{3}{4}``) and whether it is an
    integer, or None when ``text`` is anything else."""
    match = _NUMBER.fullmatch(text)
    if match:
        sign, digits = match.groups()
        value = Fraction(digits)
        return (-value if sign == "-" else value), "." not in digits
    match = _RATIO.fullmatch(text) or _FRAC.fullmatch(text)
    if match and int(match.group(3)) != 0:
        sign, top, bottom = match.groups()
        value = Fraction(int(top), int(bottom))
        return (-value if sign == "-" else value), False
    return None


def _simple_equal(value: str, answer: str) -> bool | None:
    """math-verify's verdict on two plain numbers, or None when it is not plain to see:
    equal values are equal; different integers, or values apart by more than 0.1%,
    differ; nearer decimals are left to math-verify (it rounds to 6 places)."""
    left, right = _number(value), _number(answer)
    if left is None or right is None:
        return None
    (a, a_int), (b, b_int) = left, right
    if a == b:
        return True
    if (a_int and b_int) or abs(a - b) > _CLOSE * max(1, abs(a), abs(b)):
        return False
    return None


def _value(reply: dict[str, Any] | None) -> ParseResult:
    if reply is None or reply.get("memory"):
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
    if _POOL.started:
        simple = _simple_reading(text)
        if simple is not None:
            return ParseResult.ok(simple)
    return _value(_ask({"op": "extract", "text": text}, limit))


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
    if _POOL.started:
        verdict = _simple_equal(str(value), str(answer))
        if verdict is not None:
            return verdict
    request = {"op": "equal", "value": str(value), "answer": str(answer)}
    reply = _ask(request, limit)
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
        assert result.status == "ok" and equal
    """
    if not isinstance(text, str):
        raise TypeError(f"grade_math expects the reply as a str, got {type(text).__name__}")
    limit = _check_timeout(timeout)
    early = _precheck(text)
    if early is not None:
        return early, False
    if _POOL.started:
        simple = _simple_reading(text)
        verdict = None if simple is None else _simple_equal(simple, str(answer))
        if simple is not None and verdict is not None:
            return ParseResult.ok(simple), verdict
    reply = _ask({"op": "grade", "text": text, "answer": str(answer)}, limit)
    result = _value(reply)
    return result, bool(result and reply is not None and reply.get("equal") is True)
