"""``mint-envkit checkpoints``: list and delete the checkpoints of training runs.

Local runs keep their checkpoints in the embedded backend's state directory, in the user
cache (``$MINT_ENVKIT_STATE_DIR``, else ``$MINT_ENVKIT_CACHE/state``, else
``~/.cache/mint_envkit/state``), not beside the run's output. These commands go through
the SDK's REST routes (``RestClient``): against ``--base-url`` (a running ``mint-envkit
serve`` or MinT, with ``MINT_API_KEY``), or, by default, against an embedded server
started on the state directory for the command (it loads no model).

Example (shell)::

    mint-envkit checkpoints list                      # every run's checkpoints, with sizes
    mint-envkit checkpoints list --run <model_id>
    mint-envkit checkpoints delete tinker://<model_id>/weights/step-0010
    mint-envkit checkpoints delete --run <model_id> --yes
    mint-envkit checkpoints du                        # the store's disk use, run by run
    mint-envkit checkpoints prune --older-than 7d --yes
    mint-envkit checkpoints prune --max-size 2GB --yes    # the oldest go first
    mint-envkit checkpoints prune --orphaned --yes     # runs whose log directory is gone
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mint_envkit.errors import MintEnvkitError
from mint_envkit.rollouts.backend import local_api_key

_PAGE = 100


def default_state_dir() -> Path:
    """Where the embedded backend keeps checkpoints when no ``--state-dir`` is given.

    ``$MINT_ENVKIT_STATE_DIR``, else ``state`` under the mint_envkit cache
    (``$MINT_ENVKIT_CACHE``, else ``~/.cache/mint_envkit``); the same rule as the
    engine's default.

    Example::

        print(default_state_dir())   # /home/me/.cache/mint_envkit/state
    """
    from mint_envkit.local.engine.core import default_state_dir as engine_default

    return engine_default().expanduser().resolve()  # the engine's rule, the one place it lives


@contextlib.contextmanager
def _rest_client(args: argparse.Namespace) -> Iterator[Any]:
    import mint

    if args.base_url:
        from urllib.parse import urlsplit

        from mint_envkit.local.server import is_loopback_host

        key = os.environ.get("MINT_API_KEY")
        if key is None and is_loopback_host(urlsplit(args.base_url).hostname or ""):
            key = local_api_key()  # a local 'mint-envkit serve' accepts any sk- key
        service = mint.ServiceClient(base_url=args.base_url, api_key=key)
        try:
            yield service.create_rest_client()
        finally:
            service.holder.close()
        return
    from mint_envkit.local.server import LocalServer

    with LocalServer(
        state_dir=str(args.state_dir), preload=False, list_all_checkpoints=True
    ) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key=local_api_key())
        try:
            yield service.create_rest_client()
        finally:
            service.holder.close()


def _list(rest: Any, run: str | None) -> list[Any]:
    if run is not None:
        return list(rest.list_checkpoints(run).result().checkpoints)
    found: list[Any] = []
    while True:
        page = rest.list_user_checkpoints(limit=_PAGE, offset=len(found)).result()
        found.extend(page.checkpoints)
        total = page.cursor.total_count if page.cursor is not None else None
        if not page.checkpoints or total is None or len(found) >= total:
            return found


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _run_id(tinker_path: str) -> str:
    return tinker_path.removeprefix("tinker://").split("/", 1)[0]


def log_dirs(root: Path) -> dict[str, Path]:
    """Run id -> the log directory whose ``checkpoints.jsonl`` names it, under ``root``.

    Example::

        log_dirs(Path("runs"))   # {'29468538-...': PosixPath('runs/demo')}
    """
    found: dict[str, Path] = {}
    for record_file in sorted(root.rglob("checkpoints.jsonl")) if root.is_dir() else []:
        for line in record_file.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                record = json.loads(line)
                for key in ("state_path", "sampler_path"):
                    if isinstance(record.get(key), str):
                        found.setdefault(_run_id(record[key]), record_file.parent)
    return found


def _print_table(checkpoints: Sequence[Any], where: str, logs: dict[str, Path], root: Path) -> None:
    print(f"checkpoints in {where}:")
    if not checkpoints:
        print("  (none)")
        return
    for c in checkpoints:
        when = c.time.strftime("%Y-%m-%d %H:%M:%S") if c.time else "?"
        print(f"  {c.tinker_path:<64} {c.checkpoint_type:<8} {when}  {_size(c.size_bytes):>9}")
    print("log directories:")
    for run in dict.fromkeys(_run_id(c.tinker_path) for c in checkpoints):
        print(f"  {run}  {logs.get(run) or f'(none under {root}/; --runs DIR looks elsewhere)'}")
    total = sum(c.size_bytes or 0 for c in checkpoints)
    print(f"{len(checkpoints)} checkpoint(s), {_size(total)}")


def _record(c: Any, logs: dict[str, Path]) -> dict[str, Any]:
    log_dir = logs.get(_run_id(c.tinker_path))
    return {
        "tinker_path": c.tinker_path,
        "checkpoint_type": c.checkpoint_type,
        "time": c.time.isoformat() if c.time else None,
        "size_bytes": c.size_bytes,
        "log_dir": None if log_dir is None else str(log_dir),
    }


_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
_AGES = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """``2GB``, ``500MB``, ``1.5 GB`` or a number of bytes, as bytes (powers of 1024).

    Example::

        parse_size("2GB"), parse_size("512")   # (2147483648, 512)
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?b)?\s*", text, re.I)
    if not found:
        raise MintEnvkitError(f"--max-size {text!r} is not a size; write it as 2GB, 500MB or 1024")
    return int(float(found.group(1)) * _UNITS[(found.group(2) or "b").lower()])


def parse_age(text: str) -> _dt.timedelta:
    """``7d``, ``12h``, ``30m`` or ``2w`` as a time span.

    Example::

        parse_age("12h")   # datetime.timedelta(seconds=43200)
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*", text, re.I)
    if not found:
        raise MintEnvkitError(
            f"--older-than {text!r} is not an age; write it as 30m, 12h, 7d or 2w"
        )
    return _dt.timedelta(seconds=float(found.group(1)) * _AGES[found.group(2).lower()])


def _time(c: Any) -> _dt.datetime:
    when = c.time or _dt.datetime.min.replace(tzinfo=_dt.UTC)
    return when if when.tzinfo else when.replace(tzinfo=_dt.UTC)


def prune_choice(
    checkpoints: Sequence[Any],
    *,
    runs: Sequence[str] = (),
    older_than: _dt.timedelta | None = None,
    max_size: int | None = None,
    orphaned: set[str] | None = None,
    now: _dt.datetime | None = None,
) -> list[Any]:
    """The checkpoints a prune deletes: of the given ``runs`` (all without), older than
    ``older_than``, of runs in ``orphaned``; then with ``max_size``, the oldest of those
    until the whole store (``checkpoints``) is within it.

    Example::

        prune_choice(listed, older_than=datetime.timedelta(days=7))   # a week old and more
    """
    now = now or _dt.datetime.now(_dt.UTC)
    chosen = [
        c
        for c in checkpoints
        if (not runs or _run_id(c.tinker_path) in runs)
        and (older_than is None or _time(c) < now - older_than)
        and (orphaned is None or _run_id(c.tinker_path) in orphaned)
    ]
    if max_size is None:
        return chosen
    total = sum(c.size_bytes or 0 for c in checkpoints)
    out = []
    for c in sorted(chosen, key=_time):
        if total <= max_size:
            break
        out.append(c)
        total -= c.size_bytes or 0
    return out


def _usage(checkpoints: Sequence[Any], args: argparse.Namespace) -> dict[str, Any]:
    logs = log_dirs(args.runs)
    runs: dict[str, dict[str, Any]] = {}
    for c in checkpoints:
        run = runs.setdefault(
            _run_id(c.tinker_path), {"checkpoints": 0, "size_bytes": 0, "newest": None}
        )
        run["checkpoints"] += 1
        run["size_bytes"] += c.size_bytes or 0
        when = _time(c).isoformat() if c.time else None
        run["newest"] = max(filter(None, (run["newest"], when)), default=None)
    for run_id, run in runs.items():
        run["log_dir"] = None if run_id not in logs else str(logs[run_id])
    out: dict[str, Any] = {
        "store": _where(args),
        "checkpoints": len(checkpoints),
        "size_bytes": sum(r["size_bytes"] for r in runs.values()),
        "runs": dict(sorted(runs.items(), key=lambda kv: -kv[1]["size_bytes"])),
    }
    if not args.base_url and Path(args.state_dir).is_dir():
        out["disk_free_bytes"] = shutil.disk_usage(args.state_dir).free
    return out


def _print_usage(usage: dict[str, Any], root: Path) -> None:
    print(f"checkpoint store {usage['store']}:")
    for run, row in usage["runs"].items():
        log = row["log_dir"] or f"(no log directory under {root}/)"
        print(
            f"  {run:<40} {row['checkpoints']:>4} checkpoint(s) {_size(row['size_bytes']):>9}  "
            f"newest {(row['newest'] or '?')[:19]}  {log}"
        )
    free = usage.get("disk_free_bytes")
    print(
        f"{usage['checkpoints']} checkpoint(s) of {len(usage['runs'])} run(s), "
        f"{_size(usage['size_bytes'])}"
        + ("" if free is None else f"; {_size(free)} free on its disk")
    )


def _prune(rest: Any, args: argparse.Namespace) -> int:
    if not (args.run or args.older_than or args.max_size or args.orphaned):
        raise MintEnvkitError(
            "prune what? give --run RUN_ID, --older-than AGE (7d), --max-size SIZE (2GB) "
            "or --orphaned (runs whose log directory under --runs is gone)"
        )
    listed = _list(rest, None)
    logs = log_dirs(args.runs)
    orphaned = None
    if args.orphaned:
        orphaned = {_run_id(c.tinker_path) for c in listed} - set(logs)
    chosen = prune_choice(
        listed,
        runs=args.run or (),
        older_than=None if args.older_than is None else parse_age(args.older_than),
        max_size=None if args.max_size is None else parse_size(args.max_size),
        orphaned=orphaned,
    )
    size = sum(c.size_bytes or 0 for c in chosen)
    if not args.yes:
        for c in chosen:
            print(f"  {c.tinker_path:<64} {_time(c).isoformat()[:19]}  {_size(c.size_bytes):>9}")
        print(
            f"{len(chosen)} of {len(listed)} checkpoint(s), {_size(size)}, would be deleted"
            + ("; add --yes to delete them" if chosen else "")
        )
        return 1 if chosen else 0
    for c in chosen:
        rest.delete_checkpoint_from_tinker_path(c.tinker_path).result()
    left = sum(c.size_bytes or 0 for c in listed) - size
    print(
        f"pruned {len(chosen)} checkpoint(s), {_size(size)}, from {_where(args)}; "
        f"{len(listed) - len(chosen)} left, {_size(left)}"
    )
    return 0


def _where(args: argparse.Namespace) -> str:
    return args.base_url or f"{args.state_dir} (local state directory)"


def _run(args: argparse.Namespace) -> int:
    with _rest_client(args) as rest:
        if args.action == "du":
            usage = _usage(_list(rest, None), args)
            if args.json:
                print(json.dumps(usage, indent=2))
            else:
                _print_usage(usage, args.runs)
            return 0
        if args.action == "prune":
            return _prune(rest, args)
        if args.action == "list":
            checkpoints = _list(rest, args.run)
            logs = log_dirs(args.runs)
            if args.json:
                print(json.dumps([_record(c, logs) for c in checkpoints], indent=2))
            else:
                _print_table(checkpoints, _where(args), logs, args.runs)
            return 0
        if args.paths and (args.run or args.all):
            raise MintEnvkitError("give checkpoint paths, or --run RUN_ID, or --all; not several")
        if args.paths:
            targets = list(args.paths)
        elif args.run or args.all:
            targets = [c.tinker_path for c in _list(rest, args.run)]
            if not args.yes:
                for path in targets:
                    print(f"  {path}")
                print(f"{len(targets)} checkpoint(s) would be deleted; add --yes to delete them")
                return 1
        else:
            raise MintEnvkitError(
                "nothing to delete: give tinker:// paths, or --run RUN_ID --yes, or --all --yes"
            )
        for path in targets:
            if not path.startswith("tinker://"):
                raise MintEnvkitError(
                    f"{path!r} is not a checkpoint path; paths look like "
                    "tinker://<run id>/weights/<name> (see 'mint-envkit checkpoints list')"
                )
            rest.delete_checkpoint_from_tinker_path(path).result()
            print(f"deleted {path}")
        print(f"{len(targets)} checkpoint(s) deleted from {_where(args)}")
        return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``list``, ``du``, ``prune`` and ``delete`` subcommands and their options.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit checkpoints"))
    """
    parser.description = __doc__.split("\n\n")[0]
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--base-url",
        help="a running server (mint-envkit serve, or MinT with MINT_API_KEY); default: the "
        "local state directory through an embedded server",
    )
    where.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="the local state directory (default: $MINT_ENVKIT_STATE_DIR, else "
        "~/.cache/mint_envkit/state)",
    )
    where.add_argument(
        "--runs",
        type=Path,
        default=Path("runs"),
        metavar="DIR",
        help="find each run's log directory (its checkpoints.jsonl) under DIR (default: runs)",
    )
    sub = parser.add_subparsers(dest="action", required=True, parser_class=argparse.ArgumentParser)
    listing = sub.add_parser("list", parents=[where], help="list checkpoints, with sizes")
    listing.add_argument("--run", help="only this training run (its model_id)")
    listing.add_argument("--json", action="store_true", help="print JSON records")
    usage = sub.add_parser("du", parents=[where], help="the store's disk use, run by run")
    usage.add_argument("--json", action="store_true", help="print it as JSON")
    prune = sub.add_parser(
        "prune", parents=[where], help="delete checkpoints by run, age, size (--yes to delete)"
    )
    prune.add_argument("--run", action="append", help="only this run's (repeatable)")
    prune.add_argument("--older-than", metavar="AGE", help="saved more than AGE ago: 30m, 12h, 7d")
    prune.add_argument(
        "--max-size",
        metavar="SIZE",
        help="delete the oldest (of those chosen) until the store holds at most SIZE: 2GB",
    )
    prune.add_argument(
        "--orphaned",
        action="store_true",
        help="only runs whose log directory (checkpoints.jsonl under --runs) is gone",
    )
    prune.add_argument("--yes", action="store_true", help="delete (without: list what would go)")
    delete = sub.add_parser("delete", parents=[where], help="delete checkpoints")
    delete.add_argument("paths", nargs="*", help="tinker:// paths of checkpoints to delete")
    delete.add_argument("--run", help="delete every checkpoint of this run (with --yes)")
    delete.add_argument("--all", action="store_true", help="delete every checkpoint (with --yes)")
    delete.add_argument("--yes", action="store_true", help="confirm a --run or --all delete")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit checkpoints list|du|prune|delete ...``; returns the exit code (prune
    and delete without ``--yes``: 1 when something would be deleted).

    Example::

        main(["checkpoints", "list", "--state-dir", "/tmp/mint-state"])
    """
    if args.base_url and args.state_dir is not None:
        print("mint-envkit checkpoints: give --base-url or --state-dir, not both", file=sys.stderr)
        return 2
    if not args.base_url:
        args.state_dir = (args.state_dir or default_state_dir()).expanduser().resolve()
    try:
        return _run(args)
    except MintEnvkitError as err:
        print(f"mint-envkit checkpoints: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # the SDK's errors (unknown run, unreachable server)
        print(f"mint-envkit checkpoints: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
