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
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.state_dir import resolved_state_dir
from mint_envkit.rollouts.rest import list_checkpoints, rest_client
from mint_envkit.runs.checkpoints import (
    checkpoint_record,
    log_dirs,
    orphaned_runs,
    parse_age,
    parse_size,
    prune_choice,
    run_id,
    saved_at,
    size_text,
    usage,
)


def _print_table(checkpoints: Sequence[Any], where: str, logs: dict[str, Path], root: Path) -> None:
    print(f"checkpoints in {where}:")
    if not checkpoints:
        print("  (none)")
        return
    for c in checkpoints:
        when = c.time.strftime("%Y-%m-%d %H:%M:%S") if c.time else "?"
        print(f"  {c.tinker_path:<64} {c.checkpoint_type:<8} {when}  {size_text(c.size_bytes):>9}")
    print("log directories:")
    for run in dict.fromkeys(run_id(c.tinker_path) for c in checkpoints):
        print(f"  {run}  {logs.get(run) or f'(none under {root}/; --runs DIR looks elsewhere)'}")
    total = sum(c.size_bytes or 0 for c in checkpoints)
    print(f"{len(checkpoints)} checkpoint(s), {size_text(total)}")


def _print_usage(found: dict[str, Any], root: Path) -> None:
    print(f"checkpoint store {found['store']}:")
    for run, row in found["runs"].items():
        log = row["log_dir"] or f"(no log directory under {root}/)"
        print(
            f"  {run:<40} {row['checkpoints']:>4} checkpoint(s) {size_text(row['size_bytes']):>9}  "
            f"newest {(row['newest'] or '?')[:19]}  {log}"
        )
    free = found.get("disk_free_bytes")
    print(
        f"{found['checkpoints']} checkpoint(s) of {len(found['runs'])} run(s), "
        f"{size_text(found['size_bytes'])}"
        + ("" if free is None else f"; {size_text(free)} free on its disk")
    )


def _prune(rest: Any, args: argparse.Namespace) -> int:
    if not (args.run or args.older_than or args.max_size or args.orphaned):
        raise MintEnvkitError(
            "prune what? give --run RUN_ID, --older-than AGE (7d), --max-size SIZE (2GB) "
            "or --orphaned (runs whose log directory under --runs is gone)"
        )
    listed = list_checkpoints(rest)
    chosen = prune_choice(
        listed,
        runs=args.run or (),
        older_than=None if args.older_than is None else parse_age(args.older_than),
        max_size=None if args.max_size is None else parse_size(args.max_size),
        orphaned=orphaned_runs(listed, log_dirs(args.runs)) if args.orphaned else None,
    )
    size = sum(c.size_bytes or 0 for c in chosen)
    if not args.yes:
        for c in chosen:
            print(
                f"  {c.tinker_path:<64} {saved_at(c).isoformat()[:19]}  {size_text(c.size_bytes):>9}"
            )
        print(
            f"{len(chosen)} of {len(listed)} checkpoint(s), {size_text(size)}, would be deleted"
            + ("; add --yes to delete them" if chosen else "")
        )
        return 1 if chosen else 0
    for c in chosen:
        rest.delete_checkpoint_from_tinker_path(c.tinker_path).result()
    left = sum(c.size_bytes or 0 for c in listed) - size
    print(
        f"pruned {len(chosen)} checkpoint(s), {size_text(size)}, from {_where(args)}; "
        f"{len(listed) - len(chosen)} left, {size_text(left)}"
    )
    return 0


def _where(args: argparse.Namespace) -> str:
    return args.base_url or f"{args.state_dir} (local state directory)"


def _run(args: argparse.Namespace) -> int:
    with rest_client(args.base_url, args.state_dir) as rest:
        if args.action == "du":
            state_dir = None if args.base_url else args.state_dir
            found = usage(
                list_checkpoints(rest), log_dirs(args.runs), store=_where(args), state_dir=state_dir
            )
            if args.json:
                print(json.dumps(found, indent=2))
            else:
                _print_usage(found, args.runs)
            return 0
        if args.action == "prune":
            return _prune(rest, args)
        if args.action == "list":
            checkpoints = list_checkpoints(rest, args.run)
            logs = log_dirs(args.runs)
            if args.json:
                print(json.dumps([checkpoint_record(c, logs) for c in checkpoints], indent=2))
            else:
                _print_table(checkpoints, _where(args), logs, args.runs)
            return 0
        if args.paths and (args.run or args.all):
            raise MintEnvkitError("give checkpoint paths, or --run RUN_ID, or --all; not several")
        if args.paths:
            targets = list(args.paths)
        elif args.run or args.all:
            targets = [c.tinker_path for c in list_checkpoints(rest, args.run)]
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
        args.state_dir = resolved_state_dir(args.state_dir)
    try:
        return _run(args)
    except MintEnvkitError as err:
        print(f"mint-envkit checkpoints: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # the SDK's errors (unknown run, unreachable server)
        print(f"mint-envkit checkpoints: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
