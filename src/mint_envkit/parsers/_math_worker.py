"""The math-verify worker process behind :mod:`mint_envkit.parsers.math` (not imported).

Run as a script (``python -c`` + ``runpy``): it imports only the standard library and
math-verify, so it works without ``mint_envkit`` on the path. It reads one JSON request
per line on stdin and writes one JSON reply per line on stdout; math-verify's own
timeouts (``signal.alarm``) are disabled, the parent kills this process instead when a
request takes too long. The first line it writes is ``{"ready": true}`` or
``{"ready": false, "error": "..."}``.

Arguments: ``MEMORY_MB PARENT_PID``. After importing math-verify the worker caps its own
address space at ``MEMORY_MB`` MiB (``RLIMIT_AS``): a runaway expression then fails with
``MemoryError`` instead of growing without bound. A request that ran out of memory
(a ``MemoryError`` seen by the worker or logged by math-verify, or a peak RSS that
reached 90% of the cap) is answered ``{"memory": true}`` and the worker exits, so the
parent starts a clean one. The worker dies with its parent: on Linux it asks the kernel
for ``SIGKILL`` when the parent goes (``prctl(PR_SET_PDEATHSIG)``), and on every system
a forked watchdog process polls the worker's parent every 0.2 s and kills the worker when
it changes (a thread could not: a runaway computation may hold the GIL for minutes).

Requests:

- ``{"op": "extract", "text": reply}`` -> ``{"value": str | null}``: the final answer
  of the reply as math-verify extracts it (``\\boxed{}`` first), or null when none.
- ``{"op": "equal", "value": str, "answer": str}`` -> ``{"equal": bool}``.
- ``{"op": "grade", "text": reply, "answer": str}`` -> ``{"value": ..., "equal": bool}``.
"""

import json
import logging
import os
import resource
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PARENT_POLL_S = 0.2
_MEMORY_HIT = 0.9  # a peak RSS at this share of the cap counts as running out


def _die_with_parent(parent_pid):
    """SIGKILL this process when ``parent_pid`` ends: by the kernel on Linux, and by a
    watchdog process on every system."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends this process
    if os.getppid() != parent_pid:  # the parent died before the prctl call
        os._exit(0)
    _start_watchdog(parent_pid)


def _parent_gone(worker, parent_pid):
    try:
        with open(f"/proc/{worker}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1]) != parent_pid
    except (OSError, ValueError, IndexError):
        pass  # no /proc: ask whether the parent still exists
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _start_watchdog(parent_pid):
    """Fork a small process that polls for the parent and kills this worker when it is gone.

    A thread here could not do it: a runaway computation can hold the GIL in one C call
    (a huge integer power) for minutes. Forked before math-verify is imported, while this
    process has one thread; the watchdog ends by itself when the worker ends.
    """
    worker = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reap it if it ends first
        return
    try:
        for fd in (0, 1, 2):  # keep no pipe of the worker open
            os.close(fd)
        while os.getppid() == worker:
            if _parent_gone(worker, parent_pid):
                os.kill(worker, signal.SIGKILL)
                break
            time.sleep(_PARENT_POLL_S)
    finally:
        os._exit(0)


def _cap_memory(memory_mb):
    limit = memory_mb * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


class _MemoryErrors(logging.Handler):
    """Notes a MemoryError that math-verify caught and logged (it returns False or [])."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = False

    def emit(self, record):
        if record.exc_info and isinstance(record.exc_info[1], MemoryError):
            self.seen = True


def _peak_rss_bytes():
    """This process's own peak resident memory.

    Linux keeps ``ru_maxrss`` across ``execve``: a worker started from a big parent (a
    training process with a model loaded) would report the parent's peak and look out of
    memory on every call. ``VmHWM`` belongs to the worker's own address space.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _wrap(text):
    """A bare answer as math-verify reads it best: in a box, unless already delimited."""
    if "\\boxed" in text or "$" in text or "\\(" in text or "\\[" in text:
        return text
    return "\\boxed{" + text + "}"


def _parse(parse, text):
    return parse(text, parsing_timeout=None)


def _extracted(parsed):
    if not parsed:
        return None
    if len(parsed) > 1 and isinstance(parsed[1], str) and parsed[1].strip():
        return parsed[1].strip()
    return str(parsed[0])


def _equal(parse, verify, value, answer):
    gold = _parse(parse, _wrap(answer))
    target = _parse(parse, _wrap(value))
    if not gold or not target:
        return value.strip() == answer.strip()
    return bool(verify(gold, target, timeout_seconds=None))


def _answer(request, parse, verify):
    op = request.get("op")
    if op == "extract":
        return {"value": _extracted(_parse(parse, request["text"]))}
    if op == "equal":
        return {"equal": _equal(parse, verify, request["value"], request["answer"])}
    if op == "grade":
        value = _extracted(_parse(parse, request["text"]))
        equal = value is not None and _equal(parse, verify, value, request["answer"])
        return {"value": value, "equal": equal}
    return {"error": f"unknown op {op!r}"}


def _watch_math_verify_logs():
    """Silence math-verify's log, but watch it for the MemoryErrors it swallows."""
    watcher = _MemoryErrors()
    log = logging.getLogger("math_verify")
    log.handlers[:] = [watcher]
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return watcher


def main():
    memory_mb, parent_pid = (int(arg) for arg in sys.argv[1:3])
    _die_with_parent(parent_pid)
    sys.setrecursionlimit(10_000)
    try:
        from math_verify import parse, verify
    except Exception as err:  # reported to the parent, which raises a clear error
        print(json.dumps({"ready": False, "error": f"{type(err).__name__}: {err}"}), flush=True)
        return
    watcher = _watch_math_verify_logs()
    limit = _cap_memory(memory_mb)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        watcher.seen = False
        try:
            reply = _answer(json.loads(line), parse, verify)
        except MemoryError:
            reply = {"memory": True}
        except Exception as err:  # a bad expression must not end the worker
            reply = {"error": f"{type(err).__name__}: {err}"}
        if watcher.seen or _peak_rss_bytes() >= _MEMORY_HIT * limit:
            reply = {"memory": True}
        print(json.dumps(reply), flush=True)
        if reply.get("memory"):
            return  # a clean worker replaces this one


if __name__ == "__main__":
    main()
