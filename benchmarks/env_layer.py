"""Item 4: the environment layer, ours vs tinker-cookbook's, with a scripted policy (no model).

10,000 episodes (2,500 arithmetic problems x group 4) through

  A. ours: ``ScriptedPolicy(replies).run(builder)`` -> ``rollout_groups`` ->
     ``GroupBuilder.make_envs`` -> our ``EnvFromMessageEnv`` -> the ``qwen3``
     renderer -> the example's ``ArithmeticEnv`` (``first_number`` parser,
     reward) -> group rewards;
  B. tinker-cookbook 0.3.0: ``do_group_rollout`` (all groups gathered at once)
     -> the cookbook's ``EnvFromMessageEnv`` -> its ``qwen3`` renderer -> a
     cookbook ``MessageEnv`` with the same prompt, first-number parse and
     reward (benchmarks/peer/cookbook_run.py ``envlayer``, in the peer venv);

both on the same locally built tiny tokenizer (its directory), with the same
scripted replies (``["42", "The answer is 7", "seven", "12"]``, cycled; each
reply is tokenized and ended with the renderer's stop token, as a model's
would be). Each side runs in its own child process: an untimed warm-up on 50
other problems, then one timed pass over the 10,000 episodes; runs alternate
A, B, A, B. Reported: rollouts (episodes) per second.

Run::

    python benchmarks/env_layer.py                # 5 runs per side
    python benchmarks/env_layer.py --runs 2 --episodes 2000

Prints a table and writes benchmarks/results/env_layer.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C

REPLIES = ["42", "The answer is 7", "seven", "12"]


def child_ours(args) -> int:
    from mint_envkit import DatasetBuilder, ScriptedPolicy

    ArithmeticEnv, _ = C.arithmetic()
    problems = json.loads(Path(args.problems).read_text())
    warmup = json.loads(Path(args.warmup_problems).read_text())

    def builder(items):
        return DatasetBuilder(
            env=ArithmeticEnv,
            problems=items,
            batch_size=len(items),
            group_size=args.group_size,
            model_name=args.model,
            renderer_name=args.renderer,
            shuffle=False,
            seed=0,
        )

    policy = ScriptedPolicy(REPLIES)
    asyncio.run(policy.run(builder(warmup)))  # warm-up: imports, tokenizer load
    runs = []
    for _ in range(args.repeats):
        b = builder(problems)
        t0 = time.perf_counter()
        report = asyncio.run(policy.run(b))
        seconds = time.perf_counter() - t0
        episodes = sum(len(g.rewards) for g in report.groups)
        runs.append(
            {
                "seconds": seconds,
                "episodes": episodes,
                "mean_reward": report.mean_reward,
                "errors": len(report.errors),
            }
        )
    from mint_envkit import get_renderer
    from mint_envkit.rendering import get_tokenizer

    renderer = get_renderer(args.renderer, get_tokenizer(args.model))
    env = ArithmeticEnv(**problems[0])
    prompt = renderer.render_tokens(asyncio.run(env.initial_observation()))
    Path(args.out).write_text(json.dumps({"runs": runs, "first_prompt_tokens": prompt}))
    return 0


def run_side(side: str, args, workdir: Path, k: int) -> dict:
    out = workdir / f"{side}-{k}.json"
    if side == "ours":
        cmd = [sys.executable, __file__, "--child-ours"]
    else:
        cmd = [
            str(C.PEER_PYTHON),
            str(C.PEER_SCRIPT),
            "envlayer",
            "--tokenizer",
            args.tokenizer_dir,
            "--replies",
            json.dumps(REPLIES),
        ]
    cmd += [
        "--problems",
        str(workdir / "problems.json"),
        "--out",
        str(out),
        "--group-size",
        str(args.group_size),
        "--renderer",
        args.renderer,
        "--model",
        args.model,
    ]
    cmd += ["--warmup-problems", str(workdir / "warmup.json")]
    t0 = time.time()
    proc = subprocess.run(
        cmd, env=C.child_env(), capture_output=True, text=True, timeout=args.timeout
    )
    if proc.returncode:
        raise SystemExit(f"{side} run {k} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    data = json.loads(out.read_text())
    data["e2e_s"] = time.time() - t0
    return data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="child processes per side")
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--renderer", default="qwen3")
    parser.add_argument("--model", default=C.DEFAULT_MODEL)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child-ours", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--problems", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-problems", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_ours:
        return child_ours(args)

    from mint_envkit.rendering.tokenizer import get_tokenizer

    C.ensure_peer_venv()
    info = C.machine_info()
    args.tokenizer_dir = str(Path(get_tokenizer(args.model).name_or_path).resolve())
    _, arithmetic_problems = C.arithmetic()
    groups = args.episodes // args.group_size
    problems = arithmetic_problems(groups, seed=0)
    warmup = arithmetic_problems(50, seed=12345)
    workdir = Path(tempfile.mkdtemp(prefix="mint-envkit-bench-env-"))
    (workdir / "problems.json").write_text(json.dumps(problems))
    (workdir / "warmup.json").write_text(json.dumps(warmup))
    print(
        f"workdir {workdir}; {groups} groups x {args.group_size} = "
        f"{groups * args.group_size} episodes per run",
        flush=True,
    )

    runs: dict[str, list] = {"ours": [], "peer": []}
    for k in range(args.runs):
        for side in ("ours", "peer"):
            r = run_side(side, args, workdir, k)
            runs[side].append(r)
            x = r["runs"][-1]
            print(
                f"run {k} {side}: {x['episodes']} episodes in {x['seconds']:.2f}s = "
                f"{x['episodes'] / x['seconds']:.0f}/s (mean reward {x['mean_reward']:+.3f})",
                flush=True,
            )
    summary = {}
    for side, rs in runs.items():
        rates = [r["runs"][-1]["episodes"] / r["runs"][-1]["seconds"] for r in rs]
        summary[side] = {
            "episodes_per_s": C.median(rates),
            "seconds": C.median([r["runs"][-1]["seconds"] for r in rs]),
            "episodes": rs[0]["runs"][-1]["episodes"],
            "mean_reward": rs[0]["runs"][-1]["mean_reward"],
            "runs": len(rs),
        }
    ratio = C.median(
        [
            (a["runs"][-1]["episodes"] / a["runs"][-1]["seconds"])
            / (b["runs"][-1]["episodes"] / b["runs"][-1]["seconds"])
            for a, b in zip(runs["ours"], runs["peer"], strict=True)
        ]
    )
    same_prompt = runs["ours"][0]["first_prompt_tokens"] == runs["peer"][0]["first_prompt_tokens"]
    results = {
        "machine": info,
        "args": vars(args),
        "runs": runs,
        "summary": summary,
        "median_ratio_ours_over_peer": ratio,
        "same_prompt_tokens": same_prompt,
    }
    path = C.write_result("env_layer", results, args.out)
    print()
    print(report(results))
    print(f"\nwrote {path}")
    return 0


def report(results: dict) -> str:
    s = results["summary"]
    rows = [
        [
            side,
            s[side]["episodes"],
            s[side]["seconds"],
            s[side]["episodes_per_s"],
            s[side]["mean_reward"],
            s[side]["runs"],
        ]
        for side in ("ours", "peer")
    ]
    return (
        C.table(["env layer", "episodes", "seconds", "episodes/s", "mean reward", "runs"], rows)
        + f"\n\nmedian ratio ours/peer (episodes/s, pairs of alternated runs): "
        f"{results['median_ratio_ours_over_peer']:.2f}; identical prompt tokens on both "
        f"sides: {results['same_prompt_tokens']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
