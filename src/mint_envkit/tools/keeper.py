"""The keeper: a small process between the kit and a server it starts, that ends everything the server started.

A server the kit starts (an MCP server over stdio or HTTP) may start processes of its
own, and those may leave its process group (``setsid``, a daemon's double fork), so
killing the group misses them. The kit therefore starts ``command`` through this
file, run as a script by the same interpreter (``python -I -S keeper.py PARENT GRACE
-- command...``, stdlib only). The keeper

- makes itself a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): every process
  below it whose parent exits is re-parented to it instead of to init, so all the
  server's descendants, ``setsid`` ones included, stay in its tree;
- starts the server in a process group of its own (so a process of the server that
  stops or signals its own group, ``kill(0, SIGSTOP)``, does not reach the keeper),
  with the keeper's stdin, stdout and stderr, then lets go of stdin and stdout itself
  (the kit sees the server's end of file, not the keeper's);
- ends the whole tree (SIGKILL to every descendant, round after round, until none is
  left) when the server exits, when it is sent SIGTERM, SIGINT or SIGHUP (passed on
  to the server, which gets ``GRACE`` seconds to exit first), or when its parent,
  the kit's interpreter, is gone (it exited or was killed: the keeper watches it with
  a pidfd, or polls ``getppid`` where there is none);
- exits with the server's exit status (128 + the signal's number for a signal).

What it cannot do alone: a process of the server can still signal the keeper by its pid
(same user). The kit covers a stopped keeper (``SIGSTOP``): when a keeper has not
ended within its time, the kit resumes it and ends the keeper's tree itself from
outside (:func:`kill_tree`; a stopped keeper is still the subreaper that holds the
tree together). A process that SIGKILLs the keeper itself leaves its tree behind,
and a process started for the server by something outside its tree (a daemon it
asks over a socket) was never in it. :func:`guarded` is how the kit wraps a command;
where no keeper can run (not Linux, no interpreter path, no ``prctl``, or
``MINT_ENVKIT_KEEPER=0`` in the environment) it returns the command unchanged and logs
a warning once: the kit then ends the server's process group only. ``docs/tools.md``
states the guarantees.

Example::

    # not run: starts processes
    from mint_envkit.tools.keeper import guarded

    guarded(["node", "server.js"])
    # ['/usr/bin/python3', '-I', '-S', '.../keeper.py', '4242', '2.0', '--', 'node', 'server.js']
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import sys
import time
from collections.abc import Sequence

GRACE_S = 2.0
"""Seconds a server has to exit after the keeper passes on a SIGTERM, before it and its tree are killed."""
END_WAIT_S = 5.0
"""Seconds the keeper keeps killing a tree that will not end (processes in uninterruptible sleep)."""
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_POLL_S = 0.5
_PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_STATE: dict[str, bool] = {}


def _prctl(option: int, value: int | ctypes.c_int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        arg = ctypes.byref(value) if isinstance(value, ctypes.c_int) else ctypes.c_ulong(value)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def supported() -> bool:
    """True where a keeper runs: Linux with ``prctl``, an interpreter path, and ``MINT_ENVKIT_KEEPER`` not ``0``.

    Example::

        supported()  # True on Linux
    """
    if "supported" not in _STATE:
        probe = ctypes.c_int(0)
        _STATE["supported"] = (
            sys.platform == "linux"
            and bool(sys.executable)
            and os.environ.get("MINT_ENVKIT_KEEPER", "1") != "0"
            and _prctl(_PR_GET_CHILD_SUBREAPER, probe)
        )
    return _STATE["supported"]


def guarded(command: Sequence[str], *, grace_s: float = GRACE_S) -> list[str]:
    """``command`` run through a keeper, so no process it starts outlives it (see the module).

    Where no keeper runs (:func:`supported` is False) the command comes back as it
    is, and a warning says, once per process, that only the server's process group
    will be ended.

    Example::

        # not run: the interpreter's path differs
        guarded(["node", "server.js"])[-3:]  # ['--', 'node', 'server.js']
    """
    if not supported():
        if not _STATE.get("warned"):
            import logging  # here: the keeper script itself never logs

            _STATE["warned"] = True
            logging.getLogger("mint_envkit.tools").warning(
                "mint-envkit: no keeper process for the servers the kit starts (it needs "
                "Linux's prctl(PR_SET_CHILD_SUBREAPER) and sys.executable, and "
                "MINT_ENVKIT_KEEPER not 0; platform %s); such a server is ended with its "
                "process group only, so a process it starts with setsid (a daemon) may "
                "outlive the episode and the interpreter",
                sys.platform,
            )
        return list(command)
    return [
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        str(os.getpid()),
        repr(float(grace_s)),
        "--",
        *command,
    ]


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (children first-found order), read from ``/proc``.

    Example::

        descendants(os.getpid())  # [] in a process that started none
    """
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def _state(pid: int) -> str:
    """The process's state letter (``R``, ``S``, ``T`` stopped, ``Z`` zombie; ``""`` when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def is_stopped(pid: int) -> bool:
    """True when ``pid`` is stopped (``SIGSTOP``, ``SIGTSTP``) or traced.

    Example::

        assert not is_stopped(os.getpid())
    """
    return _state(pid) in ("T", "t")


def kill_tree(root: int, wait_s: float = END_WAIT_S) -> bool:
    """From outside: SIGKILL every live process below ``root`` until none is left, then
    ``root``; False if some outlast ``wait_s``. Sync (sleeps between rounds).

    For a keeper that did not end its own tree (it was stopped): while it lives, even
    stopped, it is the subreaper its tree's orphans go to, so they stay below it.

    Example::

        # not run: kills processes
        kill_tree(keeper_pid)  # True: the keeper and everything below it are gone
    """
    deadline = time.monotonic() + wait_s
    while True:
        left = [pid for pid in descendants(root) if _state(pid) not in ("", "Z")]
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(root, signal.SIGKILL)
    return True


def _reap(server: int) -> int | None:
    """Reap every ended child; the server's wait status if it was among them."""
    status = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == server:
            status = code


def end_tree(wait_s: float = END_WAIT_S) -> bool:
    """SIGKILL every descendant of this process until none is left; False if some outlast ``wait_s``.

    Example::

        # not run: kills this process's children
        end_tree()  # True: nothing below this process is left
    """
    deadline = time.monotonic() + wait_s
    while True:
        _reap(-1)
        left = descendants(os.getpid())
        if not left:
            return True
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


class _Parent:
    """The kit's interpreter, watched: readable pidfd (or a poll) when it is gone."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.fd = os.pidfd_open(pid)

    def gone(self) -> bool:
        return os.getppid() != self.pid


def _exit_code(status: int | None) -> int:
    if status is None:
        return 1
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"mint-envkit keeper: {text}", file=sys.stderr, flush=True)


def _wait(selector: selectors.BaseSelector, wake: int, timeout: float) -> None:
    selector.select(max(0.0, timeout))
    with contextlib.suppress(BlockingIOError, OSError):
        while os.read(wake, 4096):
            pass


def main(argv: Sequence[str]) -> int:
    """Run ``PARENT GRACE -- command...`` as a keeper (see the module); the exit code.

    Example::

        # not run: the keeper's script entry (python keeper.py PARENT GRACE -- command...)
        main(["4242", "2.0", "--", "node", "server.js"])
    """
    if len(argv) < 4 or argv[2] != "--":
        _say("usage: keeper.py PARENT_PID GRACE_S -- command...")
        return 2
    parent, grace, command = _Parent(int(argv[0])), float(argv[1]), list(argv[3:])
    if not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
        _say(
            "prctl(PR_SET_CHILD_SUBREAPER) failed; a process the server starts with "
            "setsid may outlive it"
        )
    if parent.gone():
        return 1
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    asked: list[int] = []
    for sig in _PASSED_ON:
        signal.signal(sig, lambda number, _frame: asked.append(number))
    signal.signal(signal.SIGCHLD, lambda _number, _frame: None)
    try:
        reset = (signal.SIGPIPE, signal.SIGXFSZ, *_PASSED_ON, signal.SIGCHLD)
        server = os.posix_spawnp(
            command[0], command, dict(os.environ), setsigdef=reset, setpgroup=0
        )
    except OSError as err:
        _say(f"cannot start {command[0]!r}: {err}")
        return 127
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    selector = selectors.DefaultSelector()
    selector.register(wake_read, selectors.EVENT_READ)
    if parent.fd is not None:
        selector.register(parent.fd, selectors.EVENT_READ)
    status, deadline = None, None
    while status is None and not parent.gone():
        status = _reap(server)
        if status is not None:
            break
        now = time.monotonic()
        if asked and deadline is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, asked[0])
            deadline = now + grace
        if deadline is not None and now >= deadline:
            break
        # a pidfd wakes the select when the parent ends; without one, poll getppid
        timeout = _POLL_S if parent.fd is None else 60.0
        _wait(selector, wake_read, timeout if deadline is None else min(timeout, deadline - now))
    if not end_tree():
        _say(f"processes below the server outlasted {END_WAIT_S:g} s of SIGKILL (stuck in I/O?)")
    if status is None and asked:
        return 128 + asked[0]
    return _exit_code(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
