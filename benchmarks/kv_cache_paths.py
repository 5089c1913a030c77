"""The decode loop's KV cache paths: the engine's own attention vs transformers' caches.

``kvcache.StaticBackend`` (a preallocated cache and attention written over the model's
own modules; on CPU it attends over the filled columns only) against
``kvcache.CacheBackend`` with ``transformers``' ``DynamicCache`` (one column more per
token) and with its ``StaticCache`` (preallocated, attention over every column, the
CUDA policy's shapes), both with the engine's 4D mask, through the whole engine: ``Engine.sample_many`` of a rank-16 LoRA sampler, 1 torch thread, on the
tiny model and SmolLM2-135M (``mint-envkit install-model smollm2``). A batch of B rows
is B // S requests of S = min(B, 4) samples (an RL group of 4), prompts of 20-27
tokens (left-padded), ``--max-tokens`` new tokens each, no stop, seeds fixed: both paths
get the same requests. Per model and batch, ``--rounds`` rounds after one warm-up
round; each round runs the paths back to back, in a rotating order, so load on the
shared machine falls on all alike. Each call is timed in CPU seconds of the process
(``time.process_time``; torch runs 1 thread, so this is the work done, and waits for a
core on a loaded machine do not count) and in wall seconds. The table gives the
median CPU time, its spread over the rounds, the median (and range) of the rounds'
CPU-time ratios against the own path, the median wall time, the 1-minute load
average, and whether a path gave the own path's tokens and logprobs bit for bit.

The own-attention path is the current ``kvcache.StaticBackend`` or, once it is gone,
the one of the last commit that had it (``git show REV:.../kvcache.py``, loaded as a
module of the engine package; ``--own-from REV`` picks another commit).

Run::

    python benchmarks/kv_cache_paths.py --rounds 5
    python benchmarks/kv_cache_paths.py --models mint-envkit/tiny-qwen3 --batches 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import types
from typing import Any

import torch
from _common import ROOT, machine_info, table, write_result

from mint_envkit.local.engine import decode, kvcache
from mint_envkit.local.engine.core import Engine

MODELS = ("mint-envkit/tiny-qwen3", "mint-envkit/smollm2-135m-instruct")
KVCACHE = "src/mint_envkit/local/engine/kvcache.py"
PATHS = ("own attention", "DynamicCache", "StaticCache")


def own_backend(rev: str | None) -> tuple[type, str]:
    """``StaticBackend`` and where it came from: this tree, or ``rev`` (by default the
    last commit whose ``kvcache.py`` defines it)."""
    if rev is None and hasattr(kvcache, "StaticBackend"):
        return kvcache.StaticBackend, "this tree"
    if rev is None:
        removed = subprocess.run(
            ["git", "log", "-1", "--format=%H", "-S", "class StaticBackend", "--", KVCACHE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        rev = f"{removed}^"
    source = subprocess.run(
        ["git", "show", f"{rev}:{KVCACHE}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("mint_envkit.local.engine.kvcache_own")
    module.__package__ = "mint_envkit.local.engine"
    exec(compile(source, f"{rev}:{KVCACHE}", "exec"), module.__dict__)
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return module.StaticBackend, f"commit {sha}"


def requests(sampler: str, rows: int, max_tokens: int) -> list[tuple[str, list[int], dict]]:
    """``rows`` rows as requests of up to 4 samples, prompts of 20-27 tokens, fixed seeds."""
    samples = min(rows, 4)
    out = []
    for i in range(rows // samples):
        prompt = [1] + [(37 * i + 11 * j) % 2000 + 50 for j in range(19 + i % 8)]
        options = {"num_samples": samples, "max_tokens": max_tokens, "seed": 1000 + i}
        out.append((sampler, prompt, options))
    return out


def results_of(out: list[Any]) -> list[list[tuple[list[int], list[float]]]]:
    return [[(s.tokens, s.logprobs) for s in seqs] for seqs in out]


def max_logprob_gap(a: list, b: list) -> float:
    gaps = [
        abs(x - y)
        for ra, rb in zip(a, b, strict=True)
        for (ta, la), (tb, lb) in zip(ra, rb, strict=True)
        if ta == tb
        for x, y in zip(la, lb, strict=True)
    ]
    return max(gaps, default=0.0)


def measure(
    model: str, batches: list[int], args: argparse.Namespace, own: type
) -> list[dict[str, Any]]:
    engine = Engine(state_dir=tempfile.mkdtemp(), num_threads=1)
    model_id = engine.create_lora(model, rank=16, seed=0)
    sampler, _ = engine.save_for_sampler(model_id, None)
    builders = {
        PATHS[0]: lambda m, **_: own(m, static_shapes=False, compile_step=False),
        PATHS[1]: lambda m, **_: kvcache.CacheBackend(m, static_shapes=False),
        PATHS[2]: lambda m, **_: kvcache.CacheBackend(m, static_shapes=True),
    }
    real = decode.backend_for
    found = []
    try:
        for rows in batches:
            batch = requests(sampler, rows, args.max_tokens)
            cpu: dict[str, list[float]] = {p: [] for p in PATHS}
            wall: dict[str, list[float]] = {p: [] for p in PATHS}
            loads: list[float] = []
            outs: dict[str, list] = {}
            for r in range(args.rounds + 1):  # round 0 warms up
                loads.append(os.getloadavg()[0])
                for path in PATHS[r % 3 :] + PATHS[: r % 3]:
                    decode.backend_for = builders[path]
                    started, started_cpu = time.perf_counter(), time.process_time()
                    out = engine.sample_many(batch)
                    if r:
                        cpu[path].append(time.process_time() - started_cpu)
                        wall[path].append(time.perf_counter() - started)
                    outs[path] = results_of(out)
            own_cpu = cpu[PATHS[0]]
            found.append(
                {
                    "model": model,
                    "rows": rows,
                    "requests": len(batch),
                    "cpu": cpu,
                    "wall": wall,
                    "ratios": {
                        p: [b / a for a, b in zip(own_cpu, cpu[p], strict=True)] for p in PATHS
                    },
                    "load": loads,
                    "identical": {p: outs[PATHS[0]] == outs[p] for p in PATHS},
                    "max_logprob_gap": {p: max_logprob_gap(outs[PATHS[0]], outs[p]) for p in PATHS},
                    "tokens": rows * args.max_tokens,
                }
            )
            print(f"{model} batch {rows}: done ({time.strftime('%H:%M:%S')})", flush=True)
    finally:
        decode.backend_for = real
    return found


def report(found: list[dict[str, Any]]) -> str:
    rows = []
    for f in found:
        for path in PATHS:
            ts, ratios = f["cpu"][path], f["ratios"][path]
            mid = statistics.median(ts)
            same = f["identical"][path]
            rows.append(
                [
                    f["model"].split("/")[-1],
                    f"{f['rows']} ({f['requests']} x {f['rows'] // f['requests']})",
                    path,
                    mid,
                    f"{100 * (max(ts) - min(ts)) / mid:.0f}%",
                    f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
                    if path != PATHS[0]
                    else "1",
                    f["tokens"] / mid,
                    statistics.median(f["wall"][path]),
                    f"{min(f['load']):.1f}-{max(f['load']):.1f}",
                    "" if path == PATHS[0] else "yes" if same else "no",
                    "" if path == PATHS[0] else f"{f['max_logprob_gap'][path]:.1e}",
                ]
            )
    headers = [
        "model",
        "batch (req x samples)",
        "path",
        "CPU s (median)",
        "spread",
        "/ own (per round)",
        "tokens per CPU s",
        "wall s",
        "load 1-min",
        "same bits",
        "max |dlogprob|",
    ]
    return table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--own-from", default=None, help="the commit to take StaticBackend from")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    own, origin = own_backend(args.own_from)
    info = machine_info()
    batches = [int(b) for b in args.batches.split(",")]
    found = []
    for model in args.models.split(","):
        found += measure(model, batches, args, own)
    text = report(found)
    print(f"\nown attention: StaticBackend of {origin}")
    print(text)
    path = write_result(
        "kv_cache_paths",
        {"machine": info, "args": vars(args), "own_from": origin, "runs": found, "table": text},
        args.out,
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
