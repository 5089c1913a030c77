"""Item 1: mint_envkit's RL loop vs tinker-cookbook's, on one embedded server.

A like-for-like workload: the arithmetic problems of examples/arithmetic_env.py
(batch 2 x group 4, 3 steps, max 32 tokens, LoRA rank 8, lr 3e-3, temperature
1.0, no KL, the tiny model) under ONE reward function on both sides
(benchmarks/_bench_reward.py: 1.0 for a right first number, else minus the reply's
length in characters over 100), which differs within a group even for the random
tiny model, so both loops train (call ``forward_backward``) on every step; the
report counts the calls on both sides. It is run by

  A. ``mint_envkit.rl.train.main`` (in this venv), once per
     ``--off-policy`` value k (``Config.max_steps_off_policy``: 0 is the
     on-policy loop, 1 samples the next batch while the current step
     trains), as the sides ``ours-k0``, ``ours-k1``, ..., and
  B. ``tinker_cookbook.rl.train.main`` 0.3.0 with a cookbook-style MessageEnv
     (benchmarks/peer/cookbook_run.py, in benchmarks/peer/.venv, created when
     missing),

each as its own child process against ONE ``LocalServer`` that this script
starts (per latency). Runs alternate ours-k0, ours-k1, peer, ours-k0, ...
after one untimed warm-up run of each, so load from other work hits every side alike. Each child marks the start of its loop (its first weight
snapshot) and the end of every step (when the step's metrics line is written)
and reads the server's request counts at each mark
(``GET /api/v1/mint_envkit/stats``), so requests by endpoint are counted at
the server, per step.

Run::

    python benchmarks/loop_vs_peer.py                       # latency 0 and 100 ms, k 0 and 1
    python benchmarks/loop_vs_peer.py --latency-ms 1000 --off-policy 0,1 --runs 2 --steps 10 --lr 1e-6

Prints tables and writes benchmarks/results/loop_vs_peer.json.
"""

from __future__ import annotations

import time

import attrs

PROCESS_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
from _bench_reward import SYSTEM_PROMPT, length_graded_reward  # noqa: E402
from _marks import Marks, on_first_snapshot  # noqa: E402

from mint_envkit import DatasetBuilder, MessageStepResult, SingleTurnEnv  # noqa: E402

# each loop's own per-step timings of its sampling and training phases
SAMPLE_TRAIN_KEYS = {
    "ours": ("time/sample", "time/train"),
    "peer": ("time/sampling", "time/train_step"),
}

ENDPOINTS = [
    "asample",
    "retrieve_future",
    "forward_backward",
    "optim_step",
    "save_weights_for_sampler",
    "create_sampling_session",
    "save_weights",
]


class LengthGradedEnv(SingleTurnEnv):
    """The peer's env on our side: the same prompt and reward (benchmarks/_bench_reward.py)."""

    system_prompt = SYSTEM_PROMPT

    def score(self, message):
        reward, correct, parsed = length_graded_reward(message["content"], self.answer)
        return MessageStepResult(
            reward=reward,
            episode_done=True,
            metrics={"correct": float(correct), "parsed": float(parsed)},
        )


def make_builder(args: argparse.Namespace):
    _, arithmetic_problems = C.arithmetic()
    # the example's problems and renderer (examples/rl_hyperparameters.py), group/batch from args
    return DatasetBuilder(
        env=LengthGradedEnv,
        problems=arithmetic_problems(64, seed=0),
        batch_size=args.batch,
        group_size=args.group,
        model_name=args.model,
        renderer_name="qwen3_disable_thinking",
        seed=0,
    )


async def batches_of(builder, steps: int) -> list[list[dict]]:
    train, _ = await builder()
    return [[dict(g.problem) for g in train.get_batch(i % len(train))] for i in range(steps)]


# ------------------------------------------------------------------ child A


def child_ours(args: argparse.Namespace) -> int:
    import tinker

    from mint_envkit import Config
    from mint_envkit.rl import train
    from mint_envkit.runs.files import RunFiles

    marks = Marks(args.base_url, tinker)
    marks.mark("process_imported")
    # the loop starts at its first weight snapshot, whichever call (sync or async) makes it
    on_first_snapshot(tinker.TrainingClient, lambda: marks.mark("loop_start"))
    original_append = RunFiles.append_metrics

    def append_metrics(self, record):
        original_append(self, record)
        marks.mark(f"step_end:{record.get('step')}")

    RunFiles.append_metrics = append_metrics

    builder = make_builder(args)
    expected = json.loads(Path(args.problems).read_text())
    got = asyncio.run(batches_of(builder, args.steps))
    if got != expected:
        raise SystemExit("our builder's batches differ from the problems file")
    config = Config(
        dataset_builder=attrs.evolve(builder, max_generation_tokens=args.max_tokens),
        model_name=args.model,
        log_path=args.log_path,
        learning_rate=args.lr,
        lora_rank=args.lora_rank,
        temperature=args.temperature,
        max_steps=args.steps,
        save_every=0,
        backend="local",
        base_url=args.base_url,
        sampling_seed=0,
        max_steps_off_policy=args.max_steps_off_policy,
    )
    asyncio.run(train.main(config))
    marks.mark("main_returned")
    metrics = [json.loads(x) for x in Path(args.log_path, "metrics.jsonl").read_text().splitlines()]
    Path(args.out).write_text(
        json.dumps(
            {
                "marks": marks.items,
                "metrics": metrics,
                "process_start": PROCESS_START,
                "process_end": time.time(),
            }
        )
    )
    return 0


# ------------------------------------------------------------------ harness


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    keys = set(after) | set(before)
    return {
        k: after.get(k, 0) - before.get(k, 0)
        for k in sorted(keys)
        if after.get(k, 0) - before.get(k, 0)
    }


def analyse(child: dict[str, Any], launched: float, exited: float) -> dict[str, Any]:
    marks = {m["label"]: m for m in child["marks"]}
    steps_marks = sorted(
        (m for m in child["marks"] if m["label"].startswith("step_end:")),
        key=lambda m: int(m["label"].split(":")[1]),
    )
    start = marks.get("loop_start")
    if start is None or not steps_marks or start["t"] > steps_marks[0]["t"]:
        raise SystemExit(
            "the loop-start mark is missing or comes after the first step's end: the hooks "
            f"missed the loop's first weight snapshot (see SNAPSHOT_METHODS); marks: "
            f"{[m['label'] for m in child['marks']]}"
        )
    steps, prev = [], start
    for m in steps_marks:
        steps.append(
            {
                "wall_s": m["t"] - prev["t"],
                "counts": _delta(m["counts"], prev["counts"]),
                "sampled_tokens": m.get("sampled_tokens", 0) - prev.get("sampled_tokens", 0),
            }
        )
        prev = m
    end = marks["main_returned"]
    zero: dict[str, int] = {}
    total_counts = _delta(end["counts"], zero)
    return {
        "steps": steps,
        "setup_s": start["t"] - launched,
        "setup_counts": _delta(start["counts"], zero),
        "finish_s": end["t"] - prev["t"],
        "finish_counts": _delta(end["counts"], prev["counts"]),
        "loop_s": prev["t"] - start["t"],
        "mean_step_s": (prev["t"] - start["t"]) / max(1, len(steps)),
        "main_s": end["t"] - start["t"],
        "e2e_s": exited - launched,
        "total_counts": total_counts,
        "rewards": [m.get("env/all/reward/total") for m in child.get("metrics", [])],
        "loop_metrics": [
            {k: v for k, v in m.items() if k.startswith(("time/", "train/"))}
            for m in child.get("metrics", [])
        ],
    }


def _sample_batches(base_url: str) -> list[int] | None:
    """The server's recent sample-batch sizes (None when this server does not report them)."""
    with urllib.request.urlopen(base_url + "/api/v1/mint_envkit/stats", timeout=10) as response:
        return json.load(response).get("sample_batches")


def run_child(side: str, args, server, problems_file: str, workdir: Path, k: int) -> dict:
    """Run one child of ``side`` (``peer`` or ``ours-k<off-policy>``); ``k`` numbers the run."""
    tag = f"{side}-{k}"
    out = workdir / f"{tag}.json"
    log_path = workdir / f"{tag}-run"
    common = [
        "--base-url",
        server.base_url,
        "--problems",
        problems_file,
        "--log-path",
        str(log_path),
        "--out",
        str(out),
        "--steps",
        str(args.steps),
        "--max-tokens",
        str(args.max_tokens),
        "--lora-rank",
        str(args.lora_rank),
        "--temperature",
        str(args.temperature),
        "--model",
        args.model,
    ]
    if side != "peer":
        cmd = [
            sys.executable,
            __file__,
            "--child-ours",
            *common,
            "--lr",
            str(args.lr),
            "--batch",
            str(args.batch),
            "--group",
            str(args.group),
            "--max-steps-off-policy",
            side.removeprefix("ours-k"),
        ]
        env = C.child_env()
    else:
        cmd = [
            str(C.PEER_PYTHON),
            str(C.PEER_SCRIPT),
            "train",
            *common,
            "--learning-rate",
            str(args.lr),
            "--group-size",
            str(args.group),
            "--tokenizer",
            args.tokenizer_dir,
            "--renderer",
            "qwen3_disable_thinking",
        ]
        env = C.child_env(TINKER_API_KEY="tml-mint-envkit-benchmark")
    server.reset_counts()
    batches_before = _sample_batches(server.base_url)
    load = os.getloadavg()
    launched = time.time()
    with open(workdir / f"{tag}.log", "w") as log:
        proc = subprocess.run(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, timeout=args.timeout
        )
    exited = time.time()
    if proc.returncode != 0:
        tail = (workdir / f"{tag}.log").read_text()[-3000:]
        raise SystemExit(f"{side} run {k} failed (exit {proc.returncode}):\n{tail}")
    result = analyse(json.loads(out.read_text()), launched, exited)
    result["server_counts"] = dict(server.request_counts())
    result["loadavg_at_launch"] = list(load)
    batches = _sample_batches(server.base_url)
    if batches is not None and batches_before is not None and len(batches) < 1000:
        # how many requests each engine sample batch of this run served
        result["sample_batches"] = batches[len(batches_before) :]
    # the loop's own phase timings: (sampling, training) seconds per step
    keys = SAMPLE_TRAIN_KEYS["peer" if side == "peer" else "ours"]
    result["sample_s"] = C.median([m.get(keys[0]) for m in result["loop_metrics"]])
    result["train_s"] = C.median([m.get(keys[1]) for m in result["loop_metrics"]])
    return result


def summarise(runs: list[dict]) -> dict[str, Any]:
    n_steps = min(len(r["steps"]) for r in runs)
    per_step = []
    for i in range(n_steps):
        counts = {
            e: C.median([r["steps"][i]["counts"].get(e, 0) for r in runs])
            for e in sorted({e for r in runs for e in r["steps"][i]["counts"]})
        }
        per_step.append(
            {
                "wall_s": C.median([r["steps"][i]["wall_s"] for r in runs]),
                "sampled_tokens": C.median([r["steps"][i]["sampled_tokens"] for r in runs]),
                "counts": counts,
            }
        )
    totals = {
        e: C.median([r["total_counts"].get(e, 0) for r in runs])
        for e in sorted({e for r in runs for e in r["total_counts"]})
    }
    return {
        "runs": len(runs),
        "per_step": per_step,
        "mean_step_s": C.median([r["mean_step_s"] for r in runs]),
        "loop_s": C.median([r["loop_s"] for r in runs]),
        "main_s": C.median([r["main_s"] for r in runs]),
        "setup_s": C.median([r["setup_s"] for r in runs]),
        "finish_s": C.median([r["finish_s"] for r in runs]),
        "e2e_s": C.median([r["e2e_s"] for r in runs]),
        "total_counts": totals,
        "sample_s": C.median([r["sample_s"] for r in runs]),
        "train_s": C.median([r["train_s"] for r in runs]),
        "tokens_per_step": C.median(
            [sum(st["sampled_tokens"] for st in r["steps"]) / len(r["steps"]) for r in runs]
        ),
        "sample_per_step": C.median(
            [sum(s["counts"].get("asample", 0) for s in r["steps"]) / len(r["steps"]) for r in runs]
        ),
        # like for like: how many steps called forward_backward (both sides should: all)
        "steps_training": C.median(
            [sum(s["counts"].get("forward_backward", 0) > 0 for s in r["steps"]) for r in runs]
        ),
        "steps": n_steps,
        "forward_backward": C.median([r["total_counts"].get("forward_backward", 0) for r in runs]),
        # our loop's datums, and those with every advantage 0 (a forward, no backward pass)
        "datums": C.median(
            [sum(m.get("train/datums", 0) for m in r["loop_metrics"]) for r in runs]
        ),
        "zero_advantage_datums": C.median(
            [sum(m.get("train/zero_advantage_datums", 0) for m in r["loop_metrics"]) for r in runs]
        ),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", default="0,100", help="comma-separated list")
    parser.add_argument(
        "--off-policy",
        default="0,1",
        help="comma-separated Config.max_steps_off_policy values of our loop",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per side per latency")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per side first")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--lora-rank", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--model", default=C.DEFAULT_MODEL)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="the server's torch threads (default: the engine's, 1)",
    )
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", default=None)
    # child mode (internal)
    parser.add_argument("--child-ours", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--problems", help=argparse.SUPPRESS)
    parser.add_argument("--log-path", help=argparse.SUPPRESS)
    parser.add_argument("--max-steps-off-policy", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_ours:
        return child_ours(args)

    from mint_envkit.local.server import LocalServer
    from mint_envkit.rendering.tokenizer import get_tokenizer

    C.ensure_peer_venv()
    info = C.machine_info()
    args.tokenizer_dir = str(Path(get_tokenizer(args.model).name_or_path).resolve())
    latencies = [float(x) for x in args.latency_ms.split(",") if x.strip()]
    sides = [f"ours-k{int(x)}" for x in args.off_policy.split(",") if x.strip()] + ["peer"]
    workroot = Path(tempfile.mkdtemp(prefix="mint-envkit-bench-loop-"))
    problems_file = workroot / "problems.json"
    problems = asyncio.run(batches_of(make_builder(args), args.steps))
    problems_file.write_text(json.dumps(problems))
    print(f"workdir {workroot}; tokenizer {args.tokenizer_dir}", flush=True)

    results: dict[str, Any] = {
        "machine": info,
        "args": {k: v for k, v in vars(args).items() if not k.startswith("child")},
        "problems": problems,
        "latencies": {},
    }
    for latency in latencies:
        workdir = workroot / f"lat{latency:g}"
        workdir.mkdir()
        state = workdir / "state"
        with LocalServer(
            models=[args.model], latency_ms=latency, state_dir=str(state), num_threads=args.threads
        ) as server:
            if errors := server.preload_errors(timeout=300):
                raise SystemExit(f"cannot load {args.model}: {errors}")
            for w in range(args.warmup):
                for side in sides:
                    t0 = time.time()
                    run_child(side, args, server, str(problems_file), workdir, -1 - w)
                    print(
                        f"[latency {latency:g} ms] warm-up {side}: {time.time() - t0:.1f}s",
                        flush=True,
                    )
            runs: dict[str, list] = {side: [] for side in sides}
            for k in range(args.runs):
                for side in sides:
                    r = run_child(side, args, server, str(problems_file), workdir, k)
                    runs[side].append(r)
                    print(
                        f"[latency {latency:g} ms] run {k} {side}: mean step "
                        f"{r['mean_step_s']:.2f}s  loop {r['loop_s']:.2f}s  e2e {r['e2e_s']:.1f}s  "
                        f"asample {r['total_counts'].get('asample', 0)}",
                        flush=True,
                    )
        ratios = {
            side: {
                key: C.median(
                    [a[key] / b[key] for a, b in zip(runs[side], runs["peer"], strict=True)]
                )
                for key in ("mean_step_s", "loop_s", "main_s", "e2e_s")
            }
            for side in sides
            if side != "peer"
        }
        results["latencies"][f"{latency:g}"] = {
            "runs": runs,
            "summary": {side: summarise(rs) for side, rs in runs.items()},
            "median_ratio_ours_over_peer": ratios,
        }
    path = C.write_result("loop_vs_peer", results, args.out)
    print()
    print(report(results))
    print(f"\nwrote {path}")
    return 0


def report(results: dict[str, Any]) -> str:
    lines = []
    for latency, data in results["latencies"].items():
        s = data["summary"]
        n = s["peer"]["runs"]
        lines.append(f"### latency {latency} ms: per step (median of {n} runs per side)\n")
        rows = []
        for side in s:
            for i, st in enumerate(s[side]["per_step"]):
                rows.append(
                    [
                        side,
                        i,
                        st["wall_s"],
                        fmt_count(st["sampled_tokens"]),
                        *[fmt_count(st["counts"].get(e)) for e in ENDPOINTS],
                        fmt_other(st["counts"]),
                    ]
                )
        lines.append(
            C.table(["loop", "step", "wall s", "tokens sampled", *ENDPOINTS, "other"], rows)
        )
        lines.append("")
        rows = []
        for side in s:
            x = s[side]
            rows.append(
                [
                    side,
                    x["mean_step_s"],
                    x["sample_s"],
                    x["train_s"],
                    x["loop_s"],
                    x["setup_s"],
                    x["finish_s"],
                    x["e2e_s"],
                    x["sample_per_step"],
                    x["tokens_per_step"],
                    " ".join(f"{k}={fmt_count(v)}" for k, v in x["total_counts"].items()),
                ]
            )
        lines.append(f"### latency {latency} ms: whole run (medians)\n")
        lines.append(
            C.table(
                [
                    "loop",
                    "mean step s",
                    "sampling s",
                    "training s",
                    "all steps s",
                    "setup s",
                    "after loop s",
                    "process e2e s",
                    "asample/step",
                    "tokens/step",
                    "requests, whole run",
                ],
                rows,
            )
        )
        lines.append("")
        lines.append(
            "forward_backward (medians per run): "
            + "; ".join(
                f"{side} {fmt_count(s[side]['forward_backward'])} calls, "
                f"{fmt_count(s[side]['steps_training'])} of {s[side]['steps']} steps training"
                + (
                    f", {fmt_count(s[side]['zero_advantage_datums'])} of "
                    f"{fmt_count(s[side]['datums'])} datums with every advantage 0"
                    if side != "peer"
                    else ""
                )
                for side in s
            )
        )
        lines.append("")
        for side, r in data["median_ratio_ours_over_peer"].items():
            lines.append(
                f"median ratio {side}/peer (pairs of alternated runs): mean step "
                f"{r['mean_step_s']:.3f}, all steps {r['loop_s']:.3f}, main() from loop start "
                f"{r['main_s']:.3f}, process end to end {r['e2e_s']:.3f}"
            )
        lines.append("")
    return "\n".join(lines)


def fmt_count(v) -> str:
    if v is None:
        return "0"
    return f"{v:g}" if isinstance(v, float) else str(v)


def fmt_other(counts: dict) -> str:
    return " ".join(f"{k}={fmt_count(v)}" for k, v in counts.items() if k not in ENDPOINTS) or "-"


if __name__ == "__main__":
    raise SystemExit(main())
