"""What sampling a bf16 model through peft costs against a merged bf16 copy (issue 21).

A merged bf16 copy drops LoRA updates under half a bf16 rounding step, so the engine
samples bf16 models through peft (what the learner computes). This times the same
``Engine.sample`` calls both ways on CPU with bf16 forced (the engine picks bf16 only
on CUDA), alternating, on an untrained rank-32 adapter.

Example::

    python benchmarks/bf16_sampling_cost.py --model mint-envkit/tiny-qwen3 --runs 2
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

import mint_envkit.local.engine.adapters as adapters
from mint_envkit.local.engine.core import Engine
from mint_envkit.local.engine.records import BaseModelState
from mint_envkit.local.models.loader import load_base_model, resolve_model_name

PROMPT = [2044, *range(10, 41)]
EXACT = adapters.merges_exactly


def tokens_per_s(model: str, merged: bool, sizes: list[int]) -> dict[int, float]:
    """Sampling tokens/s per ``num_samples`` (32 new tokens), with or without the merged copy."""
    adapters.merges_exactly = (lambda m: True) if merged else EXACT  # type: ignore[assignment]
    engine = Engine(state_dir=tempfile.mkdtemp(prefix="bf16-cost-"), device="cpu")
    loaded = load_base_model(model, device="cpu", dtype=torch.bfloat16)
    engine.registry.bases[resolve_model_name(model)] = BaseModelState(loaded=loaded)
    sampler, _ = engine.save_for_sampler(engine.create_lora(model, rank=32, seed=0), None)
    engine.sample(sampler, PROMPT[:4], num_samples=2, max_tokens=4, seed=0)  # warm-up
    out = {}
    for n in sizes:
        t0 = time.perf_counter()
        engine.sample(sampler, PROMPT, num_samples=n, max_tokens=32, seed=1)
        out[n] = n * 32 / (time.perf_counter() - t0)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="mint-envkit/tiny-qwen3")
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args()
    for _ in range(args.runs):
        for merged in (True, False):
            speed = tokens_per_s(args.model, merged, [1, 8, 32])
            name = "merged bf16 copy" if merged else "peft (this engine)"
            print(name, {n: round(v) for n, v in speed.items()}, "tokens/s", flush=True)


if __name__ == "__main__":
    main()
