"""What a fresh adapter costs to sample: the base, a fresh LoRA snapshot, and the same
snapshot forced through peft (as every snapshot sampled before ``Snapshot.adds_nothing``).

The workload is the learning demo's first held-out eval (examples/learn_arithmetic.py):
SmolLM2-135M-Instruct, 40 "What is a + b?" prompts under the calculator system prompt,
one greedy reply each (temperature 1e-3) of up to 96 tokens, as one ``sample_many`` call,
with a rank-16 LoRA on every linear layer but the unembedding. A snapshot whose every
``lora_B`` is zero samples on the base model (the adapter would add exact zeros), so the
fresh snapshot should cost what the base costs, and give the same tokens and logprobs.

Each variant runs ``--repeats`` times, alternating, on one engine; the table gives the
best and the median wall time. Needs ``mint-envkit install-model smollm2``.
Writes ``benchmarks/results/fresh_adapter_sampling.json``.

Run::

    python benchmarks/fresh_adapter_sampling.py --repeats 3 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs

from mint_envkit.local.engine.core import Engine
from mint_envkit.rendering import get_tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from learn_arithmetic import SMOLLM2 as MODEL
from learn_arithmetic import AdditionEnv, addition_problems


def _prompts(tokenizer, n: int) -> list[list[int]]:
    """Problems drawn as the demo draws seed 0's held-out ones (its training pairs not
    excluded), under the demo's system prompt."""
    return [
        tokenizer.apply_chat_template(
            [
                {"role": "system", "content": AdditionEnv.system_prompt},
                {"role": "user", "content": problem["question"]},
            ],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
        )
        for problem in addition_problems(n, seed=10_000)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()

    engine = Engine(state_dir=tempfile.mkdtemp(), num_threads=args.threads)
    engine.ensure_base_model(MODEL)
    tokenizer = get_tokenizer(engine.tokenizer_dir(MODEL))
    prompts = _prompts(tokenizer, args.n)
    stop = [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    model_id = engine.create_lora(MODEL, rank=16, seed=0, train_unembed=False)
    fresh, _ = engine.save_for_sampler(model_id, None)
    _, snap = engine.registry.sampler(fresh)
    assert snap.adds_nothing
    forced = attrs.evolve(snap)  # the same tensors, a new key
    forced.adds_nothing = False  # as before: through peft, the adapter's zeros added
    samplers = {
        "base model": engine.create_sampler(base_model=MODEL),
        "fresh adapter": fresh,
        "fresh adapter through peft": engine.registry.add_sampler(forced),
    }
    options = {"max_tokens": args.max_tokens, "temperature": 1e-3, "stop": stop}
    times: dict[str, list[float]] = {name: [] for name in samplers}
    results: dict[str, list] = {}
    for _ in range(args.repeats):
        for name, sampler in samplers.items():
            requests = [
                (sampler, p, {**options, "num_samples": 1, "seed": i})
                for i, p in enumerate(prompts)
            ]
            t0 = time.monotonic()
            out = engine.sample_many(requests)
            times[name].append(time.monotonic() - t0)
            results[name] = [(s.tokens, s.logprobs) for seqs in out for s in seqs]
    ref = results["base model"]
    rows = []
    print(f"{args.n} greedy replies of up to {args.max_tokens} tokens, {args.threads} threads")
    print("| sampler | best (s) | median (s) | same tokens as the base | max logprob diff |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        got = results[name]
        same = all(a[0] == b[0] for a, b in zip(got, ref, strict=True))
        diff = max(
            (
                abs(x - y)
                for a, b in zip(got, ref, strict=True)
                for x, y in zip(a[1], b[1], strict=False)
            ),
            default=0.0,
        )
        rows.append(
            {
                "sampler": name,
                "best_s": round(min(ts), 2),
                "median_s": round(statistics.median(ts), 2),
                "times_s": [round(t, 2) for t in ts],
                "same_tokens_as_base": same,
                "max_logprob_diff": diff,
            }
        )
        print(f"| {name} | {min(ts):.1f} | {statistics.median(ts):.1f} | {same} | {diff:.2g} |")
    lengths = [len(t) for t, _ in ref]
    print(f"reply lengths: mean {statistics.mean(lengths):.1f}, max {max(lengths)} tokens")
    out_path = Path(__file__).parent / "results" / "fresh_adapter_sampling.json"
    out_path.parent.mkdir(exist_ok=True)
    record = {"args": vars(args), "rows": rows, "load": os.getloadavg()}
    out_path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
