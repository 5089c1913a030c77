"""Helpers shared by the benchmark scripts (not part of the library).

Paths, the peer virtual environment, the machine description, medians, the
plain-text tables and the JSON results every script writes.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
PEER_DIR = BENCH / "peer"
PEER_PYTHON = PEER_DIR / ".venv" / "bin" / "python"
PEER_SCRIPT = PEER_DIR / "cookbook_run.py"
EXAMPLES = ROOT / "examples"

DEFAULT_MODEL = "mint-envkit/tiny-qwen3"


def ensure_peer_venv() -> Path:
    """Create benchmarks/peer/.venv with tinker-cookbook when it is missing; return its python."""
    if (
        not PEER_PYTHON.exists()
        or subprocess.run(
            [str(PEER_PYTHON), "-c", "import tinker_cookbook, mint, torch"],
            capture_output=True,
        ).returncode
    ):
        print("creating the peer venv (benchmarks/peer/setup.sh) ...", flush=True)
        subprocess.run(["bash", str(PEER_DIR / "setup.sh")], check=True)
    return PEER_PYTHON


def arithmetic():
    """The example's ArithmeticEnv and arithmetic_problems (examples/arithmetic_env.py)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import arithmetic_env

    return arithmetic_env.ArithmeticEnv, arithmetic_env.arithmetic_problems


def _run(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(
            list(cmd), capture_output=True, text=True, cwd=ROOT, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on: cores, memory, versions, commit, load."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "free_h": _run(["free", "-h"]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_head": _run(["git", "rev-parse", "HEAD"]),
        "git_status_src": _run(["git", "status", "--short", "src"]).splitlines()[:20],
        "loadavg_start": list(os.getloadavg()),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv,
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        info["torch"] = None
    return info


def median(values: Sequence[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 2) -> str:
    """A GitHub-markdown table (readable in a terminal too)."""
    cells = [[fmt(c, digits) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]

    def line(items: Sequence[str]) -> str:
        return "| " + " | ".join(s.ljust(w) for s, w in zip(items, widths, strict=True)) + " |"

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells]
    return "\n".join(out)


def write_result(name: str, data: dict[str, Any], out: str | None = None) -> Path:
    """Write benchmarks/results/NAME.json (or ``out``); return the path."""
    path = Path(out) if out else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**data, "loadavg_end": list(os.getloadavg())}
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child run: no MinT key leaks in, no telemetry posts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    env["TINKER_TELEMETRY"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env
