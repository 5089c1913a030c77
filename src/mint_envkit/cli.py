"""The ``mint-envkit`` command.

Subcommands:

- ``serve``: run the embedded MinT-compatible backend on 127.0.0.1.
- ``check MODULE:NAME``: run an env class or a DatasetBuilder through
  :class:`~mint_envkit.ScriptedPolicy` (and, with ``--local``, one group
  through the tiny model) and print prompts, replies, parse status, rewards.
- ``summary SWEEP_DIR``: print a sweep's table, write its csv and png again.

Example::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}'
    mint-envkit serve --port 8765
    mint-envkit summary runs/arithmetic-sweep
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.errors import MintEnvkitError
from mint_envkit.rl.rollouts import rollout_groups
from mint_envkit.rl.scripted import GroupReport, ScriptedPolicy

__all__ = ["main"]


def _load_target(spec: str) -> Any:
    if ":" not in spec:
        raise MintEnvkitError(
            f"expected MODULE:NAME (e.g. examples/arithmetic_env.py:ArithmeticEnv or "
            f"my_pkg.envs:builder), got {spec!r}"
        )
    module_ref, name = spec.rsplit(":", 1)
    if module_ref.endswith(".py") or "/" in module_ref:
        path = Path(module_ref)
        if not path.is_file():
            raise MintEnvkitError(f"no such file: {module_ref}")
        # The file's folder goes last on sys.path (its siblings import, the
        # standard library is never shadowed) and the module gets a private
        # name, so a file called math.py cannot replace the real math.
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.append(folder)
        private = f"_mint_envkit_check_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(private, path)
        if module_spec is None or module_spec.loader is None:
            raise MintEnvkitError(f"cannot import {module_ref}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[private] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_ref)
        except ImportError as err:
            raise MintEnvkitError(f"cannot import {module_ref}: {err}") from None
    if not hasattr(module, name):
        raise MintEnvkitError(f"{module_ref} has no attribute {name!r}")
    return getattr(module, name)


def _oracle_replies(group: GroupBuilder) -> list[str]:
    """The reference answer (when the problem has one), a wrong one and an unparsable one."""
    answer = group.problem.get("answer")
    return [*([str(answer)] if answer is not None else []), "0", "I am not sure."]


def _print_group(report: GroupReport, renderer: Any, prompt_tokens: list[int] | None) -> None:
    print(f"--- group {report.index}")
    if prompt_tokens is not None:
        print("rendered prompt:")
        print("  " + renderer.tokenizer.decode(prompt_tokens).replace("\n", "\n  "))
    if report.error:
        print(f"ERROR: {report.error}")
        return
    for reply, reward, logs, metrics in zip(
        report.replies, report.rewards, report.logs, report.metrics, strict=True
    ):
        status = logs.get("parse_status", "-")
        shown = {k: v for k, v in metrics.items() if v}
        print(f"  reply {reply!r:30.30} reward {reward:+.3f}  parse {status:<14} {shown}")


async def _check(args: argparse.Namespace) -> int:
    target = _load_target(args.target)
    if isinstance(target, DatasetBuilder):
        builder = target
    elif callable(target):  # an env class or an env factory (**problem) -> MessageEnv
        if not args.problem:
            raise MintEnvkitError(
                "checking an env class needs at least one --problem JSON, e.g. "
                '--problem \'{"question": "What is 2 + 3?", "answer": "5"}\''
            )
        problems = []
        for text in args.problem:
            try:
                problems.append(json.loads(text))
            except json.JSONDecodeError as err:
                raise MintEnvkitError(f"--problem {text!r} is not JSON: {err}") from None
        builder = DatasetBuilder(
            env=target,
            problems=problems,
            batch_size=len(problems),
            group_size=args.group_size,
            model_name=args.model,
            renderer_name=args.renderer,
            shuffle=False,
        )
    else:
        raise MintEnvkitError(f"{args.target} is neither an env class nor a DatasetBuilder")
    train, _ = await builder()
    groups = train.get_batch(0)[: args.groups]
    failures = 0
    for group in groups:
        renderer = group.renderer()
        try:
            envs = await group.make_envs()
            prompt = renderer.render_tokens(await envs[0].initial_messages_async())
        except Exception as err:  # the user's env: report it, check the other groups
            kind = "" if isinstance(err, MintEnvkitError) else f"{type(err).__name__}: "
            print(f"--- group {group.index}\nERROR: {kind}{err}")
            failures += 1
            continue
        policy = ScriptedPolicy(args.reply or _oracle_replies(group))
        report = await policy.run_group(group)
        failures += bool(report.error)
        _print_group(report, renderer, prompt)
    if args.local:
        failures += await _check_local(groups[0], args)
    return 1 if failures else 0


async def _check_local(group: GroupBuilder, args: argparse.Namespace) -> int:
    import mint

    from mint_envkit.local.server import LocalServer
    from mint_envkit.rl.train import LOCAL_API_KEY, ClientSampler

    print(f"--- one group through {group.model_name} on the embedded backend")
    with LocalServer(models=[group.model_name]) as server:
        service = await asyncio.to_thread(
            mint.ServiceClient, base_url=server.base_url, api_key=LOCAL_API_KEY
        )
        client = await service.create_sampling_client_async(base_model=group.model_name)
        sampler = ClientSampler(client, max_tokens=args.max_tokens)
        rollouts = await rollout_groups([group], sampler)
    report = GroupReport.from_rollout(rollouts[0])
    _print_group(report, group.renderer(), None)
    return 1 if report.error else 0


def _serve(argv: list[str]) -> int:
    from mint_envkit.local.server import serve_main

    return serve_main(argv, exit_process=True)


def _summary(argv: list[str]) -> int:
    from mint_envkit.sweep import summary_main

    return summary_main(argv)


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
    parser = argparse.ArgumentParser(prog="mint-envkit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the embedded MinT-compatible backend (see --help)")
    sub.add_parser("summary", help="print a sweep's table; write summary.csv and summary.png")
    check = sub.add_parser("check", help="run an env or DatasetBuilder through ScriptedPolicy")
    check.add_argument("target", help="MODULE:NAME or path/to/file.py:NAME")
    check.add_argument("--problem", action="append", help="a problem as JSON (env classes)")
    check.add_argument("--reply", action="append", help="a scripted reply (repeatable)")
    check.add_argument("--groups", type=int, default=3, help="groups of batch 0 to show")
    check.add_argument("--group-size", type=int, default=3)
    check.add_argument("--model", default="mint-envkit/tiny-qwen3")
    check.add_argument("--renderer", default="qwen3")
    check.add_argument("--local", action="store_true", help="also sample one group locally")
    check.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args(argv)
    if args.groups < 1 or args.group_size < 1 or args.max_tokens < 1:
        parser.error("--groups, --group-size and --max-tokens must be >= 1")
    try:
        return asyncio.run(_check(args))
    except MintEnvkitError as err:
        print(f"mint-envkit check: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
