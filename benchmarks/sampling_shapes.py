"""Do request shapes change what the engine samples? A statistical check, not a timing.

One prompt on the built-in tiny model (a fresh LoRA snapshot), stop token 2045, up
to 24 tokens, temperature 1: ``--samples`` samples each as requests of 4 seeded
samples, of 1 seeded sample, and of 1 unseeded sample; their stop rate (with its
standard error) and mean length. Then the draw itself: the top token of a fixed
distribution over 2,048 tokens drawn by the engine's exponential race with
``--draws`` consecutive seeds from 5,000 and from 10^9, against its probability.
Prints the figures and writes ``benchmarks/results/sampling_shapes.json``.

Run::

    python benchmarks/sampling_shapes.py --samples 2400 --draws 100000
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from mint_envkit.local.engine.core import Engine

PROMPT = [2044, *range(100, 120), 2045, 2044]


def _shapes(samples: int) -> dict[str, dict[str, float]]:
    engine = Engine(state_dir=tempfile.mkdtemp(), num_threads=1)
    model_id = engine.create_lora("mint-envkit/tiny-qwen3", rank=4, seed=0)
    sampler_id, _ = engine.save_for_sampler(model_id, None)
    options = {"max_tokens": 24, "temperature": 1.0, "stop": [2045]}
    shapes = {
        "4 per request, seeded": [
            (sampler_id, PROMPT, {**options, "num_samples": 4, "seed": 1000 + i})
            for i in range(samples // 4)
        ],
        "1 per request, seeded": [
            (sampler_id, PROMPT, {**options, "num_samples": 1, "seed": 5000 + i})
            for i in range(samples)
        ],
        "1 per request, unseeded": [
            (sampler_id, PROMPT, {**options, "num_samples": 1, "seed": None})
            for _ in range(samples)
        ],
    }
    out = {}
    for name, requests in shapes.items():
        seqs = [s for result in engine.sample_many(requests) for s in result]
        rate = sum(s.stop_reason == "stop" for s in seqs) / len(seqs)
        out[name] = {
            "samples": len(seqs),
            "stop_rate": round(rate, 4),
            "stop_rate_se": round((rate * (1 - rate) / len(seqs)) ** 0.5, 4),
            "mean_tokens": round(sum(len(s.tokens) for s in seqs) / len(seqs), 2),
        }
    return out


def _draws(n: int) -> dict[str, float]:
    vocab = 2048
    probs = torch.softmax(torch.randn(vocab, generator=torch.Generator().manual_seed(0)) * 2, 0)
    top = int(probs.argmax())
    out = {"p_top": round(float(probs[top]), 4)}
    out["se"] = round((out["p_top"] * (1 - out["p_top"]) / n) ** 0.5, 4)
    for start in (5000, 10**9):
        hits = 0
        for seed in range(start, start + n):
            noise = torch.empty(vocab).exponential_(generator=torch.Generator().manual_seed(seed))
            hits += int((probs / noise).argmax()) == top
        out[f"seeds_from_{start}"] = round(hits / n, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2400)
    parser.add_argument("--draws", type=int, default=100_000)
    args = parser.parse_args()
    result = {"shapes": _shapes(args.samples), "draws": _draws(args.draws)}
    print(json.dumps(result, indent=2))
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "sampling_shapes.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
