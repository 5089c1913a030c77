"""A seccomp filter that refuses the system calls whose memory no limit counts.

Where a run has no memory cgroup (not root, or no writable memory cgroup), the rlimits
bound each process's address space (``RLIMIT_AS``) and files (``RLIMIT_FSIZE``, the
sized ``/work`` and ``/tmp``), but some kernel objects hold memory that neither counts:
a ``memfd`` written with ``write()`` (never mapped), System V shared memory and message
queues (they outlive the mapping), socket buffers (up to ``net.core.wmem_max`` each),
io_uring rings, BPF maps, userfaultfd, perf buffers, inotify / fanotify marks, and
extended attributes (``setxattr`` and its kin: tmpfs keeps user xattrs in memory). The
filter (:func:`deny_filter`) makes each of those calls fail with ``EPERM``, as do the
x32 ABI and any other architecture's calls (``int 0x80`` on x86-64). bubblewrap
installs it (``--seccomp FD``) before it starts the program.

Example::

    from mint_envkit.sandbox.seccomp import DENIED, deny_filter

    program = deny_filter("x86_64")
    assert len(program) % 8 == 0 and "memfd_create" in DENIED
"""

from __future__ import annotations

import errno
import os
import struct

from mint_envkit.errors import SandboxError

DENIED = (
    "memfd_create", "memfd_secret", "shmget", "msgget", "semget", "socket", "socketpair",
    "io_uring_setup", "bpf", "userfaultfd", "perf_event_open", "inotify_init",
    "inotify_init1", "fanotify_init", "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
)  # fmt: skip
"""The calls the filter refuses (``EPERM``).

Example::

    assert "socketpair" in DENIED
"""

_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    # AUDIT_ARCH_X86_64; numbers from asm/unistd_64.h
    "x86_64": (
        0xC000003E,
        {
            "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68,
            "semget": 64, "socket": 41, "socketpair": 53, "io_uring_setup": 425, "bpf": 321,
            "userfaultfd": 323, "perf_event_open": 298, "inotify_init": 253,
            "inotify_init1": 294, "fanotify_init": 300, "setxattr": 188, "lsetxattr": 189,
            "fsetxattr": 190, "setxattrat": 463,
        },
    ),
    # AUDIT_ARCH_AARCH64; numbers from asm-generic/unistd.h (it has no inotify_init)
    "aarch64": (
        0xC00000B7,
        {
            "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186,
            "semget": 190, "socket": 198, "socketpair": 199, "io_uring_setup": 425, "bpf": 280,
            "userfaultfd": 282, "perf_event_open": 241, "inotify_init1": 26,
            "fanotify_init": 262, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
            "setxattrat": 463,
        },
    ),
}  # fmt: skip
_X32 = 0x40000000
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ..|JGE|K, BPF_RET|K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_REFUSE = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO | EPERM


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny_filter(machine: str | None = None) -> bytes:
    """The classic BPF program (``struct sock_filter`` array) refusing :data:`DENIED`.

    ``machine`` defaults to this one (``os.uname().machine``); one without a table
    raises :class:`~mint_envkit.errors.SandboxError`.

    Example::

        assert deny_filter("x86_64") != deny_filter("aarch64")
    """
    machine = machine or os.uname().machine
    if machine not in _TABLES:
        raise SandboxError(
            f"no seccomp table for {machine!r} (only {sorted(_TABLES)}), and no memory "
            "cgroup: the sandbox cannot bound the memory a run pins; run as root on a "
            "machine with a memory cgroup, or pass memory_cgroup= a writable one"
        )
    arch, numbers = _TABLES[machine]
    denied = [numbers[name] for name in DENIED if name in numbers]
    program = [_op(_LOAD, 4), _op(_JEQ, arch, 1, 0), _op(_RET, _REFUSE), _op(_LOAD, 0)]
    if machine == "x86_64":
        program += [_op(_JGE, _X32, 0, 1), _op(_RET, _REFUSE)]
    program += [_op(_JEQ, nr, len(denied) - i, 0) for i, nr in enumerate(denied)]
    program += [_op(_RET, _ALLOW), _op(_RET, _REFUSE)]
    return b"".join(program)
