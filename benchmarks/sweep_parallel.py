"""Item 3: sweep parallelism, and the main job's wall time.

(a) The default 8-config sweep (grid kl_penalty_coef [0, 0.02] x temperature
    [0.7, 1.0] x group_size [2, 4], 1 step each, the example's base config:
    batch 2, max 32 tokens, LoRA rank 8, lr 3e-3, the tiny model) on the
    embedded backend with ``--latency-ms`` (default 200) added to every
    operation, run with ``Sweep(parallel=1)`` and ``Sweep(parallel=8)``, and a
    sweep of ONE config (the heaviest: kl 0.02, temperature 1.0, group 4) for
    "one config's time". Each sweep runs in a fresh child process, as a user
    runs it (``Sweep.run()`` starts one shared embedded server, loads the
    model, runs the configs, writes the summary): "cold". The same three
    again "warm": after an untimed one-config sweep in the same process, so
    imports and the first model load are paid before the timed sweep. Kinds
    alternate (p1, p8, single, p1-warm, p8-warm, single-warm, p1, ...).
    Reported: ``Sweep.run()`` wall time, the process end-to-end time (cold),
    and each config's own seconds (``results.jsonl``).
(b) ``python examples/rl_hyperparameters.py`` end to end (the main job: latency
    0, parallel 1 as the example chooses on the local backend), ``--runs``
    times, with MINT_LOG_ROOT pointing at a fresh directory each time.

Run::

    python benchmarks/sweep_parallel.py                  # 200 ms, 5 runs of each kind + 5 example runs
    python benchmarks/sweep_parallel.py --runs 2 --example-runs 0

Prints tables and writes benchmarks/results/sweep_parallel.json.
"""

from __future__ import annotations

import time

import attrs

PROCESS_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

SINGLE = {"MINT_RL_KL_COEFS": "0.02", "MINT_RL_TEMPS": "1.0", "MINT_RL_GROUPS": "4"}


def base_config(model: str, latency_ms: float, root: str):
    """examples/rl_hyperparameters.py's base config for the local backend."""
    from mint_envkit import Config, DatasetBuilder

    ArithmeticEnv, arithmetic_problems = C.arithmetic()
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=arithmetic_problems(64, seed=0),
        batch_size=2,
        group_size=4,
        model_name=model,
        renderer_name="qwen3_disable_thinking",
        seed=0,
    )
    return Config(
        dataset_builder=attrs.evolve(builder, max_generation_tokens=32),
        model_name=model,
        log_path=f"{root}/base",
        learning_rate=3e-3,
        lora_rank=8,
        backend="local",
        save_every=0,
        local_latency_ms=latency_ms,
    )


def child(args) -> int:
    from mint_envkit.sweep import Sweep

    kind, _, warm = args.kind.partition("-")
    warmup_s = None
    if warm:
        # untimed: a one-config sweep in this process first, so imports and the model
        # load are paid before the timed sweep (its server then loads in < 1 s)
        wroot = f"{args.root}-warmup"
        t0 = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            asyncio.run(
                Sweep.from_env(
                    base_config(args.model, args.latency, wroot),
                    root=wroot,
                    environ=SINGLE,
                    quiet=True,
                ).run()
            )
        warmup_s = time.perf_counter() - t0
    config = base_config(args.model, args.latency, args.root)
    environ = SINGLE if kind == "single" else {}
    parallel = 8 if kind == "p8" else 1
    sweep = Sweep.from_env(config, root=args.root, parallel=parallel, environ=environ, quiet=True)
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        results = asyncio.run(sweep.run())
    wall = time.perf_counter() - t0
    configs = [
        {"name": r.name, "status": r.status, "seconds": r.seconds, "error": r.error}
        for r in results
    ]
    Path(args.out).write_text(
        json.dumps(
            {
                "sweep_run_s": wall,
                "warmup_s": warmup_s,
                "configs": configs,
                "table": sweep.table(),
                "process_start": PROCESS_START,
                "process_end": time.time(),
            }
        )
    )
    return 0


def run_kind(kind: str, args, workroot: Path, k: int) -> dict:
    root = workroot / f"{kind}-{k}"
    out = workroot / f"{kind}-{k}.json"
    extra = {"MINT_ENVKIT_STATE_DIR": str(workroot / "state")}
    if args.threads:
        extra["MINT_ENVKIT_NUM_THREADS"] = str(args.threads)
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--root",
        str(root),
        "--out",
        str(out),
        "--latency",
        str(args.latency_ms),
        "--model",
        args.model,
    ]
    t0 = time.time()
    with open(workroot / f"{kind}-{k}.log", "w") as log:
        proc = subprocess.run(
            cmd,
            env=C.child_env(**extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=args.timeout,
        )
    e2e = time.time() - t0
    if proc.returncode:
        raise SystemExit(
            f"{kind} run {k} failed:\n{(workroot / f'{kind}-{k}.log').read_text()[-3000:]}"
        )
    data = json.loads(out.read_text())
    data["e2e_s"] = e2e
    data["failed"] = [c["name"] for c in data["configs"] if c["status"] != "ok"]
    return data


def run_example(args, workroot: Path, k: int) -> dict:
    root = workroot / f"example-{k}"
    extra = {"MINT_LOG_ROOT": str(root), "MINT_ENVKIT_STATE_DIR": str(workroot / "state")}
    if args.threads:
        extra["MINT_ENVKIT_NUM_THREADS"] = str(args.threads)
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, str(C.EXAMPLES / "rl_hyperparameters.py")],
        env=C.child_env(**extra),
        capture_output=True,
        text=True,
        cwd=workroot,
        timeout=args.timeout,
    )
    e2e = time.time() - t0
    if proc.returncode:
        raise SystemExit(f"example run {k} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return {"e2e_s": e2e, "stdout": proc.stdout}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--runs", type=int, default=5, help="runs of each sweep kind")
    parser.add_argument("--example-runs", type=int, default=5)
    parser.add_argument("--model", default=C.DEFAULT_MODEL)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="MINT_ENVKIT_NUM_THREADS for the server (default: cores)",
    )
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--child",
        choices=[k + w for k in ("p1", "p8", "single") for w in ("", "-warm")],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.kind = args.child
        return child(args)

    info = C.machine_info()
    workroot = Path(tempfile.mkdtemp(prefix="mint-envkit-bench-sweep-"))
    print(f"workdir {workroot}", flush=True)
    kinds = ["p1", "p8", "single", "p1-warm", "p8-warm", "single-warm"]
    runs: dict[str, list] = {kind: [] for kind in kinds}
    for k in range(args.runs):
        for kind in kinds:
            r = run_kind(kind, args, workroot, k)
            runs[kind].append(r)
            secs = [c["seconds"] for c in r["configs"]]
            print(
                f"[{args.latency_ms:g} ms] run {k} {kind}: Sweep.run {r['sweep_run_s']:.1f}s  "
                f"process {r['e2e_s']:.1f}s  configs {len(secs)} (median {C.median(secs):.1f}s, "
                f"max {max(secs):.1f}s)  failed {r['failed'] or '-'}",
                flush=True,
            )
    examples = []
    for k in range(args.example_runs):
        r = run_example(args, workroot, k)
        examples.append(r)
        print(f"[example] run {k}: {r['e2e_s']:.1f}s", flush=True)

    summary = {}
    for kind, rs in runs.items():
        if not rs:
            continue
        summary[kind] = {
            "sweep_run_s": C.median([r["sweep_run_s"] for r in rs]),
            "e2e_s": C.median([r["e2e_s"] for r in rs]),
            "config_median_s": C.median(
                [C.median([c["seconds"] for c in r["configs"]]) for r in rs]
            ),
            "config_max_s": C.median([max(c["seconds"] for c in r["configs"]) for r in rs]),
            "runs": len(rs),
            "failed_configs": sum(len(r["failed"]) for r in rs),
        }
    for w in ("", "-warm"):
        p1, p8, single = (summary.get(k + w) for k in ("p1", "p8", "single"))
        if p1 and p8 and single:
            summary["ratios" + w] = {
                "p8_over_single_sweep_run": p8["sweep_run_s"] / single["sweep_run_s"],
                "p8_over_single_e2e": p8["e2e_s"] / single["e2e_s"],
                "p8_over_p1_config_median": p8["sweep_run_s"] / p1["config_median_s"],
                "p1_over_p8_sweep_run": p1["sweep_run_s"] / p8["sweep_run_s"],
            }
    if examples:
        summary["example"] = {
            "e2e_s": C.median([r["e2e_s"] for r in examples]),
            "min_s": min(r["e2e_s"] for r in examples),
            "max_s": max(r["e2e_s"] for r in examples),
            "runs": len(examples),
        }
    results = {
        "machine": info,
        "args": vars(args),
        "runs": runs,
        "examples": examples,
        "summary": summary,
    }
    path = C.write_result("sweep_parallel", results, args.out)
    print()
    print(report(results))
    print(f"\nwrote {path}")
    return 0


def report(results: dict) -> str:
    s = results["summary"]
    lat = results["args"]["latency_ms"]
    rows = []
    names = {
        "p1": "8 configs, parallel=1",
        "p8": "8 configs, parallel=8",
        "single": "1 config (kl0p02-t1p0-g4)",
    }
    for w, label in (("", "cold"), ("-warm", "warm")):
        for kind in ("p1", "p8", "single"):
            if kind + w in s:
                x = s[kind + w]
                rows.append(
                    [
                        names[kind],
                        label,
                        x["sweep_run_s"],
                        x["e2e_s"] if not w else "-",
                        x["config_median_s"],
                        x["config_max_s"],
                        x["runs"],
                        x["failed_configs"],
                    ]
                )
    out = [
        f"sweep at {lat:g} ms latency (medians; cold = fresh process, model loaded by the "
        "sweep; warm = after an untimed 1-config sweep in the same process)\n",
        C.table(
            [
                "sweep",
                "process",
                "Sweep.run s",
                "process s",
                "config median s",
                "config max s",
                "runs",
                "failed",
            ],
            rows,
        ),
    ]
    for w, label in (("", "cold"), ("-warm", "warm")):
        if "ratios" + w in s:
            r = s["ratios" + w]
            out.append(
                f"\n{label}: parallel=8 / one config {r['p8_over_single_sweep_run']:.2f} "
                f"(Sweep.run), {r['p8_over_single_e2e']:.2f} (process); parallel=8 Sweep.run "
                f"/ median config time inside parallel=1 {r['p8_over_p1_config_median']:.2f}; "
                f"parallel=1 / parallel=8 {r['p1_over_p8_sweep_run']:.2f}"
            )
    if "example" in s:
        e = s["example"]
        out.append(
            f"\n`python examples/rl_hyperparameters.py` (latency 0, parallel 1): median "
            f"{e['e2e_s']:.1f}s over {e['runs']} runs (min {e['min_s']:.1f}, max {e['max_s']:.1f})"
        )
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
