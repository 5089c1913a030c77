"""``engine_speed.py --device cpu|cuda``: sampling and training tokens/s on one device.

Sampling: ``sample_many`` with B requests (B = 1, 8, 64 by default) of a 32-token prompt,
one sample each, ``max_tokens`` 128 and no stop, so every row makes 128 tokens: all B
requests run as one batch. Training: ``forward(importance_sampling, backward=True)`` +
``optim_step`` on a rank-32 LoRA on every layer. Two bodies:

- ``tiny``: the built-in ``mint-envkit/tiny-qwen3``;
- ``0.6b``: a Qwen3-0.6B-shaped body (hidden 1024, 28 layers, 16 heads, 8 kv heads, head
  dim 128, intermediate 3072, vocab 151936, tied embeddings), random weights built and
  saved locally (a config only, nothing downloaded), with the tiny model's tokenizer
  files beside it (the engine wants some; no stop strings are used).

Best of ``--repeats`` after one warm-up. On CUDA the model runs in bf16, on CPU in fp32.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from _common import machine_info, table, write_result

from mint_envkit.local.engine.core import Engine
from mint_envkit.local.models.tiny import tiny_model_dir

PROMPT_LEN = 32
QWEN3_06B = {
    "hidden_size": 1024,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 3072,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "max_position_embeddings": 4096,
}


def build_06b(directory: Path) -> str:
    """Save a randomly initialised Qwen3-0.6B-shaped model (bf16 files) under ``directory``."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(**QWEN3_06B)).to(torch.bfloat16)
    model.save_pretrained(directory)
    del model
    # the engine wants tokenizer files beside the model: the tiny model's (unused here)
    source = tiny_model_dir("mint-envkit/tiny-qwen3")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (source / name).is_file():
            shutil.copy(source / name, directory / name)
    return str(directory)


def _best(fn: Any, repeats: int) -> float:
    fn()  # warm-up (allocations, kernels, compiled steps)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_sampling(
    engine: Engine, model: str, batches: list[int], new_tokens: int, repeats: int
) -> list[dict]:
    sampler = engine.create_sampler(base_model=model)
    rows = []
    for batch in batches:
        requests = [
            (sampler, [(37 * i + 11 * b) % 2000 for i in range(PROMPT_LEN)], {"seed": b})
            for b in range(batch)
        ]
        for _, _, kwargs in requests:
            kwargs["max_tokens"] = new_tokens

        def run(requests: list = requests) -> None:
            for out in engine.sample_many(requests):
                if not isinstance(out, list):
                    raise RuntimeError(f"sampling failed: {out}")

        seconds = _best(run, repeats)
        rows.append({"batch": batch, "new_tokens": new_tokens, "s": seconds})
        rows[-1]["tok_s"] = batch * new_tokens / seconds
    engine.release_sampler(sampler)
    return rows


def bench_training(engine: Engine, model: str, seqs: int, length: int, repeats: int) -> dict:
    model_id = engine.create_lora(model, rank=32, seed=0)
    data = []
    for i in range(seqs):
        toks = [(13 * i + 7 * j) % 2000 for j in range(length + 1)]
        inputs = {
            "target_tokens": toks[1:],
            "logprobs": [-7.0] * length,
            "advantages": [0.5 - (i % 2)] * length,
        }
        data.append({"model_input": toks[:-1], "loss_fn_inputs": inputs})

    def step() -> None:
        engine.forward(model_id, data, "importance_sampling", None, backward=True)
        engine.optim_step(model_id, learning_rate=1e-4)

    seconds = _best(step, repeats)
    engine.unload(model_id)
    return {"seqs": seqs, "length": length, "s": seconds, "tok_s": seqs * length / seconds}


def run(args: Any) -> None:
    """Run the device suite for ``args`` (parsed by engine_speed.py) and print the tables."""
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False on this machine")
    info = machine_info()
    info["device"] = device
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    results: dict[str, Any] = {"machine": info, "bodies": {}}
    shapes = ["tiny", "0.6b"] if args.shape == "both" else [args.shape]
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(state_dir=Path(tmp) / "state", device=device, num_threads=args.threads)
        for shape in shapes:
            name = "mint-envkit/tiny-qwen3" if shape == "tiny" else build_06b(Path(tmp) / "q06b")
            engine.ensure_base_model(name)
            sampling = bench_sampling(engine, name, args.batches, args.new_tokens, args.repeats)
            train = bench_training(engine, name, args.train_seqs, args.train_len, args.repeats)
            results["bodies"][shape] = {"sampling": sampling, "training": train}
            rows = [
                [shape, f"sample {r['batch']} x {r['new_tokens']}", r["s"], r["tok_s"]]
                for r in sampling
            ]
            rows.append(
                [
                    shape,
                    f"train {train['seqs']} x {train['length']} (LoRA 32)",
                    train["s"],
                    train["tok_s"],
                ]
            )
            print(table(["body", "what", "seconds", "tokens/s"], rows, digits=3), flush=True)
    path = write_result(f"engine_speed_{device}", results, args.out)
    print(f"wrote {path}")
