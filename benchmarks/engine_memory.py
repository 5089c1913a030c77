"""Peak memory of one large ``forward_backward`` on the local Engine (issue 10, item 1).

One ``forward(backward=True)`` (cross_entropy) of ``--datums`` datums of ``--tokens``
tokens each (default 8 x 4,000) on a rank-32 LoRA of the built-in tiny model, in a
fresh process. Reports the process's peak RSS (``resource.getrusage``), the RSS
before the call and right after it (``/proc/self/status`` VmRSS, after ``gc``), and
the wall time. ``--max-tokens-per-pass`` sets the Engine's token budget per
micro-batch (``0``: leave the Engine's default); an Engine without that parameter
(before the bound existed) is run as it is.

Writes ``benchmarks/results/engine_memory.json``.

Run::

    nice -n 5 python benchmarks/engine_memory.py
    nice -n 5 python benchmarks/engine_memory.py --max-tokens-per-pass 32768
"""

from __future__ import annotations

import argparse
import gc
import inspect
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_info, write_result

from mint_envkit.local.engine.core import Engine


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mint-envkit/tiny-qwen3")
    parser.add_argument("--datums", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--max-tokens-per-pass", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    kwargs = {"state_dir": tempfile.mkdtemp(), "num_threads": 1}
    bounded = "max_tokens_per_pass" in inspect.signature(Engine).parameters
    if bounded and args.max_tokens_per_pass:
        kwargs["max_tokens_per_pass"] = args.max_tokens_per_pass
    engine = Engine(**kwargs)
    model_id = engine.create_lora(args.model, rank=32, seed=0)
    data = []
    for i in range(args.datums):
        tokens = [(7 * i + 13 * j) % 2000 + 1 for j in range(args.tokens + 1)]
        data.append({"model_input": tokens[:-1], "loss_fn_inputs": {"target_tokens": tokens[1:]}})
    gc.collect()
    rss_before = _rss_mb()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    engine.forward(model_id, data, "cross_entropy", None, backward=True)
    seconds = time.perf_counter() - start
    gc.collect()
    result = {
        "model": args.model,
        "datums": args.datums,
        "tokens": args.tokens,
        "max_tokens_per_pass": getattr(engine, "max_tokens_per_pass", None),
        "rss_before_mb": round(rss_before, 1),
        "peak_rss_before_call_mb": round(peak_before, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_after_mb": round(_rss_mb(), 1),
        "seconds": round(seconds, 1),
        "machine": machine_info(),
    }
    for key, value in result.items():
        if key != "machine":
            print(f"{key:>24}: {value}")
    write_result("engine_memory", result, args.out)


if __name__ == "__main__":
    main()
