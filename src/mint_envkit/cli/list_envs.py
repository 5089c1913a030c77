"""``mint-envkit list``: the env packages installed in this Python.

One row per env that an installed package declares in the ``mint_envkit.environments``
entry-point group: its name (what ``check``, ``eval``, ``audit`` and
``mint_envkit.load_environment`` take), the package, its version, the entry point and the
first line of its docstring. Reading the docstring imports the env's module, each in a
process of its own (at most 8 at once) given ``--timeout`` seconds (30): a module that
raises, exits the process (``sys.exit``, ``os._exit``) or hangs at import is named
below the table with what happened, and the other envs are listed as usual (before,
one such package made the command print nothing, or hang). Exit 0, or 1 when an env
cannot be loaded or two packages claim one name (each is named below the table).

The module is ``list_envs``, not ``list``: a submodule becomes an attribute of its
package, and ``mint_envkit.cli.list`` would hide the builtin ``list`` from the package.

Example (shell)::

    mint-envkit list
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from mint_envkit.builders.packages import EnvPackage, find_environment, installed_environments
from mint_envkit.errors import MintEnvkitError
from mint_envkit.progress import text_table

HEAD = ("name", "package", "version", "entry point", "description")
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


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit list"))
    """
    parser.description = (
        "List the env packages installed in this Python (the mint_envkit.environments "
        "entry points): name, package, version, entry point, the first line of its "
        "docstring. Each name works where check, eval and audit take an ENV_SPEC."
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"seconds each env's module has to import, in a process of its own (default "
        f"{DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument("--json", action="store_true", help="print the envs as JSON")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the installed envs; the exit code (0, or 1 when one cannot be loaded or a
    name is claimed twice).

    Example::

        main(["list"])
    """
    if not (0 < args.timeout < float("inf")):
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    envs = installed_environments()
    if args.json:
        listed, problems = rows(envs, args.timeout)
        print(json.dumps([dict(zip(HEAD, row, strict=True)) for row in listed], indent=2))
        for problem in problems:
            print(f"mint-envkit list: {problem}", file=sys.stderr)
        return 1 if problems else 0
    if not envs:
        print(
            f"no env packages installed in this Python ({sys.executable}); make one with "
            "mint-envkit init NAME, install it with pip install -e NAME"
        )
        return 0
    table, problems = rows(envs, args.timeout)
    print(text_table([HEAD, *table]))
    for problem in problems:
        print(f"mint-envkit list: {problem}", file=sys.stderr)
    return 1 if problems else 0
