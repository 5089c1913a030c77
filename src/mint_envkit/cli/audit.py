"""``mint-envkit audit``: the reward audit of an env, offline, before paying for MinT.

Exit status: 0 when the audit passed (nothing but warnings and declared leniencies), 1
when it found something (an exploit, a lenient or crashing reward, an inverted reward, a
collapse...; so it can gate a CI), 2 for a usage or setup error (a bad option, an env
that does not import or cannot be built), 3 when the audit itself failed (a bug in
mint_envkit: the traceback is printed, for a report).

Example (shell)::

    mint-envkit audit examples/rl_hyperparameters.py:builder --out runs/audit
    mint-envkit audit my_envs.py:builder --learn 8 --price-sample 0.6 --price-train 1.8
    mint-envkit audit my_envs.py:YesNoEnv --problems yes_no.jsonl --model mint-envkit/tiny-qwen3
"""

from __future__ import annotations

import argparse

from mint_envkit.cli.command import add_env_spec, env_target, run_command
from mint_envkit.cli.problems import add_problem_options, problems_from_args
from mint_envkit.evaluation.spec import SAMPLES
from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME as SMOLLM2


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit audit"))
    """
    parser.description = (
        "Probe an env's reward with adversarial replies (empty, restated, cut "
        "off, long, format only, every answer listed, a range of numbers, every offered "
        "option, a hedge, the answer buried among others, the most common answer, ...), "
        "compare each with a correct and a wrong answer and the best trivial baseline "
        "(constant, by position in the prompt, uniform), sample a real model, optionally "
        "train a few steps to check that held-out correctness beats the baseline where "
        "nothing is cut off, without collapse or position-following, and preview the MinT "
        "cost. Exit 0 on a pass, 1 when an exploit, a lenient, crashing or inverted reward, a "
        "collapse, no gain or position-following is found, 2 on a usage or setup error, 3 "
        "when the audit itself failed."
    )
    add_env_spec(parser)
    parser.add_argument(
        "--model", default=None, help="the model whose tokenizer renders prompts (env classes)"
    )
    add_problem_options(parser)
    parser.add_argument("--split", choices=("train", "test", "all"), default="train")
    parser.add_argument(
        "--probes",
        default=None,
        metavar="FILE",
        help="more probes, a .jsonl of {name, reply, kind}: kind non_answer (default) or "
        "answer_shaped; {answer}, {wrong}, {question} in a reply are filled in",
    )
    parser.add_argument("--limit", type=int, default=20, help="audit the first N problems")
    from mint_envkit.auditing.generated import DEFAULT_EXAMPLES

    parser.add_argument(
        "--search",
        type=int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help="generated replies tried per family of the answer's type (nan, nearby numbers, "
        f"prefixes, look-alikes, missing fields...; default {DEFAULT_EXAMPLES}; 0: none); "
        "seeded, so the same on every machine",
    )
    parser.add_argument("--seed", type=int, default=0, help="the generated search's seed")
    parser.add_argument(
        "--sample-model",
        default=SMOLLM2,
        help=f"sample this model for parse and truncation rates (default {SMOLLM2}; "
        "'none' to skip)",
    )
    parser.add_argument(
        "--samples", type=int, default=SAMPLES, help=f"samples per problem (default {SAMPLES})"
    )
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="the reply limit (default: the builder's)"
    )
    parser.add_argument("--learn", type=int, default=0, metavar="N", help="train N steps")
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--steps", type=int, default=None, help="planned MinT steps (cost)")
    for key in ("sample", "prefill", "train"):
        parser.add_argument(
            f"--price-{key}", type=float, default=None, help=f"USD per million {key} tokens"
        )
    parser.add_argument("--base-url", default=None, help="a running backend")
    parser.add_argument("--backend", choices=("auto", "local", "mint"), default=None)
    parser.add_argument("--out", default=None, help="write audit.json (and learn/) here")
    parser.add_argument(
        "--logger",
        action="append",
        default=[],
        choices=("tensorboard", "wandb", "mlflow"),
        help="an experiment tracker for the audit's figures (under --out; repeat it)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    parser.add_argument(
        "--mutants",
        type=int,
        default=20,
        metavar="N",
        help="a code env: mutate each reference solution at most N times to measure its "
        "tests (default 20; 0 skips)",
    )
    # the audit's parameters its errors name, as the flags the user typed
    parser.flag_aliases = {  # type: ignore[attr-defined]
        "learn_steps": "--learn",
        "planned_steps": "--steps",
        "model_name": "--model",
        "out_dir": "--out",
        "learn_options": "--learning-rate",
    }


async def _run(args: argparse.Namespace) -> int:
    from mint_envkit.auditing import audit

    prices = {
        key: value
        for key in ("sample", "prefill", "train")
        if (value := getattr(args, f"price_{key}")) is not None
    }
    sample_model = None if args.sample_model in ("", "none") else args.sample_model
    learn_options = {} if args.learning_rate is None else {"learning_rate": args.learning_rate}
    report = await audit(
        env_target(args),
        model_name=args.model,
        problems=problems_from_args(args),
        limit=args.limit,
        split=args.split,
        probes=args.probes,
        search=args.search,
        seed=args.seed,
        sample_model=sample_model,
        samples=args.samples,
        max_tokens=args.max_tokens,
        learn_steps=args.learn,
        learn_options=learn_options,
        planned_steps=args.steps,
        prices=prices or None,
        base_url=args.base_url,
        backend=args.backend,
        out_dir=args.out,
        loggers=tuple(args.logger),
        mutants=args.mutants,
    )
    print(report.to_json() if args.json else report.table(), flush=True)
    if args.out and report.learn and not args.json:
        from mint_envkit.view import write_report

        print(f"report: {write_report(args.out)} (the learning run, with the audit above it)")
    return 0 if report.ok else 1


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit audit ...``; returns the exit code: 0 pass, 1 findings, 2 usage or
    setup error, 3 the audit itself failed.

    Example::

        main(["audit", "examples/rl_hyperparameters.py:builder", "--sample-model", "none"])
    """
    if args.search is not None and args.search < 0:
        parser.error(f"--search must be >= 0 (generated replies per family), got {args.search}")
    if args.learn < 0:
        parser.error(f"--learn must be >= 0 (training steps), got {args.learn}")
    return run_command(
        "mint-envkit audit",
        parser,
        args,
        positive=("limit", "samples", "max_tokens"),
        run=_run,
    )
