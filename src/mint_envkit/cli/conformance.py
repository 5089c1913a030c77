"""``mint-envkit conformance``: which Tinker / MinT calls a backend serves, each checked.

One row per call a training loop relies on (sampling, ``forward`` and
``forward_backward`` for every loss, ``optim_step``, saving and loading, the REST
routes, ``mint.mint``'s calls, the sampler-vs-learner logprob agreement), each ``ok``,
``unsupported``, ``failed`` or ``skipped`` with its reason (the rule:
:mod:`.conformance_rows`); the checks are :mod:`.conformance_checks` and
:mod:`.conformance_saves`. Against MinT with ``MINT_API_KEY``, against ``--base-url``,
else against an embedded server started for the run. Exit 1 when a row failed.

Example (shell)::

    mint-envkit conformance                                  # the embedded backend
    mint-envkit conformance --model mint-envkit/tiny-qwen3-small --out rows
    mint-envkit conformance --backend mint                   # MinT (needs MINT_API_KEY)
    mint-envkit conformance --base-url http://127.0.0.1:8765 --backend local
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mint_envkit.cli.command import run_command
from mint_envkit.cli.conformance_checks import CHECKS
from mint_envkit.cli.conformance_probe import AGREEMENT_BOUNDS, Probe
from mint_envkit.cli.conformance_rows import Row, exit_code, run_checks, table
from mint_envkit.rollouts.backend import Connection, connect, default_model, service_client
from mint_envkit.rollouts.settings import BACKENDS, BackendSettings
from mint_envkit.runs.files import write_json_atomic


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit conformance"))
    """
    parser.description = (
        "Call every Tinker / MinT function a training loop relies on, through the SDK, and "
        "print one row per call: ok, unsupported (the server refuses it as not served), "
        "failed (a call the server claims does not work; exit 1) or skipped (a row it needs "
        "is not ok). See docs/local-backend.md, 'What the embedded backend serves'."
    )
    parser.add_argument("--base-url", default=None, help="a running backend (else as training)")
    parser.add_argument("--backend", choices=BACKENDS, default="auto")
    parser.add_argument(
        "--model",
        default=None,
        help="the base model (default: MINT_BASE_MODEL, else Qwen/Qwen3-0.6B on MinT, "
        "mint-envkit/tiny-qwen3 on the embedded backend)",
    )
    parser.add_argument(
        "--dtype",
        choices=("auto", *AGREEMENT_BOUNDS),
        default="auto",
        help="the backend's dtype, which picks the logprob bounds (auto: the embedded "
        "backend's on this machine; bfloat16 for MinT)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds each row's calls may take"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--out", default=None, metavar="DIR", help="also write DIR/conformance.json"
    )


def _dtype(args: argparse.Namespace, connection: Connection) -> tuple[str, str]:
    """The dtype of the bounds and where it came from."""
    if args.dtype != "auto":
        return args.dtype, "--dtype"
    if connection.backend == "mint":
        return "bfloat16", "assumed for MinT; --dtype to say"
    from mint_envkit.local.models.common import default_device

    device, dtype = default_device()
    name = "float32" if str(dtype) == "torch.float32" else "bfloat16"
    return name, f"the embedded backend's on this machine ({device.type})"


def _progress(row: Row) -> None:
    print(f"conformance: {row.name}: {row.status} ({row.seconds:.1f} s)", file=sys.stderr)


async def _run(args: argparse.Namespace) -> int:
    model = args.model or default_model(args.backend)
    settings = BackendSettings(backend=args.backend, base_url=args.base_url, models=(model,))
    async with connect(settings) as connection, service_client(connection) as service:
        dtype, why = _dtype(args, connection)
        probe = Probe(service=service, model=model, dtype=dtype)
        rows = await run_checks(CHECKS, probe, args.timeout, on_row=_progress)
    max_bound, v1_bound = AGREEMENT_BOUNDS[dtype]
    where = (
        "an embedded backend started for this run"
        if connection.restart is not None
        else connection.describe()
    )
    code = exit_code(rows)
    if not args.json:
        print(
            f"conformance of {model} on {where}; logprob bounds of {dtype} ({why}): "
            f"max |diff| {max_bound:g}, |kl_sample_train_v1| {v1_bound:g}"
        )
        print(table(rows))
    if args.json or args.out:
        record = {
            "model": model,
            "backend": connection.backend,
            "base_url": connection.base_url,
            "dtype": dtype,
            "bounds": {"max_abs_diff": max_bound, "kl_sample_train_v1": v1_bound},
            "rows": [row.record() for row in rows],
            "exit_code": code,
        }
        if args.json:
            print(json.dumps(record, indent=2))
        if args.out:
            write_json_atomic(Path(args.out) / "conformance.json", record)
            if not args.json:
                print(f"rows: {Path(args.out) / 'conformance.json'}")
    return code


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit conformance ...``; exit 1 when a row failed, 2 for a usage or setup error.

    Example::

        main(["conformance", "--model", "mint-envkit/tiny-qwen3-small", "--out", "rows"])
    """
    if not args.timeout > 0:
        parser.print_usage(sys.stderr)
        print("mint-envkit conformance: --timeout must be > 0 seconds", file=sys.stderr)
        return 2
    return run_command("mint-envkit conformance", parser, args, positive=(), run=_run)
