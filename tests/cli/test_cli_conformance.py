"""``mint-envkit conformance``: the command as a user runs it, its output and exit codes.

The rows themselves, and the faults they catch, are tested in ``tests/conformance/``;
here the command runs a few rows (``--row``) for real through the ``mint`` SDK: once as a
user runs it (no ``--base-url``, no ``MINT_API_KEY``: it starts an embedded server on the
default model), and against one ``LocalServer`` on the small tiny model, with an SDK call
broken, hung or answering wrongly by monkeypatching, which must give a failed row and
exit 1. Exit 2 for a usage error, 3 when the command itself fails.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mint_envkit.cli import main
from mint_envkit.conformance.rows import Row

SMALL = "mint-envkit/tiny-qwen3-small"


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A LocalServer on the small tiny model, loaded, for the module's runs."""
    from mint_envkit.local.server import LocalServer

    state = tmp_path_factory.mktemp("conformance-state")
    with LocalServer(models=[SMALL], state_dir=str(state)) as server:
        assert server.preload_errors(timeout=300) == {}
        yield server


def _conform(server: Any, tmp_path, capsys, *more: str) -> tuple[int, dict[str, Row], str]:
    """Run the command against ``server``: (exit code, rows by call, stdout)."""
    out = tmp_path / "conformance.json"
    argv = ["conformance", "--base-url", server.base_url, "--backend", "local", "--model", SMALL]
    code = main([*argv, "--out", str(tmp_path), *more])
    stdout = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert record["exit_code"] == code
    rows = {
        r["call"]: Row(r["call"], r["status"], r["detail"], r["seconds"]) for r in record["rows"]
    }
    return code, rows, stdout


@pytest.mark.integration
def test_the_default_run_starts_an_embedded_server(tmp_path, monkeypatch, capsys):
    for name in ("MINT_API_KEY", "TINKER_API_KEY", "MINT_ENVKIT_BACKEND", "MINT_BASE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINT_ENVKIT_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "out" / "conformance.json"

    code = main(["conformance", "--row", "sampler vs learner", "--out", str(out.parent)])

    stdout = capsys.readouterr().out
    record = json.loads(out.read_text())
    statuses = {r["call"]: r["status"] for r in record["rows"]}
    assert statuses == {
        "create_lora_training_client": "ok",
        "save_weights_for_sampler": "ok",
        "create_sampling_client(model_path)": "ok",
        "sampler vs learner logprobs": "ok",
    }
    assert code == 0 and record["exit_code"] == 0
    assert record["model"] == "mint-envkit/tiny-qwen3" and record["backend"] == "local"
    assert record["dtype"] == "float32"  # the embedded backend on CPU (no GPU here)
    assert record["bounds"] == {"max_abs_diff": 1e-4, "kl_sample_train_v1": 1e-5}
    assert stdout.startswith("conformance of mint-envkit/tiny-qwen3 on an embedded backend")
    for name in statuses:
        assert any(line.startswith(name) and " ok " in line for line in stdout.splitlines())
    assert "4 calls: 4 ok, 0 unsupported, 0 failed, 0 skipped" in stdout
    agreement = next(r for r in record["rows"] if r["call"] == "sampler vs learner logprobs")
    assert "max |diff|" in agreement["detail"] and "kl_sample_train_v1" in agreement["detail"]


@pytest.mark.integration
def test_a_claimed_call_that_errors_is_a_failed_row_and_exit_1(
    small_server, tmp_path, capsys, monkeypatch
):
    import tinker

    async def broken(self, adam_params):
        raise RuntimeError("the optimizer exploded")

    monkeypatch.setattr(tinker.TrainingClient, "optim_step_async", broken)
    code, rows, stdout = _conform(
        small_server, tmp_path, capsys, "--row", "optim_step", "--row", "forward_backward: ppo"
    )

    assert code == 1
    assert rows["optim_step"].status == "failed"
    assert rows["optim_step"].detail == "RuntimeError: the optimizer exploded"
    assert rows["forward_backward: ppo"].status == "ok"
    assert "optim_step" in stdout and "the optimizer exploded" in stdout


@pytest.mark.integration
def test_a_wrong_answer_is_a_failed_row(small_server, tmp_path, capsys, monkeypatch):
    import tinker

    async def wrong(self, prompt):
        return [-0.5] * prompt.length  # the first value must be None

    monkeypatch.setattr(tinker.SamplingClient, "compute_logprobs_async", wrong)
    code, rows, _ = _conform(small_server, tmp_path, capsys, "--row", "compute_logprobs")

    assert code == 1
    assert rows["compute_logprobs"].status == "failed"
    assert "first [-0.5]" in rows["compute_logprobs"].detail


@pytest.mark.integration
def test_a_hung_call_is_a_failed_row_not_a_hung_command(
    small_server, tmp_path, capsys, monkeypatch
):
    from tinker.lib.public_interfaces.rest_client import RestClient

    async def hang(self, tinker_path):
        await asyncio.sleep(3600)

    monkeypatch.setattr(RestClient, "get_checkpoint_archive_url_from_tinker_path_async", hang)
    code, rows, _ = _conform(
        small_server, tmp_path, capsys, "--timeout", "5", "--row", "archive", "--row", "delete"
    )

    assert code == 1
    assert rows["get_checkpoint_archive_url"].status == "failed"
    assert rows["get_checkpoint_archive_url"].detail == "no answer within 5 s (--timeout)"
    assert rows["delete_checkpoint"].status == "ok"  # the server answers: the next row ran


def test_a_timeout_below_zero_is_a_usage_error(capsys):
    assert main(["conformance", "--timeout", "0"]) == 2
    assert "--timeout must be > 0" in capsys.readouterr().err


def test_an_unknown_row_is_a_usage_error(capsys):
    assert main(["conformance", "--row", "no such row"]) == 2
    err = capsys.readouterr().err
    assert "no row is named 'no such row'" in err and "optim_step" in err


def test_the_command_failing_itself_exits_3(monkeypatch, capsys):
    import mint_envkit.cli.conformance as command

    async def crash(**kwargs):
        raise RuntimeError("a bug in the command")

    monkeypatch.setattr(command, "run_conformance", crash)
    assert main(["conformance"]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "a bug in the command" in err
