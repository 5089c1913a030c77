"""Item 2: latency hiding. Step wall time of our loop as the batch grows, at 200 ms latency.

For batch x group = 1x2, 4x4, 8x8, 16x8 on the arithmetic problems (max 32
tokens, LoRA rank 8, the tiny model), ``mint_envkit.rl.train.main`` runs
``--steps`` steps against one ``LocalServer`` started by this script in this
process (as ``main`` itself does for a local run) with ``--latency-ms`` added
to every operation. The same shapes at latency 0 separate the engine's compute
from the latency. Runs alternate between shapes (round robin); each run is a
fresh ``main()`` (new training client); the per-run figure is the median
``time/step`` of its non-final steps (the final step also saves the final
checkpoint: two more round trips, reported apart). Requests are counted at the
server.

Run::

    python benchmarks/latency_hiding.py                  # 200 ms and 0 ms, 5 runs per shape
    python benchmarks/latency_hiding.py --latency-ms 200 --runs 2

Prints a table and writes benchmarks/results/latency_hiding.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C

SHAPES = [(1, 2), (4, 4), (8, 8), (16, 8)]
TOKENS = {"n": 0}  # tokens sampled (all sample_async answers) during the current run


def count_sampled_tokens() -> None:
    import tinker

    original = tinker.SamplingClient.sample_async

    async def sample_async(client, *a, **kw):
        result = await original(client, *a, **kw)
        TOKENS["n"] += sum(len(s.tokens) for s in result.sequences)
        return result

    tinker.SamplingClient.sample_async = sample_async


async def one_run(args, server, batch: int, group: int, log_path: Path) -> dict:
    from mint_envkit import Config, DatasetBuilder
    from mint_envkit.rl import train

    ArithmeticEnv, arithmetic_problems = C.arithmetic()
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=arithmetic_problems(64, seed=0),
        batch_size=batch,
        group_size=group,
        model_name=args.model,
        renderer_name="qwen3_disable_thinking",
        seed=0,
    )
    config = Config(
        dataset_builder=attrs.evolve(builder, max_generation_tokens=args.max_tokens),
        model_name=args.model,
        log_path=str(log_path),
        learning_rate=3e-3,
        lora_rank=8,
        max_steps=args.steps,
        save_every=0,
        backend="local",
        base_url=server.base_url,
        sampling_seed=0,
    )
    server.reset_counts()
    TOKENS["n"] = 0
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # the loop's progress lines
        await train.main(config)
    wall = time.perf_counter() - t0
    counts = dict(server.request_counts())
    metrics = [json.loads(x) for x in (log_path / "metrics.jsonl").read_text().splitlines()]
    steps = [m["time/step"] for m in metrics]
    return {
        "wall_s": wall,
        "step_s": steps,
        "non_final_step_s": C.median(steps[:-1]) if len(steps) > 1 else steps[0],
        "final_step_s": steps[-1],
        "sample_s": C.median([m["time/sample"] for m in metrics]),
        "train_s": C.median([m["time/train"] for m in metrics]),
        "train_datums": [m.get("train/datums") for m in metrics],
        "counts": counts,
        "asample_per_step": counts.get("asample", 0) / len(steps),
        "tokens_per_step": TOKENS["n"] / len(steps),
    }


async def run_all(args) -> dict:
    from mint_envkit.local.server import LocalServer

    count_sampled_tokens()
    out: dict = {}
    workroot = Path(tempfile.mkdtemp(prefix="mint-envkit-bench-latency-"))
    for latency in args.latencies:
        with LocalServer(
            models=[args.model],
            latency_ms=latency,
            state_dir=str(workroot / f"state{latency:g}"),
            num_threads=args.threads,
        ) as server:
            if errors := server.preload_errors(timeout=300):
                raise SystemExit(f"cannot load {args.model}: {errors}")
            await one_run(args, server, 1, 2, workroot / f"warmup{latency:g}")  # untimed
            runs: dict[str, list] = {f"{b}x{g}": [] for b, g in SHAPES}
            for k in range(args.runs):
                for b, g in SHAPES:
                    r = await one_run(args, server, b, g, workroot / f"l{latency:g}-{b}x{g}-{k}")
                    runs[f"{b}x{g}"].append(r)
                    print(
                        f"[latency {latency:g} ms] run {k} {b}x{g}: step "
                        f"{r['non_final_step_s']:.2f}s (final {r['final_step_s']:.2f}s) "
                        f"sample {r['sample_s']:.2f}s asample/step {r['asample_per_step']:g} "
                        f"tokens/step {r['tokens_per_step']:g}",
                        flush=True,
                    )
        summary = {}
        for shape, rs in runs.items():
            summary[shape] = {
                "step_s": C.median([r["non_final_step_s"] for r in rs]),
                "final_step_s": C.median([r["final_step_s"] for r in rs]),
                "sample_s": C.median([r["sample_s"] for r in rs]),
                "train_s": C.median([r["train_s"] for r in rs]),
                "asample_per_step": C.median([r["asample_per_step"] for r in rs]),
                "tokens_per_step": C.median([r["tokens_per_step"] for r in rs]),
                "runs": len(rs),
            }
        base = summary["1x2"]["step_s"]
        for shape in summary:
            summary[shape]["ratio_to_1x2"] = summary[shape]["step_s"] / base
        out[f"{latency:g}"] = {"runs": runs, "summary": summary}
    return out


def _per_step(rs: list[dict]) -> tuple[list[float], list[float]]:
    """Median (over runs) wall time and trained datums of each step index."""
    n = min(len(r["step_s"]) for r in rs)
    walls = [C.median([r["step_s"][i] for r in rs]) for i in range(n)]
    datums = [C.median([r["train_datums"][i] or 0 for r in rs]) for i in range(n)]
    return walls, datums


def report(results: dict) -> str:
    lat = results["latencies"]
    out = []
    mean_by = {}
    for latency, data in lat.items():
        rows = []
        for shape in [f"{b}x{g}" for b, g in SHAPES]:
            rs = data["runs"][shape]
            walls, datums = _per_step(rs)
            mean = C.median([sum(r["step_s"]) / len(r["step_s"]) for r in rs])
            mean_by[(latency, shape)] = mean
            s = data["summary"][shape]
            rows.append(
                [
                    shape,
                    *[f"{w:.2f} ({d:g})" for w, d in zip(walls, datums, strict=True)],
                    mean,
                    s["step_s"],
                    s["asample_per_step"],
                    s["tokens_per_step"],
                ]
            )
        n = len(next(iter(data["runs"].values())))
        steps = len(rows[0]) - 5
        headers = [
            "batch x group",
            *[f"step {i} s (datums)" + (" final" if i == steps - 1 else "") for i in range(steps)],
            "mean step s",
            "median non-final step s",
            "asample/step",
            "tokens/step",
        ]
        out.append(f"latency {latency} ms: median of {n} runs per shape\n")
        out.append(C.table(headers, rows))
        out.append("")
    shapes = [f"{b}x{g}" for b, g in SHAPES]
    rows = []
    for shape in shapes:
        row = [shape]
        for latency in lat:
            row += [
                mean_by[(latency, shape)] / mean_by[(latency, "1x2")],
                lat[latency]["summary"][shape]["ratio_to_1x2"],
            ]
        if "0" in lat and len(lat) > 1:
            hi = max(lat, key=float)
            row.append(mean_by[(hi, shape)] - mean_by[("0", shape)])
        rows.append(row)
    headers = ["batch x group"]
    for latency in lat:
        headers += [f"mean step / 1x2 @{latency}ms", f"non-final step / 1x2 @{latency}ms"]
    if "0" in lat and len(lat) > 1:
        headers.append("latency cost per step s (mean)")
    out.append(C.table(headers, rows))
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", default="200,0", help="comma-separated list")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--model", default=C.DEFAULT_MODEL)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="the server's torch threads (default: the engine's, 1)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--report", metavar="JSON", help="print the tables of a results file")
    args = parser.parse_args(argv)
    if args.report:
        print(report(json.loads(Path(args.report).read_text())))
        return 0
    args.latencies = [float(x) for x in args.latency_ms.split(",") if x.strip()]
    info = C.machine_info()
    latencies = asyncio.run(run_all(args))
    results = {
        "machine": info,
        "args": {k: v for k, v in vars(args).items()},
        "latencies": latencies,
    }
    path = C.write_result("latency_hiding", results, args.out)
    print()
    print(report(results))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
