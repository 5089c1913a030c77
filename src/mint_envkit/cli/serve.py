"""``mint-envkit serve``: the embedded server's command line; it runs in
:func:`mint_envkit.local.foreground.serve_in_foreground` (signals, readiness lines).

Example (shell)::

    mint-envkit serve --port 8765 --model mint-envkit/tiny-qwen3 --api-key sk-local-x
    python -m mint_envkit.cli serve --port 0 --model mint-envkit/tiny-qwen3-small
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from mint_envkit.errors import ConfigError
from mint_envkit.local.foreground import serve_in_foreground
from mint_envkit.local.http.limits import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_REQUEST_TOKENS,
    DEFAULT_MAX_SAMPLE_TOKENS,
    DEFAULT_SAMPLE_CHUNK_TOKENS,
    DEFAULT_SAMPLE_SEGMENT_TOKENS,
    Limits,
)
from mint_envkit.local.http.state import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_UNNAMED_SAMPLERS
from mint_envkit.local.server import DEFAULT_MODEL, LocalServer, is_loopback_host
from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAMES

BUILTIN = ", ".join([*sorted(TINY_MODEL_NAMES), SMOLLM2_MODEL_NAME])
"""The built-in model names, for the help (the backend's own list loads torch)."""


def configure(p: argparse.ArgumentParser) -> None:
    """Add the command's options to ``p``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit serve"))
    """
    p.description = (
        "Run the embedded MinT-compatible training server on this machine. Point the mint / "
        "tinker SDK at it with ServiceClient(base_url='http://127.0.0.1:PORT') or "
        "MINT_BASE_URL; any API key is accepted unless --api-key is given."
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 = any free port)")
    p.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help=f"base model to serve; repeat for several. A built-in name ({BUILTIN}; "
        "smollm2 after 'mint-envkit install-model smollm2'), a local directory or .gguf file, "
        f"or a Hugging Face id already in the local cache (default: {DEFAULT_MODEL})",
    )
    p.add_argument(
        "--state-dir",
        default=None,
        help="directory for checkpoints (default: $MINT_ENVKIT_STATE_DIR, else "
        "~/.cache/mint_envkit/state, shared by every job of this user that sets neither)",
    )
    p.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="fixed delay added to every operation, to benchmark as if remote (default: 0)",
    )
    p.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda (default: auto)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: $MINT_ENVKIT_NUM_THREADS, else 1)",
    )
    p.add_argument(
        "--max-unnamed-samplers",
        type=int,
        default=DEFAULT_MAX_UNNAMED_SAMPLERS,
        help="unnamed sampler snapshots kept in memory; the oldest is released past it "
        f"(default {DEFAULT_MAX_UNNAMED_SAMPLERS})",
    )
    p.add_argument(
        "--max-body-mb",
        type=float,
        default=DEFAULT_MAX_BODY_BYTES / (1024 * 1024),
        help="refuse request bodies larger than this with 413 (default: 64)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="log level (default: info; debug also logs every request)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host and any Host header (logs a loud warning; use with "
        "--api-key, on a trusted network only)",
    )
    p.add_argument(
        "--api-key",
        default=None,
        help="require this key from every client (the SDK's api_key / MINT_API_KEY); "
        "default: none, any key is accepted",
    )
    limits = p.add_argument_group("limits (what one request may cost; see docs/local-backend.md)")
    limits.add_argument(
        "--max-request-tokens",
        type=int,
        default=DEFAULT_MAX_REQUEST_TOKENS,
        help="tokens one forward/forward_backward may hold (datums x longest datum), and the "
        f"longest prompt_logprobs prompt (default {DEFAULT_MAX_REQUEST_TOKENS})",
    )
    limits.add_argument(
        "--max-sample-tokens",
        type=int,
        default=DEFAULT_MAX_SAMPLE_TOKENS,
        help="tokens one asample may ask for: num_samples x (prompt + max_tokens) "
        f"(default {DEFAULT_MAX_SAMPLE_TOKENS})",
    )
    limits.add_argument(
        "--sample-chunk-tokens",
        type=int,
        default=DEFAULT_SAMPLE_CHUNK_TOKENS,
        help="bigger sample requests are split into sub-requests of about this many tokens, "
        f"so small requests are not starved (default {DEFAULT_SAMPLE_CHUNK_TOKENS})",
    )
    limits.add_argument(
        "--sample-segment-tokens",
        type=int,
        default=DEFAULT_SAMPLE_SEGMENT_TOKENS,
        help="samples longer than this are drawn in segments of this many tokens, so a "
        "long job cannot hold the engine for long, but a seeded sample then differs from "
        f"the unsegmented draw (default {DEFAULT_SAMPLE_SEGMENT_TOKENS}: off)",
    )
    limits.add_argument(
        "--idle-timeout-min",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S / 60,
        help="release training clients and sessions idle this many minutes "
        f"(default {DEFAULT_IDLE_TIMEOUT_S / 60:g})",
    )
    limits.add_argument(
        "--max-tokens-per-pass",
        type=int,
        default=None,
        help="the engine's memory budget: padded tokens per model pass (default: the engine's)",
    )
    p.add_argument(
        "--batch-invariant",
        action="store_true",
        help="batch only sample requests of one prompt length, so a fixed seed gives bit for "
        "bit the same samples and logprobs whatever else runs (CPU; slower when lengths vary)",
    )
    p.add_argument(
        "--no-preload",
        action="store_true",
        help="serve at once and load each model on first use, instead of loading them "
        "(and failing on a bad --model) before announcing readiness",
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the server in the foreground until Ctrl-C / SIGTERM; the exit code.

    0 after a clean stop, 2 for bad arguments or a model that cannot be loaded. With
    ``args.exit_process`` (the installed command) the process ends as soon as the server
    has stopped (``os._exit`` after flushing output), skipping the interpreter's teardown
    of the loaded model, which can take longer than the 10 s a SIGTERM may wait.

    Example::

        main(["serve", "--port", "0", "--model", "mint-envkit/tiny-qwen3-small"])
    """
    code = _serve(args)
    if getattr(args, "exit_process", False):
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    return code


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if not args.allow_remote and not is_loopback_host(args.host):
        print(
            f"mint-envkit serve: refusing --host {args.host}: the server listens on loopback "
            "only. Add --allow-remote (and --api-key) to listen there anyway.",
            file=sys.stderr,
        )
        return 2
    if args.latency_ms < 0 or args.max_body_mb <= 0 or not (0 <= args.port <= 65535):
        print(
            "mint-envkit serve: --latency-ms must be >= 0, --max-body-mb > 0, --port in 0..65535",
            file=sys.stderr,
        )
        return 2
    models = args.models or [DEFAULT_MODEL]
    try:
        limits = Limits(
            max_request_tokens=args.max_request_tokens,
            max_sample_tokens=args.max_sample_tokens,
            sample_chunk_tokens=args.sample_chunk_tokens,
            sample_segment_tokens=args.sample_segment_tokens,
            idle_timeout_s=args.idle_timeout_min * 60,
        )
    except ConfigError as err:
        print(f"mint-envkit serve: {err}", file=sys.stderr)
        return 2
    server = LocalServer(
        models,
        state_dir=args.state_dir,
        latency_ms=args.latency_ms,
        host=args.host,
        port=args.port,
        device=args.device,
        num_threads=args.threads,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        max_unnamed_samplers=args.max_unnamed_samplers,
        allow_remote=args.allow_remote,
        log_level=args.log_level if args.log_level != "info" else "warning",
        preload=not args.no_preload,
        api_key=args.api_key,
        limits=limits,
        max_tokens_per_pass=args.max_tokens_per_pass,
        batch_invariant=args.batch_invariant,
    )
    return serve_in_foreground(
        server,
        models,
        preload=not args.no_preload,
        latency_ms=args.latency_ms,
        state_dir=args.state_dir,
    )
