"""The main job, run as a user runs it (a subprocess), on a one-config grid of a tiny model.

The real main job trains SmolLM2-135M (minutes); these check its plumbing on the
built-in tiny models: what it trains and saves, what it prints, the rerun that skips
(and says how to run again), ``--fresh``, the model it picks, and the MinT key path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = EXAMPLES / "rl_hyperparameters.py"
sys.path.insert(0, str(EXAMPLES))

import rl_hyperparameters as main_job  # noqa: E402

from mint_envkit.errors import MintEnvkitError  # noqa: E402
from mint_envkit.rendering import TINY_MODEL_NAME, gguf_files  # noqa: E402
from mint_envkit.sweep import Sweep  # noqa: E402

SMALL = "mint-envkit/tiny-qwen3-small"
ONE_CONFIG = {
    "MINT_RL_KL_COEFS": "0.02",
    "MINT_RL_TEMPS": "1.0",
    "MINT_RL_GROUPS": "2",
    "MINT_RL_STEPS": "1",
    "MINT_RL_BATCH": "2",
}


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    environ.update(ONE_CONFIG, MINT_LOG_ROOT=str(tmp_path / "sweep"), TINKER_TELEMETRY="0")
    environ["MINT_ENVKIT_CACHE"] = os.environ["MINT_ENVKIT_CACHE"]
    environ.update(env)
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _check_run_dir(sweep: Path) -> dict:
    """The one config's files: config, metrics with datums, a final checkpoint; its metrics."""
    [run] = [p for p in sweep.iterdir() if p.is_dir()]
    assert run.name == "kl0p02-t1p0-g2"
    for name in ("config.json", "metrics.jsonl", "checkpoints.jsonl", "rollouts.jsonl"):
        assert (run / name).is_file(), name
    checkpoints = [
        json.loads(line) for line in (run / "checkpoints.jsonl").read_text().splitlines()
    ]
    assert checkpoints[-1]["name"] == "final"
    assert checkpoints[-1]["sampler_path"].startswith("tinker://")
    metrics = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert metrics["train/datums"] == 4  # 2 groups of 2, constant ones kept (advantages 0)
    assert "kl_policy_base" in metrics  # the KL config measured the KL to the reference
    config = json.loads((run / "config.json").read_text())
    assert config["kl_reference_config"] == {
        "base_model": config["model_name"],
        "load_checkpoint_path": None,
    }
    assert "kl_post_reference_v2" in metrics  # the KL of the updated policy to the reference
    assert (sweep / "results.jsonl").is_file() and (sweep / "summary.csv").is_file()
    return metrics


@pytest.mark.integration
def test_the_tiny_smoke_run_trains_saves_and_skips_a_rerun_until_fresh(tmp_path):
    done = _run(tmp_path, "--tiny")
    assert done.returncode == 0, done.stderr[-2000:]
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"backend: local - training {TINY_MODEL_NAME} (--tiny: the smoke run")
    assert "Steps  Mean reward  Correct  Eval before  Eval after  Datums  KL to base" in done.stdout
    metrics = _check_run_dir(tmp_path / "sweep")
    # what it trained, in words: datums, tokens, the KL and its reference, the checkpoint
    words = " ".join(done.stdout.split("What each config trained\n", 1)[1].split())
    assert words.startswith("kl0p02-t1p0-g2: 1 step, 4 datums trained")
    assert f"{metrics['train/tokens']} reply tokens" in words
    assert f"KL penalty 0.02 against {TINY_MODEL_NAME} (the base model)" in words
    assert "after the step, the updated policy's KL to it" in words
    assert "checkpoint final at step 1: tinker://" in words
    # what one step from a fresh adapter is, and where learning is shown
    assert (
        "a smoke test of the path (sampling, training, the KL reference, the checkpoint)" in words
    )
    assert "not a measure of quality" in words
    assert "python examples/learn_arithmetic.py" in done.stdout
    assert "Nothing was trained" not in done.stdout

    again = _run(tmp_path, "--tiny")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 configs in" in again.stdout and "1 finished earlier, 0 to run" in again.stdout
    assert "Nothing was trained: all 1 configs finished earlier" in again.stdout
    assert "bash scripts/sweep.sh --fresh" in again.stdout
    assert "start kl0p02-t1p0-g2" not in again.stdout

    saved = [  # the first run's checkpoints, in the backend's store (not under the root)
        json.loads(line)
        for line in next((tmp_path / "sweep").glob("*/checkpoints.jsonl")).read_text().splitlines()
    ]
    store = Path(os.environ["MINT_ENVKIT_CACHE"]) / "state"
    folders = [
        store / saved[-1][key].removeprefix("tinker://") for key in ("state_path", "sampler_path")
    ]
    assert all(folder.is_dir() for folder in folders)
    fresh = _run(tmp_path, "--tiny", "--fresh")
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert f"--fresh: deleted {tmp_path / 'sweep'} and the " in fresh.stdout
    assert "checkpoint(s) its runs saved" in fresh.stdout
    assert not any(folder.exists() for folder in folders)  # issue 48: none left orphaned
    assert "0 finished earlier, 1 to run" in fresh.stdout
    assert "Nothing was trained" not in fresh.stdout
    _check_run_dir(tmp_path / "sweep")


@pytest.mark.integration
def test_main_job_through_the_sk_key_path(tmp_path):
    """MINT_API_KEY=sk-... and MINT_BASE_URL at a separately started server: the MinT path."""
    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[SMALL]) as server:
        done = _run(
            tmp_path,
            MINT_API_KEY="sk-test",
            MINT_BASE_URL=server.base_url,
            MINT_BASE_MODEL=SMALL,
        )
        counts = server.request_counts()
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"backend: mint - training {SMALL} on")
    assert counts["auth_token"] >= 1 and counts["asample"] >= 1
    _check_run_dir(tmp_path / "sweep")
    for path in (tmp_path / "sweep").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".csv"):
            assert "sk-test" not in path.read_text()


def test_the_main_job_trains_smollm2_or_says_it_falls_back(monkeypatch):
    monkeypatch.delenv("MINT_BASE_MODEL", raising=False)
    monkeypatch.setattr(gguf_files, "find_smollm2_gguf", lambda: Path("SmolLM2.gguf"))
    assert main_job.choose_model("local") == (gguf_files.SMOLLM2_MODEL_NAME, "")
    model, why = main_job.choose_model("local", tiny=True)
    assert model == TINY_MODEL_NAME and why.startswith(" (--tiny")
    monkeypatch.setattr(gguf_files, "find_smollm2_gguf", lambda: None)
    model, why = main_job.choose_model("local")
    assert model == TINY_MODEL_NAME
    assert "SmolLM2-135M-Instruct, which is not installed" in why
    assert "mint-envkit install-model smollm2" in why
    assert main_job.choose_model("mint") == ("Qwen/Qwen3-0.6B", "")
    monkeypatch.setenv("MINT_BASE_MODEL", SMALL)
    assert main_job.choose_model("local") == (SMALL, "")


def test_the_main_job_is_the_seeds_recipe():
    """The MinT quickstart's rl_hyperparameters.py: its env, reward and training values."""
    env = main_job.SeedArithmeticEnv
    assert env.system_prompt == "You are a precise calculator. Reply with only the final number."
    assert (env.reward_correct, env.reward_incorrect, env.reward_unparsed) == (1.0, -0.25, -0.25)
    assert env.parser.name == "first_number"
    assert not getattr(env, "few_shot", None)  # no worked example
    builder = main_job.dataset_builder(gguf_files.SMOLLM2_MODEL_NAME)
    assert builder.max_generation_tokens == 64 and builder.max_trajectory_tokens == 512
    assert all(p["question"].endswith(" Answer with only the number.") for p in builder.problems)
    assert builder.renderer_name != "qwen3_disable_thinking"  # SmolLM2's own template
    assert main_job.dataset_builder(TINY_MODEL_NAME).renderer_name == "qwen3_disable_thinking"
    for backend in ("local", "mint"):
        config = main_job.base_config(backend, gguf_files.SMOLLM2_MODEL_NAME)
        assert (config.learning_rate, config.lora_rank, config.max_tokens) == (1e-5, 16, 64)
        assert config.loss_fn == "importance_sampling" and config.eval_every == 0
        assert config.remove_constant_reward_groups is False and config.compute_post_kl
        assert config.kl_reference_config is None  # the sweep adds one to each KL config


def _sweep(root: Path) -> Sweep:
    return Sweep(base=main_job.base_config("local", TINY_MODEL_NAME), root=str(root))


def test_fresh_deletes_only_a_sweep_directory(tmp_path):
    assert main_job.clear_sweep_root(_sweep(tmp_path / "none")) is None
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(MintEnvkitError, match=r"holds no sweep\.json"):
        main_job.clear_sweep_root(_sweep(other))
    assert (other / "notes.txt").exists()
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    said = main_job.clear_sweep_root(_sweep(sweep))
    assert said == f"--fresh: deleted {sweep} and the 0 checkpoint(s) its runs saved"
    assert not sweep.exists()


def test_the_smoke_run_and_the_real_one_never_share_a_results_folder():
    """The trap: `sweep.sh --tiny` after the main job exited 2 on the real run's folder
    (and its suggested --fresh would have deleted the SmolLM2 results)."""
    roots = {
        main_job.results_root(backend, loop=loop, tiny=tiny)
        for backend in ("local", "mint")
        for loop in ("ours", "cookbook")
        for tiny in (False, True)
    }
    assert len(roots) == 8
    assert main_job.results_root("local", tiny=True) == "runs/rl_hyperparameters-local-tiny"
    assert main_job.results_root("local") == "runs/rl_hyperparameters-local"
