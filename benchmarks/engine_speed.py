"""Speed and memory of the local backend's Engine on CPU.

Measures, on the built-in tiny model (or ``--model``):

- sampling throughput (generated tokens per second) for ``num_samples`` 1, 4
  and 16: the engine's one batched pass with a shared, expanded KV cache,
  against one Hugging Face ``generate()`` call per sample (``do_sample=True``,
  ``top_k=0``, the same base weights);
- one training step: ``forward(backward=True)`` (importance_sampling, 8 datums
  of 96 tokens) + ``optim_step`` on a rank-32 LoRA on every layer;
- a sweep-shaped workload: 8 LoRA clients, each sampling 2 batches of a group
  of 4 x 32 tokens, one forward_backward and one optim_step;
- peak memory: ``resource.getrusage`` max RSS of the process and the
  ``tracemalloc`` peak of Python-level allocations during one extra, untimed
  sweep (torch tensor storage is not traced by tracemalloc; RSS covers it).

Prints a table and writes ``benchmarks/results/engine_speed.json``. The load
average is recorded too: on a shared machine, other processes make timings
noisy, and torch's OpenMP threads degrade badly when the cores are
oversubscribed (try ``--threads 1``).

``--device cpu|cuda`` runs the device suite instead (``benchmarks/_device_speed.py``):
sampling tokens/s at batch 1, 8, 64 x 128 tokens and training tokens/s, for the tiny
model and a Qwen3-0.6B-shaped body (``--shape``), in bf16 on CUDA.

Run::

    python benchmarks/engine_speed.py                 # threads = number of cores
    python benchmarks/engine_speed.py --device cuda   # the GPU suite (docs/benchmarks.md)
    python benchmarks/engine_speed.py --device cpu --shape tiny
    python benchmarks/engine_speed.py --threads 1 --model mint-envkit/tiny-qwen3-small
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mint_envkit.local.engine.core import Engine

PROMPT_LEN = 32
MAX_TOKENS = 32


def _best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_sampling(engine: Engine, model: str, repeats: int) -> list[dict]:
    sampler = engine.create_sampler(base_model=model)
    hf_model = engine.registry.sampler(sampler)[0].loaded.model
    prompt = [2044] + [(37 * i + 11) % 2000 for i in range(PROMPT_LEN - 1)]
    rows = []
    engine.sample(sampler, prompt, num_samples=2, max_tokens=4, seed=0)  # warm-up
    for n in (1, 4, 16):
        t_engine = _best_of(
            lambda n=n: engine.sample(
                sampler, prompt, num_samples=n, max_tokens=MAX_TOKENS, seed=1
            ),
            repeats,
        )

        def hf_generate(n: int = n) -> None:
            ids = torch.tensor([prompt])
            torch.manual_seed(1)
            for _ in range(n):
                hf_model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    do_sample=True,
                    top_k=0,
                    top_p=1.0,
                    temperature=1.0,
                    max_new_tokens=MAX_TOKENS,
                    min_new_tokens=MAX_TOKENS,
                    pad_token_id=0,
                )

        t_hf = _best_of(hf_generate, repeats)
        tokens = n * MAX_TOKENS
        rows.append(
            {
                "num_samples": n,
                "engine_s": t_engine,
                "engine_tok_s": tokens / t_engine,
                "hf_generate_s": t_hf,
                "hf_generate_tok_s": tokens / t_hf,
                "speedup": t_hf / t_engine,
            }
        )
    return rows


def _rl_batch(n_datums: int, length: int) -> list[dict]:
    data = []
    for i in range(n_datums):
        toks = [(13 * i + 7 * j) % 2000 for j in range(length + 1)]
        data.append(
            {
                "model_input": toks[:-1],
                "loss_fn_inputs": {
                    "target_tokens": toks[1:],
                    "logprobs": [-7.0] * length,
                    "advantages": [0.5 - (i % 2)] * length,
                },
            }
        )
    return data


def bench_train_step(engine: Engine, model: str, repeats: int) -> dict:
    model_id = engine.create_lora(model, rank=32, seed=0)
    data = _rl_batch(8, 96)

    def step() -> None:
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-4)

    step()  # warm-up (optimizer state allocation)
    fb_times, step_times = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
        t1 = time.perf_counter()
        engine.optim_step(model_id, learning_rate=1e-4)
        t2 = time.perf_counter()
        fb_times.append(t1 - t0)
        step_times.append(t2 - t1)
    engine.unload(model_id)
    return {
        "datums": 8,
        "tokens_per_datum": 96,
        "lora_rank": 32,
        "forward_backward_s": min(fb_times),
        "optim_step_s": min(step_times),
        "train_step_s": min(f + s for f, s in zip(fb_times, step_times, strict=True)),
    }


def bench_sweep(engine: Engine, model: str) -> dict:
    prompt = [2044] + [(29 * i + 3) % 2000 for i in range(23)]
    start = time.perf_counter()
    for config in range(8):
        model_id = engine.create_lora(model, rank=16, seed=config)
        sampler, _ = engine.save_for_sampler(model_id, None)
        data = []
        for batch in range(2):
            seqs = engine.sample(sampler, prompt, num_samples=4, max_tokens=32, seed=batch)
            for j, s in enumerate(seqs):
                pad = len(prompt) - 1
                data.append(
                    {
                        "model_input": prompt + s.tokens[:-1],
                        "loss_fn_inputs": {
                            "target_tokens": prompt[1:] + s.tokens,
                            "logprobs": [0.0] * pad + s.logprobs,
                            "advantages": [0.0] * pad + [float(j % 2) - 0.5] * len(s.tokens),
                        },
                    }
                )
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
        engine.optim_step(model_id, learning_rate=4e-3)
        engine.release_sampler(sampler)
        engine.unload(model_id)
    return {"configs": 8, "sweep_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mint-envkit/tiny-qwen3")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", default=None, help="default: benchmarks/results/engine_speed[_DEVICE].json"
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], help="run the device suite")
    parser.add_argument("--shape", choices=["tiny", "0.6b", "both"], default="both")
    parser.add_argument(
        "--batches",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 8, 64],
        help="device suite: sampling batch sizes",
    )
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--train-seqs", type=int, default=64)
    parser.add_argument("--train-len", type=int, default=128)
    args = parser.parse_args()
    if args.device:
        import _device_speed

        _device_speed.run(args)
        return

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as state:
        t0 = time.perf_counter()
        engine = Engine(state_dir=state, num_threads=args.threads)
        engine.ensure_base_model(args.model)
        load_s = time.perf_counter() - t0
        sampling = bench_sampling(engine, args.model, args.repeats)
        train = bench_train_step(engine, args.model, args.repeats)
        sweep = bench_sweep(engine, args.model)
        # tracemalloc slows Python down, so it only watches one more sweep, untimed.
        tracemalloc.start()
        bench_sweep(engine, args.model)
        _, py_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "model": args.model,
        "threads": engine.num_threads,
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "model_load_s": load_s,
        "sampling": sampling,
        "train_step": train,
        "sweep": sweep,
        "peak_rss_mb": maxrss_kb / 1024,
        "tracemalloc_peak_mb": py_peak / 2**20,
    }

    print(f"model {args.model}, {engine.num_threads} thread(s), torch {torch.__version__}")
    print(f"load average before/after: {load_before[0]:.2f} / {result['loadavg_after'][0]:.2f}")
    print(f"prompt {PROMPT_LEN} tokens, {MAX_TOKENS} new tokens per sample, best of {args.repeats}")
    print()
    print("| num_samples | engine (batched, KV cache) | HF generate() per sample | speedup |")
    print("|---:|---:|---:|---:|")
    for row in sampling:
        print(
            f"| {row['num_samples']} | {row['engine_tok_s']:.0f} tok/s ({row['engine_s']:.3f} s) "
            f"| {row['hf_generate_tok_s']:.0f} tok/s ({row['hf_generate_s']:.3f} s) "
            f"| {row['speedup']:.1f}x |"
        )
    print()
    print("| measure | value |")
    print("|---|---:|")
    print(f"| model load (first use, cached build) | {load_s:.2f} s |")
    print(
        f"| forward_backward (IS, 8 x 96 tokens, rank 32) | {train['forward_backward_s']:.3f} s |"
    )
    print(f"| optim_step | {train['optim_step_s']:.4f} s |")
    print(f"| train step total | {train['train_step_s']:.3f} s |")
    print(f"| sweep: 8 configs x (2 x 4 x 32 sampled + fb + step) | {sweep['sweep_s']:.1f} s |")
    print(f"| peak RSS | {result['peak_rss_mb']:.0f} MB |")
    print(f"| tracemalloc peak (Python objects) | {result['tracemalloc_peak_mb']:.1f} MB |")
    out = Path(args.out or Path(__file__).parent / "results" / "engine_speed.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
