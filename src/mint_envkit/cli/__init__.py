"""The ``mint-envkit`` command.

Subcommands:

- ``serve``: run the embedded MinT-compatible backend on 127.0.0.1.
- ``check MODULE:NAME``: run an env class or a DatasetBuilder through
  :class:`~mint_envkit.ScriptedPolicy` (and, with ``--local``, one group
  through the tiny model) and print prompts, replies, parse status, rewards;
  ``--record FILE`` / ``--replay FILE``: golden transcripts (:mod:`mint_envkit.cli.check`).
- ``summary SWEEP_DIR``: print a sweep's table, write its csv and png again.
- ``checkpoints list|delete``: local runs' checkpoints (:mod:`mint_envkit.cli.checkpoints`).
- ``view RUN_DIR``: write one HTML page with a run's (or sweep's) curves and transcripts.
- ``install-model smollm2``: install the real pretrained model of the local backend.
- ``eval ENV_SPEC --model M``: pass@k of a model or checkpoints (:mod:`mint_envkit.cli.eval`).
- ``audit ENV_SPEC``: the reward audit, exploits and collapse before paying
  (:mod:`mint_envkit.cli.audit`); exit 1 when it finds one.

Example::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}'
    mint-envkit check --replay golden.jsonl
    mint-envkit serve --port 8765
    mint-envkit summary runs/arithmetic-sweep
    mint-envkit view runs/arithmetic-sweep --open
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "prefix_report":  # moved to mint_envkit.cli.check with the check command
        from mint_envkit.cli.check import prefix_report

        return prefix_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _serve(argv: list[str]) -> int:
    from mint_envkit.local.server import serve_main

    return serve_main(argv)


def _summary(argv: list[str]) -> int:
    from mint_envkit.sweep._summary import print_summary

    parser = argparse.ArgumentParser(
        prog="mint-envkit summary",
        description="Print a sweep's table and write summary.csv and summary.png again.",
    )
    parser.add_argument("sweep_dir", metavar="SWEEP_DIR", help="the sweep root (holds sweep.json)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    return print_summary(args.sweep_dir)


def _install_model(argv: list[str]) -> int:
    from mint_envkit.cli.install_model import install_model_main

    return install_model_main(argv)


def _view(argv: list[str]) -> int:
    from mint_envkit.view import view_main

    return view_main(argv)


def console_main() -> int:
    """Entry point of the installed ``mint-envkit`` command (``[project.scripts]``).

    The same as :func:`main` on ``sys.argv[1:]``, except that ``serve`` ends the
    process as soon as the server has stopped (a SIGTERM then exits within seconds,
    without the interpreter's slow teardown of a loaded model). In-process callers use
    :func:`main`, which always returns.

    Example::

        # shell: mint-envkit serve --port 8765
        raise SystemExit(console_main())
    """
    argv = sys.argv[1:]
    if argv and argv[0] == "serve":
        from mint_envkit.local.server import serve_main

        return serve_main(argv[1:], exit_process=True)
    return main(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mint-envkit``; returns the exit code.

    Example::

        main(["check", "examples/arithmetic_env.py:ArithmeticEnv",
              "--problem", '{"question": "What is 2 + 3?", "answer": "5"}'])
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "serve":
        return _serve(argv[1:])
    if argv and argv[0] == "summary":
        return _summary(argv[1:])
    if argv and argv[0] == "checkpoints":
        from mint_envkit.cli.checkpoints import checkpoints_main

        return checkpoints_main(argv[1:])
    if argv and argv[0] == "view":
        return _view(argv[1:])
    if argv and argv[0] == "install-model":
        return _install_model(argv[1:])
    if argv and argv[0] == "eval":
        from mint_envkit.cli.eval import eval_main

        return eval_main(argv[1:])
    if argv and argv[0] == "audit":
        from mint_envkit.cli.audit import audit_main

        return audit_main(argv[1:])
    if argv and argv[0] == "check":
        from mint_envkit.cli.check import check_main

        return check_main(argv[1:])
    parser = argparse.ArgumentParser(prog="mint-envkit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the embedded MinT-compatible backend (see --help)")
    sub.add_parser("summary", help="print a sweep's table; write summary.csv and summary.png")
    sub.add_parser("checkpoints", help="list or delete checkpoints of local runs (see --help)")
    sub.add_parser("view", help="write an HTML page of a run's curves and transcripts (see --help)")
    sub.add_parser("install-model", help="install a pretrained model for the local backend")
    sub.add_parser("eval", help="evaluate a model or checkpoints on an env: pass@k (see --help)")
    sub.add_parser("audit", help="probe an env's reward for exploits and collapse (see --help)")
    sub.add_parser(
        "check", help="run an env or DatasetBuilder through ScriptedPolicy; golden transcripts"
    )
    parser.parse_args(argv)
    return 2  # not reached: "check" is dispatched above, anything else is a usage error


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
