"""The main job, run as a user runs it (a subprocess), on a one-config grid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rl_hyperparameters.py"
ONE_CONFIG = {
    "MINT_RL_KL_COEFS": "0.02",
    "MINT_RL_TEMPS": "1.0",
    "MINT_RL_GROUPS": "2",
    "MINT_RL_STEPS": "1",
    "MINT_RL_MAX_TOKENS": "8",
    "MINT_BASE_MODEL": "mint-envkit/tiny-qwen3-small",
}


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    environ.update(ONE_CONFIG, MINT_LOG_ROOT=str(tmp_path / "sweep"), TINKER_TELEMETRY="0")
    environ["MINT_ENVKIT_CACHE"] = os.environ["MINT_ENVKIT_CACHE"]
    environ.update(env)
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _check_run_dir(sweep: Path) -> None:
    [run] = [p for p in sweep.iterdir() if p.is_dir()]
    assert run.name == "kl0p02-t1p0-g2"
    for name in ("config.json", "metrics.jsonl", "checkpoints.jsonl", "rollouts.jsonl"):
        assert (run / name).is_file(), name
    checkpoints = [
        json.loads(line) for line in (run / "checkpoints.jsonl").read_text().splitlines()
    ]
    assert checkpoints[-1]["name"] == "final"
    metrics = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert "kl_policy_base" in metrics or metrics["train/datums"] == 0
    assert (sweep / "results.jsonl").is_file() and (sweep / "summary.csv").is_file()


def test_main_job_on_the_embedded_backend(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("backend: local")
    assert "Steps  Mean reward  Correct  Eval before  Eval after  Datums  KL to base" in done.stdout
    _check_run_dir(tmp_path / "sweep")


def test_main_job_through_the_sk_key_path(tmp_path):
    """MINT_API_KEY=sk-... and MINT_BASE_URL at a separately started server: the MinT path."""
    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[ONE_CONFIG["MINT_BASE_MODEL"]]) as server:
        done = _run(tmp_path, MINT_API_KEY="sk-test", MINT_BASE_URL=server.base_url)
        counts = server.request_counts()
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("backend: mint")
    assert counts["auth_token"] >= 1 and counts["asample"] >= 1
    _check_run_dir(tmp_path / "sweep")
    for path in (tmp_path / "sweep").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".csv"):
            assert "sk-test" not in path.read_text()
