"""What batch-invariant sampling costs: one engine call of many requests, lengths mixed or not.

16 requests x 8 samples x 16 tokens on the built-in tiny model (a LoRA snapshot),
their prompts spread over 1, 2, 4 or 8 distinct lengths (30-37 tokens), sampled in
one ``Engine.sample_many`` call by an engine with ``batch_invariant`` off (one
padded batch) and on (one batch per prompt length). Best of ``--runs`` each,
alternated. Also checks that the invariant engine's first request is bit for bit
what it gets alone. Prints a table and writes ``benchmarks/results/batch_invariance.json``.

Run::

    python benchmarks/batch_invariance.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from mint_envkit.local.engine.core import Engine

MODEL = "mint-envkit/tiny-qwen3"


def _sampler(engine: Engine) -> str:
    model_id = engine.create_lora(MODEL, rank=4, seed=0)
    sampler_id, _ = engine.save_for_sampler(model_id, None)
    return sampler_id


def _requests(sampler_id: str, distinct: int) -> list[tuple]:
    options = {"num_samples": 8, "max_tokens": 16, "temperature": 1.0}
    return [
        (sampler_id, [2044, *range(100, 128 + i % distinct), 2045], {**options, "seed": 100 + i})
        for i in range(16)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    engines = {
        flag: Engine(state_dir=tempfile.mkdtemp(), num_threads=1, batch_invariant=flag)
        for flag in (False, True)
    }
    samplers = {flag: _sampler(engine) for flag, engine in engines.items()}
    rows = []
    for distinct in (1, 2, 4, 8):
        best = {False: float("inf"), True: float("inf")}
        for _ in range(args.runs):
            for flag, engine in engines.items():
                requests = _requests(samplers[flag], distinct)
                started = time.perf_counter()
                out = engine.sample_many(requests)
                best[flag] = min(best[flag], time.perf_counter() - started)
        alone = engines[True].sample_many(requests[:1])[0]
        same = [(s.tokens, s.logprobs) for s in alone] == [(s.tokens, s.logprobs) for s in out[0]]
        rows.append(
            {
                "distinct_lengths": distinct,
                "off_s": round(best[False], 3),
                "on_s": round(best[True], 3),
                "ratio": round(best[True] / best[False], 2),
                "invariant_request_equals_alone": same,
            }
        )
    print(f"{'lengths':>8} {'off (s)':>8} {'on (s)':>8} {'on/off':>7}  alone == batched (on)")
    for r in rows:
        print(
            f"{r['distinct_lengths']:>8} {r['off_s']:>8.3f} {r['on_s']:>8.3f} {r['ratio']:>7.2f}"
            f"  {r['invariant_request_equals_alone']}"
        )
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "batch_invariance.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
