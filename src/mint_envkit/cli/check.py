"""``mint-envkit check``: run an env or a DatasetBuilder offline and show what it does.

The check is :func:`mint_envkit.replay.check.check`: each group of batch 0 runs
through :class:`~mint_envkit.ScriptedPolicy` (the given ``--reply`` scripts, or a
reply the env scores correct, a wrong one and an unparsable one), printed with its
rewards, parse status and metrics. ``--record FILE`` saves the episodes as golden
transcripts and ``--replay FILE`` re-scores them (:mod:`mint_envkit.replay.golden`).

Example (shell)::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}' --record golden.jsonl
    mint-envkit check --replay golden.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json

from mint_envkit.cli.command import add_env_args
from mint_envkit.cli.deadline import Deadline, add_timeout, check_timeout, load_env_target
from mint_envkit.cli.problems import parse_problems
from mint_envkit.errors import MintEnvkitError
from mint_envkit.replay.check import DEFAULT_GROUPS, DEFAULT_MODEL, check
from mint_envkit.replay.golden import replay_golden


def _script(text: str) -> str | list[str]:
    """A ``--reply`` value: a reply text, or a JSON list of texts (one per turn)."""
    if text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise MintEnvkitError(
                f"--reply {text!r} looks like a JSON list but is not: {err}"
            ) from None
        if not value or not all(isinstance(t, str) for t in value):
            raise MintEnvkitError(f"--reply {text!r}: a per-turn script is a list of strings")
        return value
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit check"))
    """
    parser.description = (
        "Run an env class or a DatasetBuilder through ScriptedPolicy (no model, "
        "no account) and print prompts, replies, parse status and rewards; record the "
        "episodes as golden transcripts, or replay a golden file and report what changed."
    )
    parser.add_argument(
        "target",
        nargs="?",
        help="MODULE:NAME, path/to/file.py:NAME or an installed env's name (mint-envkit list); "
        "with --replay: instead of the file's own",
    )
    add_env_args(parser)
    parser.add_argument("--problem", action="append", help="a problem as JSON (env classes)")
    parser.add_argument(
        "--reply",
        action="append",
        help="one env's scripted reply (repeatable, one env each): a text given at every "
        'turn, or a JSON list of texts, one per turn (\'["<tool_call>...", "5"]\')',
    )
    parser.add_argument(
        "--groups",
        type=int,
        default=None,
        help=f"groups of batch 0 to show (default {DEFAULT_GROUPS})",
    )
    parser.add_argument(
        "--group-size", type=int, default=None, help="envs per group (default: max(3, replies))"
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"model of the tokenizer (env classes; default {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--renderer", action="append", help="renderer to check with (repeatable; default qwen3)"
    )
    parser.add_argument("--local", action="store_true", help="also sample one group locally")
    parser.add_argument("--max-tokens", type=int, default=32)
    add_timeout(parser)
    golden = parser.add_mutually_exclusive_group()
    golden.add_argument(
        "--record",
        metavar="FILE",
        help="save every scripted episode (problem, replies, conversation, reward, correct, "
        "parse status, metrics) to FILE as JSON lines: golden transcripts (--local's "
        "sampled group is not recorded)",
    )
    golden.add_argument(
        "--replay",
        metavar="FILE",
        help="re-score FILE's transcripts with their recorded replies and print what changed "
        "(reward, correct, parse status, turns); exit 1 on a change, 2 on a bad file",
    )


_NOT_WITH_REPLAY = ("problem", "reply", "groups", "group_size", "model", "renderer", "local")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit check ...``; returns the exit code (0 ok, 1 a failure or a change, 2 bad input).

    Example::

        main(["check", "examples/arithmetic_env.py:ArithmeticEnv",
              "--problem", '{"question": "What is 2 + 3?", "answer": "5"}'])
        main(["check", "--replay", "golden.jsonl"])
    """
    if (
        (args.groups is not None and args.groups < 1)
        or (args.group_size is not None and args.group_size < 1)
        or (args.max_tokens < 1)
    ):
        parser.error("--groups, --group-size and --max-tokens must be >= 1")
    if args.replay is not None:
        given = [n for n in _NOT_WITH_REPLAY if getattr(args, n) not in (None, False)]
        if given:
            flags = ", ".join("--" + n.replace("_", "-") for n in given)
            parser.error(
                f"--replay takes the problems, replies, model and renderers from its "
                f"file; drop {flags}"
            )
    elif args.target is None:
        parser.error("give the env or builder to check (MODULE:NAME), or --replay FILE")
    check_timeout(args.timeout, parser)
    with Deadline(args.timeout, "check") as deadline:
        if args.target is not None:  # before the loop: the module may start one of its own
            deadline.phase = f"loading {args.target}"
            load_env_target(args.target, env_args=args.env_args)
        deadline.phase = "checking"
        if args.replay is not None:
            return asyncio.run(replay_golden(args.replay, target=args.target))
        return asyncio.run(
            check(
                args.target,
                env_args=args.env_args,
                scripts=[_script(text) for text in args.reply or []],
                problems=parse_problems(args.problem),
                groups=args.groups,
                group_size=args.group_size,
                model_name=args.model,
                renderers=args.renderer,
                record=args.record,
                local=args.local,
                max_tokens=args.max_tokens,
            )
        )
