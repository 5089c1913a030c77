"""tinker-cookbook 0.3.0's recipes with a checkpoint teacher / KL reference, against ``mint-envkit serve``.

Issue 32 item 3: tinker-cookbook creates the sampling client of a checkpoint teacher
(``distillation/train_on_policy.py``, line 460) and of a checkpoint KL reference
(``rl/train.py``, line 1967) with both ``base_model`` and ``model_path``, and the SDK
sends both; the server used to answer 422 "give exactly one of base_model or
model_path". This script runs both recipes unmodified, for a couple of steps on the
tiny model, and prints what happened:

1. starts ``mint-envkit serve`` (this repository's ``.venv``) on a free port and a fresh
   state directory;
2. trains a LoRA for a few supervised steps and saves it for sampling: the checkpoint;
3. runs ``tinker_cookbook.distillation.train_on_policy.main`` with
   ``TeacherConfig(base_model=..., load_checkpoint_path=<the checkpoint>)``;
4. runs ``tinker_cookbook.rl.train.main`` with ``kl_penalty_coef > 0`` and
   ``KLReferenceConfig(base_model=..., load_checkpoint_path=<the checkpoint>)``;
5. prints, per recipe, whether it finished, each step's KL and reward metrics, and the
   server's request counts (``create_sampling_session`` among them).

The environment is cookbook_run.py's arithmetic ``MessageEnv`` (the cookbook's own
``EnvFromMessageEnv`` and Qwen3 renderer). Run it in the peer venv (``bash
benchmarks/peer/setup.sh`` creates it)::

    benchmarks/peer/.venv/bin/python benchmarks/peer/cookbook_checkpoints.py
    benchmarks/peer/.venv/bin/python benchmarks/peer/cookbook_checkpoints.py --steps 3 --json out.json
    benchmarks/peer/.venv/bin/python benchmarks/peer/cookbook_checkpoints.py --reference base  # control

Exit code 0 when both recipes ran all their steps, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

os.environ.setdefault("TINKER_TELEMETRY", "0")
os.environ.setdefault("TINKER_API_KEY", "tml-local")  # any key: the server has no --api-key

import tinker  # noqa: E402
from cookbook_run import ArithmeticDatasetBuilder, register_tiny_tokenizer  # noqa: E402
from tinker import types  # noqa: E402

RENDERER = "qwen3_disable_thinking"
SHOWN = ("kl", "reward", "correct")


def start_server(serve: str, model: str, state_dir: Path) -> tuple[subprocess.Popen, str]:
    """``mint-envkit serve`` on a free port; returns the process and its base URL."""
    proc = subprocess.Popen(
        [serve, "serve", "--port", "0", "--model", model, "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    deadline = time.monotonic() + 600
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            return proc, url
    proc.kill()
    raise SystemExit("mint-envkit serve did not start:\n" + "".join(seen[-20:]))


def stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base_url}/api/v1/mint_envkit/stats", timeout=30) as answer:
        return json.loads(answer.read())


def problems(steps: int, per_batch: int, seed: int) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        batch = []
        for _ in range(per_batch):
            a, b = rng.randint(2, 40), rng.randint(2, 40)
            batch.append({"question": f"What is {a} + {b}?", "answer": a + b})
        out.append(batch)
    return out


def make_checkpoint(service: Any, model: str, sft_steps: int) -> tuple[str, str]:
    """A LoRA a few supervised steps from the base model, saved for sampling; the tokenizer."""
    tc = service.create_lora_training_client(base_model=model, rank=8, seed=7)
    tokenizer = tc.get_tokenizer()
    text = tokenizer.encode("The answer is 42. The answer is 42.", add_special_tokens=False)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(text[:-1]),
        loss_fn_inputs={"target_tokens": text[1:]},
    )
    for _ in range(sft_steps):
        tc.forward_backward([datum], "cross_entropy").result()
        tc.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    path = tc.save_weights_for_sampler("cookbook-teacher").result().path
    tokenizer_dir = tc.get_info().model_data.tokenizer_id
    return path, str(tokenizer_dir)


def _metrics(log_path: Path) -> list[dict[str, Any]]:
    try:
        lines = (log_path / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


async def run_distillation(args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    from tinker_cookbook.distillation import train_on_policy
    from tinker_cookbook.distillation.datasets import DistillationDatasetConfig, TeacherConfig

    log_path = Path(common["workdir"]) / "distillation"
    config = train_on_policy.Config(
        learning_rate=args.learning_rate,
        dataset_configs=[
            DistillationDatasetConfig(
                dataset_builder=common["dataset"],
                teacher_config=TeacherConfig(
                    base_model=args.model, load_checkpoint_path=common["reference"]
                ),
                groups_per_batch=args.groups,
            )
        ],
        model_name=args.model,
        renderer_name=RENDERER,
        max_tokens=args.max_tokens,
        lora_rank=8,
        log_path=str(log_path),
        base_url=common["base_url"],
        eval_every=0,
        save_every=0,
        max_steps=args.steps,
    )
    await train_on_policy.main(config)
    return {"metrics": _metrics(log_path)}


async def run_rl_with_kl(args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    from tinker_cookbook.rl import train

    log_path = Path(common["workdir"]) / "rl-kl"
    config = train.Config(
        learning_rate=args.learning_rate,
        dataset_builder=common["dataset"],
        model_name=args.model,
        renderer_name=RENDERER,
        max_tokens=args.max_tokens,
        lora_rank=8,
        log_path=str(log_path),
        base_url=common["base_url"],
        kl_penalty_coef=args.kl_penalty_coef,
        kl_reference_config=train.KLReferenceConfig(
            base_model=args.model, load_checkpoint_path=common["reference"]
        ),
        eval_every=0,
        save_every=0,
        max_steps=args.steps,
    )
    await train.main(config)
    return {"metrics": _metrics(log_path)}


def run_recipe(name: str, fn: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict:
    before = stats(common["base_url"])["request_counts"]
    start = time.perf_counter()
    log = Path(common["workdir"]) / f"{fn.__name__}.log"
    try:  # the recipe's own console output (its metric tables) goes to a log file
        with log.open("w") as out, contextlib.redirect_stdout(out):
            result = asyncio.run(fn(args, common))
        result["error"] = None
    except Exception as err:  # what the recipe raised is the finding: print it
        result = {"metrics": [], "error": f"{type(err).__name__}: {err}"}
        result["traceback"] = traceback.format_exc(limit=8)
    result["seconds"] = time.perf_counter() - start
    result["log"] = str(log)
    after = stats(common["base_url"])["request_counts"]
    result["requests"] = {
        k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)
    }
    result["steps"] = sum(1 for m in result["metrics"] if "progress/batch" in m)
    result["ok"] = result["error"] is None and result["steps"] == args.steps
    result["recipe"] = name
    return result


def report(result: dict[str, Any]) -> None:
    state = "ran" if result["ok"] else "FAILED"
    print(
        f"\n== {result['recipe']}: {state}, {result['steps']} of its steps in "
        f"{result['seconds']:.1f} s (its output: {result['log']})"
    )
    if result["error"]:
        print(f"   error: {result['error']}")
        print("   " + result["traceback"].replace("\n", "\n   "))
    for m in result["metrics"]:
        shown = {
            k: round(v, 4)
            for k, v in m.items()
            if isinstance(v, int | float)
            and not k.startswith("time/")
            and any(s in k for s in SHOWN)
        }
        print(f"   step {m.get('progress/batch', '?')}: {json.dumps(shown, sort_keys=True)}")
    counts = result["requests"]
    print(
        f"   requests: create_sampling_session {counts.get('create_sampling_session', 0)}, "
        f"asample {counts.get('asample', 0)}, forward_backward {counts.get('forward_backward', 0)}, "
        f"optim_step {counts.get('optim_step', 0)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mint-envkit/tiny-qwen3")
    parser.add_argument("--serve", default=str(REPO / ".venv" / "bin" / "mint-envkit"))
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--groups", type=int, default=2, help="problems per step")
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--kl-penalty-coef", type=float, default=0.1)
    parser.add_argument("--sft-steps", type=int, default=3)
    parser.add_argument(
        "--reference",
        choices=("checkpoint", "base"),
        default="checkpoint",
        help="the teacher / KL reference: the checkpoint (both names sent), or the base model "
        "alone (a control: a fresh student is the base model, so its KL starts at 0)",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    workdir = Path(tempfile.mkdtemp(prefix="cookbook-checkpoints-"))
    proc, base_url = start_server(args.serve, args.model, workdir / "state")
    print(f"server {base_url} ({args.model}); workdir {workdir}", flush=True)
    service = tinker.ServiceClient(base_url=base_url)
    try:
        checkpoint, tokenizer_dir = make_checkpoint(service, args.model, args.sft_steps)
        print(f"checkpoint {checkpoint} ({args.sft_steps} supervised steps)", flush=True)
        register_tiny_tokenizer(args.model, tokenizer_dir)
        problems_file = workdir / "problems.json"
        problems_file.write_text(json.dumps(problems(args.steps, args.groups, seed=0)))
        common = {
            "workdir": workdir,
            "base_url": base_url,
            "checkpoint": checkpoint,
            "reference": checkpoint if args.reference == "checkpoint" else None,
            "dataset": ArithmeticDatasetBuilder(
                problems_file=str(problems_file),
                tokenizer_name=tokenizer_dir,
                renderer_name=RENDERER,
                group_size=args.group_size,
            ),
        }
        results = [
            run_recipe(
                f"on-policy distillation, {args.reference} teacher", run_distillation, args, common
            ),
            run_recipe(f"RL, {args.reference} KL reference", run_rl_with_kl, args, common),
        ]
    finally:
        service.holder.close()
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    for result in results:
        report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
