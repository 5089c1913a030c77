"""How many held-out problems an evaluation sends at once, and what it costs on CPU.

The demo's held-out eval (examples/learn_arithmetic.py: 40 addition problems, base
SmolLM2-135M-Instruct, greedy, 96-token replies) through ``mint_envkit.evaluate`` on
the embedded backend, once per concurrency (``SamplingSettings.max_concurrent_groups``),
each in a fresh server after one untimed warm-up. The embedded server samples the
requests that arrive together as one engine batch, which runs as long as its longest
reply; fewer in flight means more batches, one after another.

    python benchmarks/eval_concurrency.py --concurrency 16,64 --seed 0
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from learn_arithmetic import SMOLLM2, AdditionEnv, addition_problems  # noqa: E402

from mint_envkit import DatasetBuilder, evaluate  # noqa: E402
from mint_envkit.rollouts import BackendSettings, SamplingSettings  # noqa: E402


async def one(concurrency: int, seed: int, n: int, max_tokens: int) -> dict:
    problems = [
        {k: v for k, v in p.items() if k != "pair"}
        for p in addition_problems(n, seed=10_000 + seed)
    ]
    builder = DatasetBuilder(
        env=AdditionEnv, problems=problems, batch_size=1, group_size=1, model_name=SMOLLM2
    )
    sampling = SamplingSettings(
        max_tokens=max_tokens, temperature=1e-3, seed=seed, max_concurrent_groups=concurrency
    )
    t0 = time.monotonic()
    result = await evaluate(
        builder, samples=1, sampling=sampling, backend=BackendSettings(backend="local"), quiet=True
    )
    wall = time.monotonic() - t0
    s = result.summary
    return {
        "concurrency": concurrency,
        "wall_s": wall,
        "correct": s.get("correct"),
        "truncated": s.get("truncated_rate"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="16,64")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    asyncio.run(one(64, args.seed, 4, 8))  # warm-up: the model's load and conversion
    for c in (int(x) for x in args.concurrency.split(",")):
        r = asyncio.run(one(c, args.seed, args.n, args.max_tokens))
        print(
            f"concurrency {r['concurrency']:>3}: {r['wall_s']:.1f} s  correct {r['correct']:.1%}"
            f"  truncated {r['truncated']:.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
