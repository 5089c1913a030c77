"""The ``mint-envkit`` command: one argparse tree, one module of this package per command.

Subcommands (each module has ``configure(parser)``, which adds its options, and
``run(args, parser)``, which returns the exit code):

- ``serve``: run the embedded MinT-compatible backend on 127.0.0.1 (:mod:`.serve`).
- ``check MODULE:NAME``: run an env class or a DatasetBuilder through
  :class:`~mint_envkit.ScriptedPolicy` (and, with ``--local``, one group
  through the tiny model) and print prompts, replies, parse status, rewards;
  ``--record FILE`` / ``--replay FILE``: golden transcripts (:mod:`.check`).
- ``summary SWEEP_DIR``: print a sweep's table, write its csv and png again (:mod:`.summary`).
- ``checkpoints list|delete``: local runs' checkpoints (:mod:`.checkpoints`).
- ``view RUN_DIR``: write one HTML page with a run's (or sweep's) curves and transcripts.
- ``install-model smollm2``: install the real pretrained model of the local backend.
- ``eval ENV_SPEC --model M``: pass@k of a model or checkpoints (:mod:`.eval`).
- ``audit ENV_SPEC``: the reward audit, exploits and collapse before paying
  (:mod:`.audit`); exit 1 when it finds one.
- ``interpolate ENV_SPEC --checkpoint A --checkpoint B``: checkpoints mixed on a grid of
  coefficients, each mix evaluated; resumable (:mod:`.interpolate`).
- ``rescore RUN_DIR ENV_SPEC``: a run's recorded replies scored by the env as it is
  now; which rewards, ``correct`` values and parse statuses changed (:mod:`.rescore`);
  exit 1 when one did.
- ``conformance``: one measured row per Tinker / MinT call a training loop relies on
  (losses, gradients, sampling at a temperature, saves), ok / unsupported / failed /
  skipped, against MinT, ``--base-url`` or an embedded server; exit 1 when a row failed
  (:mod:`.conformance`).
- ``init NAME [DIR]``: scaffold a pip-installable env package, its tests and golden
  transcripts (:mod:`.init`).
- ``list``: the installed env packages, whose names work where an ENV_SPEC goes
  (:mod:`.list_envs`).

A command's module is imported, and its options added, only when that command runs
(or prints its help): ``mint-envkit view`` never imports torch. Every command keeps one
convention (:mod:`.command`): ``--json`` prints JSON to stdout, ``--out`` writes files,
and the exit codes of :data:`~mint_envkit.cli.command.EXIT_CODES` (0 ok, 1 findings, 2
usage or setup error, 3 internal error), applied once, in :func:`main`.

Example (shell)::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}'
    mint-envkit check --replay golden.jsonl
    mint-envkit rescore runs/arithmetic examples/arithmetic_env.py:ArithmeticEnv
    mint-envkit serve --port 8765
    mint-envkit summary runs/arithmetic-sweep
    mint-envkit view runs/arithmetic-sweep --open
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
import traceback
from collections.abc import Sequence
from typing import Any

DESCRIPTION = (
    "mint-envkit: write RL environments for language models, check their rewards on your "
    "laptop, evaluate and train them on the embedded backend or on MinT."
)
"""The first line of ``mint-envkit --help``."""

EPILOG = """\
every command: --json prints its result as JSON on stdout, --out writes files;
--env-args '{...}' passes keyword arguments to an env's load_environment.
exit codes: 0 ok; 1 findings or failed checks; 2 a usage or setup error (a bad flag,
an env that does not import, a missing file); 3 an internal error (please report it).
"mint-envkit COMMAND --help" describes a command."""

__all__ = ["main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("serve", "run the embedded MinT-compatible backend (see --help)"),
    "summary": ("summary", "print a sweep's table; write summary.csv and summary.png"),
    "checkpoints": ("checkpoints", "list or delete checkpoints of local runs (see --help)"),
    "view": ("view", "write an HTML page of a run's curves and transcripts (see --help)"),
    "install-model": ("install_model", "install a pretrained model for the local backend"),
    "eval": ("eval", "evaluate a model or checkpoints on an env: pass@k (see --help)"),
    "audit": ("audit", "probe an env's reward for exploits and collapse (see --help)"),
    "interpolate": ("interpolate", "mix checkpoints on a grid and evaluate each mix (see --help)"),
    "check": ("check", "run an env or DatasetBuilder through ScriptedPolicy; golden transcripts"),
    "rescore": ("rescore", "score a run's recorded replies with the env as it is now (see --help)"),
    "conformance": ("conformance", "which Tinker / MinT calls a backend serves, each checked"),
    "init": ("init", "scaffold a pip-installable env package (see --help)"),
    "list": ("list_envs", "list the installed env packages: name, package, version, entry point"),
}
"""Command name -> (its module in this package, its line in ``mint-envkit --help``)."""


class _Command(argparse.ArgumentParser):
    """A command's parser: its module adds the options on first use, so imports stay lazy."""

    def __init__(self, *args: Any, module: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._module = module

    def _configure(self) -> None:
        if self._module is not None:
            module = importlib.import_module(f"mint_envkit.cli.{self._module}")
            self._module = None
            module.configure(self)
            self.set_defaults(_run=module.run, _parser=self)  # no option has a _ dest

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._configure()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._configure()
        return super().format_help()


def _version() -> str:
    try:
        return importlib.metadata.version("mint-envkit")
    except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
        return "unknown (not installed)"


def parser() -> argparse.ArgumentParser:
    """The ``mint-envkit`` parser: every command a subparser (options added when it is used).

    Example::

        parser().parse_args(["view", "runs/demo"]).run_dir   # 'runs/demo'
    """
    top = argparse.ArgumentParser(
        prog="mint-envkit",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"mint-envkit {_version()}")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Command)
    for name, (module, line) in COMMANDS.items():
        sub.add_parser(name, help=line, module=module)
    return top


def main(argv: Sequence[str] | None = None, *, exit_process: bool = False) -> int:
    """Entry point of ``mint-envkit``; returns the exit code (see
    :data:`~mint_envkit.cli.command.EXIT_CODES`).

    A usage error (argparse's, or ``parser.error`` in a command) is 2; so is a
    :class:`~mint_envkit.errors.MintEnvkitError` or an SDK error answered with a status:
    one line on stderr, after the command's name, naming flags as the user typed them.
    Any other exception is the tool's own failure: its traceback, then 3.
    ``exit_process`` (the installed command only, see :func:`console_main`): ``serve``
    ends the process as soon as the server has stopped.

    Example::

        main(["check", "examples/arithmetic_env.py:ArithmeticEnv",
              "--problem", '{"question": "What is 2 + 3?", "answer": "5"}'])
    """
    from mint_envkit.cli.command import flag_names, sdk_error_message
    from mint_envkit.errors import MintEnvkitError

    args = None
    try:
        args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        args.exit_process = exit_process
        return int(args._run(args, args._parser))
    except SystemExit as exc:  # argparse's usage errors and --help, and parser.error in run
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except KeyboardInterrupt:
        print("mint-envkit: interrupted", file=sys.stderr, flush=True)
        return 130
    except Exception as err:
        prog = f"mint-envkit {args.command}" if args is not None else "mint-envkit"
        command = getattr(args, "_parser", None)
        message = str(err) if isinstance(err, MintEnvkitError) else sdk_error_message(err)
        if message is not None:
            print(f"{prog}: {flag_names(message, command)}", file=sys.stderr, flush=True)
            return 2
        traceback.print_exc()
        print(
            f"{prog}: internal error ({type(err).__name__}: {err}); this is a bug in "
            "mint-envkit or a library it calls: please report it with the traceback above",
            file=sys.stderr,
            flush=True,
        )
        return 3


def console_main() -> int:
    """Entry point of the installed ``mint-envkit`` command (``[project.scripts]``).

    The same as :func:`main` on ``sys.argv[1:]``, except that ``serve`` ends the
    process as soon as the server has stopped (a SIGTERM then exits within seconds,
    without the interpreter's slow teardown of a loaded model).

    Example::

        # shell: mint-envkit serve --port 8765
        raise SystemExit(console_main())
    """
    return main(exit_process=True)
