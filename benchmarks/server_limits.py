"""Small-request latency and peak server memory while a big sample job runs (issue 10).

Starts ``mint-envkit serve`` from the sources in ``--src`` (this checkout by
default; point it at an export of another commit to compare), sends one big
``asample`` job, then a 4-token sample one second later, and reports:

- how long the 4-token sample took (it should not wait for the big job);
- how long the big job took;
- the server's peak RSS (``VmHWM``);
- how long the server took to exit after SIGTERM, sent one second into a
  second big job.

Example::

    nice -n 5 python benchmarks/server_limits.py --num-samples 32 --max-tokens 256
    git archive main | tar -x -C /tmp/main-src
    nice -n 5 python benchmarks/server_limits.py --src /tmp/main-src/src
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

SMALL = "mint-envkit/tiny-qwen3-small"


def _body(num_samples: int, max_tokens: int) -> dict[str, Any]:
    return {
        "base_model": SMALL,
        "num_samples": num_samples,
        "prompt": {"chunks": [{"tokens": [1, 2, 3, 4], "type": "encoded_text"}]},
        "sampling_params": {"max_tokens": max_tokens, "seed": 1},
    }


def _wait(base: str, request_id: str) -> float:
    t0 = time.perf_counter()
    with httpx.Client(timeout=120) as client:
        while True:
            r = client.post(f"{base}/api/v1/retrieve_future", json={"request_id": request_id})
            if r.json().get("type") != "try_again":
                r.raise_for_status()
                return time.perf_counter() - t0


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    p.add_argument("--num-samples", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--segment-tokens", type=int, help="serve --sample-segment-tokens (0: off)")
    args = p.parse_args()
    env = {**os.environ, "PYTHONPATH": args.src, "TINKER_TELEMETRY": "0"}
    state = tempfile.mkdtemp(prefix="bench-state-")
    command = [sys.executable, "-m", "mint_envkit.cli", "serve", "--port", "0"]
    command += ["--model", SMALL, "--state-dir", state]
    if args.segment_tokens is not None:
        command += ["--sample-segment-tokens", str(args.segment_tokens)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        base = line.split("listening on ")[1].split(" ")[0]
        warm = httpx.post(f"{base}/api/v1/asample", json=_body(1, 2), timeout=60)
        _wait(base, warm.json()["request_id"])
        big_s: list[float] = []
        big = httpx.post(
            f"{base}/api/v1/asample", json=_body(args.num_samples, args.max_tokens), timeout=60
        )
        big.raise_for_status()
        thread = threading.Thread(
            target=lambda: big_s.append(_wait(base, big.json()["request_id"]))
        )
        thread.start()
        time.sleep(1.0)
        small = httpx.post(f"{base}/api/v1/asample", json=_body(1, 4), timeout=60)
        small_s = _wait(base, small.json()["request_id"])
        thread.join(timeout=600)
        peak = _peak_rss_mb(proc.pid)
        again = httpx.post(
            f"{base}/api/v1/asample", json=_body(args.num_samples, args.max_tokens), timeout=60
        )
        again.raise_for_status()
        time.sleep(1.0)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=600)
        stop_s = time.perf_counter() - t0
        print(
            json.dumps(
                {
                    "src": args.src,
                    "big_job": f"{args.num_samples} x (4 + {args.max_tokens})",
                    "segment_tokens": args.segment_tokens,
                    "small_sample_s": round(small_s, 2),
                    "big_job_s": round(big_s[0], 2) if big_s else None,
                    "peak_rss_mb": round(peak),
                    "sigterm_to_exit_s": round(stop_s, 2),
                }
            )
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
