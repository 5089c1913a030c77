"""``mint-envkit eval``: evaluate a base model or checkpoints on an env, without training.

Example (shell)::

    mint-envkit eval examples/rl_hyperparameters.py:builder --model mint-envkit/tiny-qwen3 \\
        --samples 8 --out runs/eval-base
    mint-envkit eval my_envs.py:MathEnv --problems test.jsonl --model Qwen/Qwen3-0.6B \\
        --checkpoint tinker://<run>/sampler_weights/final --compare
    mint-envkit eval examples/rl_hyperparameters.py:builder --samples 4 \\
        --openai-base-url http://127.0.0.1:8765/v1 --model mint-envkit/tiny-qwen3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.cli.command import add_env_spec, env_target, run_command
from mint_envkit.cli.problems import add_sampling_options, backend_from_args, sample_options
from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.claims import claims_against_base
from mint_envkit.evaluation.compare import comparison_table
from mint_envkit.evaluation.run import EVAL_CONCURRENCY, evaluate, evaluate_many, labels
from mint_envkit.rollouts.openai_endpoint import OpenAIEndpoint
from mint_envkit.runs.trackers import TRACKERS


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit eval"))
    """
    parser.description = (
        "Sample K completions per problem with a base model or tinker:// "
        "checkpoints (on MinT with MINT_API_KEY, else the embedded local backend); report "
        "mean reward, pass@k, correctness beside the best trivial baseline (named), answer diversity "
        "and the parse-failure rate; write results.jsonl, summary.json and a viewer page."
    )
    add_env_spec(parser)
    parser.add_argument(
        "--model", default=None, help="the base model (of the checkpoints); default the builder's"
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        help="a tinker:// path (sampler weights or training state), or 'base'; repeat it to "
        "compare checkpoints on the same problems and seeds",
    )
    parser.add_argument("--compare", action="store_true", help="also evaluate the base model")
    add_sampling_options(parser)
    parser.add_argument("--renderer", default=None, help="default: the builder's, else qwen3")
    parser.add_argument("--out", default=None, help="default: runs/eval-<name>-<time>")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help=f"problems at once (default {EVAL_CONCURRENCY})",
    )
    parser.add_argument("--no-report", action="store_true", help="skip the viewer page")
    parser.add_argument(
        "--logger",
        action="append",
        default=[],
        choices=TRACKERS,
        help="an experiment tracker for each checkpoint's figures (under --out; repeat it)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print summary.json (and the claims) as JSON"
    )
    _openai_options(parser)


def _openai_options(parser: argparse.ArgumentParser) -> None:
    """The options of evaluating through an OpenAI-compatible server."""
    door = parser.add_argument_group("an OpenAI-compatible server (OpenAI, vLLM, Ollama, serve)")
    door.add_argument(
        "--openai-base-url",
        metavar="URL",
        default=None,
        help="sample this server's /chat/completions (e.g. http://127.0.0.1:8765/v1) instead "
        "of a Tinker backend; --model names its model; the key is OPENAI_API_KEY",
    )
    door.add_argument(
        "--tokenizer",
        metavar="MODEL",
        default=None,
        help="with --openai-base-url: the model whose tokenizer renders the env's prompts and "
        "turns replies into tokens (default: the builder's; an env class needs it)",
    )
    door.add_argument("--openai-concurrency", type=int, default=8, help="requests in flight")
    door.add_argument(
        "--openai-retries", type=int, default=3, help="tries again after 429, 5xx or no answer"
    )


async def _openai_results(args: argparse.Namespace, out: str) -> list[Any]:
    """One evaluation through ``--openai-base-url`` (the one evaluation, another client)."""
    if not args.model:
        raise ConfigError("--openai-base-url needs --model: the server's model name")
    if args.checkpoint or args.compare:
        raise ConfigError(
            "--checkpoint and --compare are for Tinker backends; with --openai-base-url, name "
            "a checkpoint the server serves as --model (mint-envkit serve: tinker://...)"
        )
    endpoint = OpenAIEndpoint(
        base_url=args.openai_base_url,
        model=args.model,
        max_concurrent=args.openai_concurrency,
        max_retries=args.openai_retries,
    )
    result = await evaluate(
        env_target(args),
        client=endpoint,
        model_name=args.tokenizer,
        label=labels([args.model])[0],
        **_evaluation(args, out),
    )
    used = result.summary["usage"]
    print(
        f"usage: {used['requests']} requests ({used['retries']} retried, {used['failed']} "
        f"failed), {used['prompt_tokens']} prompt + {used['completion_tokens']} completion "
        "tokens (the server's counts)"
    )
    return [result]


async def _claims(args: argparse.Namespace, results: list[Any]) -> list[tuple[str, Any]]:
    """Each checkpoint against the base model (the first): :func:`claims_against_base`,
    re-evaluating with the same options where the base is cut off."""
    common = {
        **sample_options(args),
        "model_name": args.model,
        "backend": backend_from_args(args),
        "renderer_name": args.renderer,
    }

    async def at(max_tokens: int, checkpoints: list[str | None]) -> list[Any]:
        sampling = attrs.evolve(common["sampling"], max_tokens=max_tokens)
        return await evaluate_many(
            env_target(args), checkpoints=checkpoints, **{**common, "sampling": sampling}
        )

    return await claims_against_base(results, at)


def _evaluation(args: argparse.Namespace, out: str) -> dict[str, Any]:
    """The keyword arguments both clients' evaluations take from the options."""
    return {
        **sample_options(args),
        "renderer_name": args.renderer,
        "out_dir": out,
        "loggers": tuple(args.logger),
    }


def _checkpoints(args: argparse.Namespace) -> list[str | None]:
    chosen: list[str | None] = [None if c == "base" else c for c in args.checkpoint] or [None]
    if args.compare and None not in chosen:
        chosen.insert(0, None)
    return chosen


async def _tinker_results(args: argparse.Namespace, out: str) -> list[Any]:
    return await evaluate_many(
        env_target(args),
        model_name=args.model,
        checkpoints=_checkpoints(args),
        backend=backend_from_args(args),
        **_evaluation(args, out),
    )


async def _run(args: argparse.Namespace) -> int:
    out = args.out or (
        f"runs/eval-{args.target.rsplit(':', 1)[-1]}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    if args.openai_base_url:
        results = await _openai_results(args, out)
    else:
        results = await _tinker_results(args, out)
    first = results[0].summary
    compared = first.get("checkpoint") is None and len(results) > 1
    claims = await _claims(args, results) if compared else []
    report = None
    if not args.no_report:
        from mint_envkit.view import write_report

        report = write_report(out)
    if args.json:
        record = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))
        record["claims"] = {label: claim.record() for label, claim in claims}
        record["report"] = None if report is None else str(report)
        print(json.dumps(record, indent=2, default=str))
        return 0
    source = (
        f"from {args.problems}"
        if args.problems
        else ("from --problem" if args.problem else f"split {first['split']}")
    )
    print(
        f"eval of {first['model']} on {first['problems']} problems x {first['samples']} samples "
        f"({source}, {first['backend']} backend, seed {first['seed']}, reply limit "
        f"{first['max_tokens']} tokens)"
    )
    print(comparison_table(results))
    for label, claim in claims:
        print(f"{label} vs base: {claim.line()}")
    print(f"per problem: {Path(out) / 'results.jsonl'}  summary: {Path(out) / 'summary.json'}")
    if report is not None:
        print(f"report: {report}")
    return 0


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit eval ...``; returns the exit code (2 for a usage or setup error).

    Example::

        main(["eval", "examples/rl_hyperparameters.py:builder", "--model",
              "mint-envkit/tiny-qwen3", "--samples", "4", "--limit", "8"])
    """
    return run_command(
        "mint-envkit eval",
        parser,
        args,
        positive=("samples", "max_tokens", "concurrency", "openai_concurrency"),
        run=_run,
    )
