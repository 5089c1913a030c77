"""``mint-envkit interpolate``: mix checkpoints on a grid of coefficients and evaluate each mix.

Example (shell)::

    mint-envkit interpolate examples/arithmetic_env.py:ArithmeticEnv \\
        --model mint-envkit/tiny-qwen3 --checkpoint tinker://a/sampler_weights/final \\
        --checkpoint tinker://b/sampler_weights/final --grid 0,0.25,0.5,0.75,1 --out runs/soup
    mint-envkit interpolate ... --checkpoint A --checkpoint B --checkpoint C \\
        --point 0.5,0.5,0 --point 0.34,0.33,0.33
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mint_envkit.cli.command import add_env_spec, env_target, run_command
from mint_envkit.cli.problems import add_sampling_options, backend_from_args, sample_options
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import SAMPLES
from mint_envkit.interpolation import interpolation_sweep


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit interpolate"))
    """
    parser.description = (
        "Write the linear combination of two or more checkpoints at each grid point "
        "(MinT's interpolate_checkpoints; on the embedded backend without MINT_API_KEY) and "
        "evaluate each: mean reward, correctness beside the best trivial baseline, pass@k. "
        "Re-running with the same --out skips the finished points."
    )
    add_env_spec(parser)
    parser.add_argument("--model", required=True, help="the checkpoints' base model")
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        required=True,
        help="a tinker:// checkpoint (or a base model name: the base model); repeat it",
    )
    parser.add_argument(
        "--grid",
        default=None,
        help="two checkpoints: comma-separated a values, each the mix (1 - a, a) "
        "(default 0,0.25,0.5,0.75,1)",
    )
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        help="one mix as comma-separated coefficients, one per checkpoint; repeat it",
    )
    parser.add_argument("--out", required=True, help="the sweep folder (resumable)")
    parser.add_argument("--json", action="store_true", help="print the points as JSON")
    add_sampling_options(parser)


def _numbers(text: str, option: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise MintEnvkitError(f"{option} {text!r} must be comma-separated numbers") from None


def grid_from_args(args: argparse.Namespace) -> list[Any]:
    """The grid the options name: ``--point`` tuples, else ``--grid`` numbers (two checkpoints).

    Example::

        grid_from_args(argparse.Namespace(point=[], grid="0,0.5,1"))   # [0.0, 0.5, 1.0]
    """
    if args.point and args.grid:
        raise MintEnvkitError("give --grid (two checkpoints) or --point, not both")
    if args.point:
        return [tuple(_numbers(p, "--point")) for p in args.point]
    return _numbers(args.grid or "0,0.25,0.5,0.75,1", "--grid")


async def _run(args: argparse.Namespace) -> int:
    result = await interpolation_sweep(
        env_target(args),
        model_name=args.model,
        checkpoints=args.checkpoint,
        grid=grid_from_args(args),
        root=args.out,
        backend=backend_from_args(args),
        **{**sample_options(args), "samples": args.samples or SAMPLES},
    )
    out = Path(args.out)
    if args.json:
        print(json.dumps([point.record() for point in result.points], indent=2))
    else:
        print(result.table())
        print(f"table: {out / 'interpolation.csv'}  figure: {out / 'interpolation.png'}")
    return 0 if all(p.status == "ok" for p in result.points) else 1


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit interpolate ...``; exit 1 when a point failed, 2 for a usage error.

    Example::

        main(["interpolate", "examples/arithmetic_env.py:ArithmeticEnv", "--model",
              "mint-envkit/tiny-qwen3", "--checkpoint", a, "--checkpoint", b, "--out", "runs/x"])
    """
    return run_command(
        "mint-envkit interpolate",
        parser,
        args,
        positive=("samples", "max_tokens"),
        run=_run,
    )
