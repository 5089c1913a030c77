"""Time loading SmolLM2 on the local backend: the first load (GGUF conversion) and a cached one.

Uses a fresh, empty MINT_ENVKIT_CACHE, so the first load converts the GGUF file.

    nice -n 5 python benchmarks/smollm2_load_time.py
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time

MODEL = "mint-envkit/smollm2-135m-instruct"


def main() -> None:
    os.environ["MINT_ENVKIT_CACHE"] = tempfile.mkdtemp(prefix="mint-measure-")
    t = time.perf_counter()
    importlib.import_module("transformers")
    common = importlib.import_module("mint_envkit.local.models.common")
    loader = importlib.import_module("mint_envkit.local.models.loader")
    common.pin_threads(1)
    print(f"imports {time.perf_counter() - t:.1f}s", flush=True)
    t = time.perf_counter()
    loader.load_base_model(MODEL, device="cpu")
    print(f"first load (convert GGUF + load cache) {time.perf_counter() - t:.1f}s", flush=True)
    t = time.perf_counter()
    loader.load_base_model(MODEL, device="cpu")
    print(f"second load (cache) {time.perf_counter() - t:.1f}s", flush=True)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
