"""The state directory is usable before any work: it exists (or can be made), is writable,
and has some free space; a full disk at write time is named, not a traceback.

Example::

    from mint_envkit.local.state_dir import check_state_dir

    state = check_state_dir("mint-state")   # Path('/.../mint-state'), or ConfigError naming it
    assert state.is_dir() and state.is_absolute()
"""

from __future__ import annotations

import errno
import getpass
import os
import shutil
import tempfile
from pathlib import Path

from mint_envkit.errors import ConfigError

MIN_FREE_BYTES = 100 * 1024 * 1024
"""Free space the state directory needs at start (a tiny-model checkpoint is a few MB)."""

_DISK_ERRNOS = {
    errno.ENOSPC: "no space left",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
}


def check_state_dir(path: str | os.PathLike[str], min_free_bytes: int = MIN_FREE_BYTES) -> Path:
    """``path`` resolved, after checking it can hold checkpoints (ConfigError naming it otherwise).

    Creates it if missing, writes and removes a probe file, and checks that at
    least ``min_free_bytes`` are free.

    Example::

        assert check_state_dir("mint-state", min_free_bytes=0) == Path("mint-state").resolve()
        try:
            check_state_dir("mint-state", min_free_bytes=1 << 62)
        except ConfigError as err:
            assert "MB free" in str(err)   # "state directory '...' has ... MB free, under ..."
        else:
            raise AssertionError("too little free space is refused")
    """
    target = Path(path).expanduser().resolve()
    fix = "pass another --state-dir (LocalServer(state_dir=...)) or MINT_ENVKIT_STATE_DIR"
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ConfigError(
            f"state directory {str(target)!r} is not writable ({err.strerror or err}); {fix}"
        ) from None
    free = shutil.disk_usage(target).free
    if free < min_free_bytes:
        raise ConfigError(
            f"state directory {str(target)!r} has {free / 1e6:.1f} MB free, under the "
            f"{min_free_bytes / 1e6:.0f} MB a run needs for checkpoints; free space there or {fix}"
        )
    return target


def disk_error_message(err: BaseException) -> str | None:
    """A readable message for a disk error (full, quota, read-only) in ``err``'s cause chain.

    None when the error is not one. The message names the directory.

    Example::

        message = disk_error_message(OSError(28, "No space left on device", "/s/m-1/.tmp-x/a"))
        assert message.startswith("cannot write in '/s/m-1': no space left. Nothing was saved")
        assert disk_error_message(ValueError("bad")) is None   # not a disk error
    """
    seen: set[int] = set()
    node: BaseException | None = err
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, OSError) and node.errno in _DISK_ERRNOS:
            where = str(Path(node.filename).parent) if node.filename else "the state directory"
            if ".tmp-" in where:
                where = where.split("/.tmp-")[0]
            return (
                f"cannot write in {where!r}: {_DISK_ERRNOS[node.errno]}. Nothing was saved (no "
                "partial checkpoint is left); free space there or point the server at another "
                "--state-dir, then retry"
            )
        node = node.__cause__ or node.__context__
    return None


def resolved_state_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """``given`` (a ``--state-dir``), else where the embedded backend keeps checkpoints,
    expanded and resolved: ``$MINT_ENVKIT_STATE_DIR``, else ``state`` under the
    mint_envkit cache (``$MINT_ENVKIT_CACHE``, else ``~/.cache/mint_envkit``), the
    engine's rule.

    Example::

        resolved_state_dir("mint-state") == Path("mint-state").resolve()   # True
        resolved_state_dir()   # PosixPath('/home/me/.cache/mint_envkit/state')
    """
    from mint_envkit.local.engine.core import default_state_dir

    return Path(given if given is not None else default_state_dir()).expanduser().resolve()


def state_dir_note(given: str | os.PathLike[str] | None) -> str:
    """Where checkpoints go, said so a job knows when it shares the place with others.

    ``given`` is the ``--state-dir`` (None: ``MINT_ENVKIT_STATE_DIR``, else the user
    cache). The cache default is one directory for every server and run of this
    user on this machine: their checkpoints land side by side and ``checkpoints
    delete --all`` sees them all.

    Example::

        note = state_dir_note(None)
        # "state dir /home/me/.cache/mint_envkit/state (the default: shared by every job of
        #  user me on this machine; --state-dir or MINT_ENVKIT_STATE_DIR gives one its own)"
        # (with MINT_ENVKIT_STATE_DIR set: "state dir /... (MINT_ENVKIT_STATE_DIR)")
        assert note.startswith("state dir /")
        assert state_dir_note("mint-state") == f"state dir {Path('mint-state').resolve()}"
    """
    try:
        user = f"user {getpass.getuser()}"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        user = "this user"
    if given is not None:
        return f"state dir {resolved_state_dir(given)}"
    if os.environ.get("MINT_ENVKIT_STATE_DIR"):
        return f"state dir {resolved_state_dir()} (MINT_ENVKIT_STATE_DIR)"
    return (
        f"state dir {resolved_state_dir()} (the default: shared by every "
        f"job of {user} on this machine; --state-dir or "
        "MINT_ENVKIT_STATE_DIR gives one its own)"
    )
