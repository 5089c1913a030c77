"""``mint-envkit rescore RUN_DIR ENV_SPEC``: a run's recorded replies, scored by the env as it is now.

The command parses its options and calls :func:`mint_envkit.replay.rescore`; see
"Rescoring a run" in docs/getting-started.md. Exit 0 when nothing changed, 1 when
something did, 2 on bad input (no rollouts, a record without the fields rescore needs,
records from before the ``problem`` field, an ENV_SPEC that does not load).

Example (shell)::

    mint-envkit rescore runs/math my_envs.py:MathEnv
    mint-envkit rescore runs/eval-math my_envs.py:builder --split eval --limit 20 --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mint_envkit.cli.command import add_env_spec, run_command
from mint_envkit.cli.deadline import Deadline, add_timeout, check_timeout, load_env_target
from mint_envkit.replay.rescore import rescore
from mint_envkit.runs.files import write_json_atomic


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit rescore"))
    """
    parser.description = (
        "Score a run's recorded replies (RUN_DIR/rollouts.jsonl, or each <label>/rollouts.jsonl "
        "of an evaluation's directory) with the env as it is now and report which rewards, "
        "correct values, parse statuses and turn counts changed. Exit 0: nothing changed, "
        "1: something did, 2: bad input."
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run's log_path or an eval's --out")
    add_env_spec(parser)
    parser.add_argument("--split", default=None, help="only this split's records (train, eval...)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N groups of a run")
    parser.add_argument(
        "--show", type=int, default=10, metavar="N", help="list the first N changes (default 10)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", default=None, metavar="DIR", help="also write DIR/rescore.json")
    add_timeout(parser)


async def _run(args: argparse.Namespace) -> int:
    report = await rescore(
        args.run_dir, args.target, split=args.split, limit=args.limit, env_args=args.env_args
    )
    if args.out:
        write_json_atomic(Path(args.out) / "rescore.json", report.as_json())
    if args.json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    else:
        print(report.text(show_first=args.show))
        if args.out:
            print(f"wrote {Path(args.out) / 'rescore.json'}")
    return 1 if report.changes else 0


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit rescore RUN_DIR ENV_SPEC``; 0 nothing changed, 1 a change, 2 bad input.

    Example::

        main(["rescore", "runs/math", "my_envs.py:MathEnv", "--json"])
    """
    if args.show is not None and args.show < 0:
        parser.error(f"--show must be >= 0, got {args.show}")
    check_timeout(args.timeout, parser)
    with Deadline(args.timeout, "rescore") as deadline:
        deadline.phase = f"loading {args.target}"
        load_env_target(args.target)  # imported once: rescore() gets the same module
        deadline.phase = f"re-scoring {args.run_dir}"
        return run_command("mint-envkit rescore", parser, args, positive=("limit",), run=_run)
