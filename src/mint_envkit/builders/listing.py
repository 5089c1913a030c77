"""The installed env packages listed: each one's summary, read in a process of its own.

Reading an env's summary (the first line of its docstring) imports its module; a module
that raises, exits the process (``sys.exit``, ``os._exit``) or hangs at import must not
take the listing with it (before, one such package made ``mint-envkit list`` print
nothing, or hang). So each module is imported in a child process (at most 8 at once)
given ``timeout_s`` seconds (30), and what happened to one that did not load is said
in a sentence beside the others' rows.

Example::

    from mint_envkit.builders.listing import rows

    rows([])   # ([], [])
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from mint_envkit.builders.packages import EnvPackage, find_environment
from mint_envkit.errors import MintEnvkitError

HEAD = ("name", "package", "version", "entry point", "description")
"""The columns of a listed env."""

DEFAULT_TIMEOUT_S = 30.0
"""Seconds one env's module has to import (``--timeout``)."""
_AT_ONCE = 8
_CHILD = """
import json, sys
marker, fields = sys.argv[1], sys.argv[2:6]
from mint_envkit.builders.packages import EnvPackage
try:
    said = {"summary": EnvPackage(*fields).summary()}
except BaseException as err:
    said = {"error": str(err) or type(err).__name__}
sys.stdout.flush()
print("\\n" + marker + json.dumps(said), flush=True)
"""


def summary_in_child(env: EnvPackage, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[str, str]:
    """``(summary, problem)`` of one env, its module imported in a process of its own.

    ``problem`` is ``""`` when it loaded; else what happened: the load's error, a
    process that ended before it answered (``os._exit``, a crash), or no answer within
    ``timeout_s`` (the process and what it started are killed).

    Example::

        # not run: needs an installed env package
        summary_in_child(find_environment("units-demo"))   # ('Unit conversions, ...', '')
    """
    marker = "mint-envkit-list-" + secrets.token_hex(8) + " "
    argv = [sys.executable, "-c", _CHILD, marker, env.name, env.package, env.version]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.Popen(
        [*argv, env.entry_point], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=environ, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return "", (
            f"env {env.name!r}: importing {env.entry_point} (package {env.package} "
            f"{env.version}) did not finish within {timeout_s:g} s (--timeout); it hangs "
            "at import: fix the package"
        )
    text = out.decode("utf-8", "replace")
    for line in reversed(text.splitlines()):
        if line.startswith(marker):
            said = json.loads(line[len(marker) :])
            return str(said.get("summary", "")), str(said.get("error", ""))
    tail = err.decode("utf-8", "replace").strip()[-300:]
    return "", (
        f"env {env.name!r}: importing {env.entry_point} (package {env.package} {env.version}) "
        f"ended the process with exit code {child.returncode} before it answered (os._exit "
        f"or a crash at import){'; its stderr ends: ' + repr(tail) if tail else ''}; fix "
        "the package"
    )


def rows(
    envs: list[EnvPackage], timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[list[tuple[str, ...]], list[str]]:
    """The table's rows, and the problems found (an env that cannot be loaded, a name
    claimed twice), one sentence each. Each env is loaded in a process of its own
    (:func:`summary_in_child`).

    Example::

        rows([])   # ([], [])
    """
    problems: list[str] = []
    out = []
    with ThreadPoolExecutor(max_workers=max(1, min(_AT_ONCE, len(envs)))) as pool:
        said = list(pool.map(lambda env: summary_in_child(env, timeout_s), envs))
    for env, (summary, problem) in zip(envs, said, strict=True):
        claims = [other.package for other in envs if other.name == env.name]
        description = summary
        if problem:
            description = "cannot be loaded (below)"
            problems.append(problem)
        if len(claims) > 1:
            description = f"CLAIMED BY {len(claims)} PACKAGES; {description}"
        out.append((env.name, env.package, env.version, env.entry_point, description))
    for name in sorted({env.name for env in envs}):
        if sum(env.name == name for env in envs) > 1:
            try:
                find_environment(name)
            except MintEnvkitError as err:  # what loading it says: both packages, the fix
                problems.append(str(err))
    return out, problems
