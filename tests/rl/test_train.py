"""The training loop through the real mint SDK against the embedded backend."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, KLReferenceConfig, SingleTurnEnv, first_number
from mint_envkit.errors import BackendError, MintEnvkitError
from mint_envkit.rl.train import main
from mint_envkit.rollouts.backend import preflight
from mint_envkit.runs.files import RunFiles
from sdk_sessions import heartbeat_stopped, record_service_clients

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.25


class ExplodingEnv(AddEnv):
    """Raises while scoring the problem whose answer is 'boom'."""

    def score(self, message):
        if self.answer == "boom":
            raise RuntimeError("scorer crashed on purpose")
        return super().score(message)


class FirstCharEnv(SingleTurnEnv):
    """Toy reward: 1 when the reply starts with a lowercase vowel (about 40% at the start)."""

    def score(self, message):
        from mint_envkit import MessageStepResult

        hit = message["content"][:1] in set("aeiou")
        return MessageStepResult(reward=float(hit), episode_done=True, metrics={"hit": float(hit)})


class ReplyHashEnv(SingleTurnEnv):
    """Reward: a hash of the whole reply, in [0, 1). A group is constant only when all of its
    replies are the same text: 8 samples of several tokens at temperature > 0 from the tiny
    model never are (and the seeded runs here are reproducible), so every group trains."""

    def score(self, message):
        import zlib

        from mint_envkit import MessageStepResult

        reward = (zlib.crc32(message["content"].encode()) % 1000) / 1000
        return MessageStepResult(reward=reward, episode_done=True, metrics={})


def _problems(n: int, answer: str | None = None) -> list[dict[str, str]]:
    return [{"question": f"What is {i} + {i}?", "answer": answer or str(2 * i)} for i in range(n)]


def _config(tmp_path: Path, server, env=AddEnv, problems=None, **overrides) -> Config:
    builder_fields = {
        key: overrides.pop(key)
        for key in ("group_size", "batch_size", "score_truncated")
        if key in overrides
    }
    max_tokens = overrides.pop("max_tokens", 6)  # the builder owns the reply limit
    builder = DatasetBuilder(
        env=env,
        problems=problems or _problems(8),
        batch_size=builder_fields.get("batch_size", 2),
        group_size=builder_fields.get("group_size", 4),
        score_truncated=builder_fields.get("score_truncated", False),
        model_name=MODEL,
        seed=0,
        max_generation_tokens=max_tokens,
    )
    fields = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "run"),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 1,
        "base_url": server.base_url if server is not None else None,
        "backend": "local",
        "save_every": 0,
    }
    fields.update(overrides)
    return Config(**fields)


async def test_one_sample_request_per_group(tmp_path, server):
    server.reset_counts()
    result = await main(_config(tmp_path, server, group_size=4, batch_size=2))
    counts = server.request_counts()
    assert counts["asample"] == 2  # two groups of four: one request each
    assert result.final_metrics["sample_requests"] == 2
    files = RunFiles(result.log_path)
    assert [m["step"] for m in files.metrics()] == [0]
    assert files.last_checkpoint()["name"] == "final"
    rollouts = [json.loads(line) for line in files.rollouts_path.read_text().splitlines()]
    assert len(rollouts) == 8
    assert {"prompt", "replies", "reward", "metrics", "parse_status"} <= set(rollouts[0])
    config = json.loads(files.config.read_text())
    assert config["model_name"] == MODEL and config["dataset_builder"]["group_size"] == 4


async def test_a_finished_run_stops_its_sdk_session_heartbeat(tmp_path, server, monkeypatch):
    """Otherwise a process that lives on (a notebook, a sweep) warns every 10 s once the
    embedded server is gone: the SDK heartbeats its session for the life of the process."""
    made = record_service_clients(monkeypatch)
    await main(_config(tmp_path, server))
    assert len(made) == 1 and heartbeat_stopped(made[0])


async def test_env_error_fails_only_its_group(tmp_path, server):
    problems = [{"question": "What is 1 + 1?", "answer": "boom"}, *_problems(3)]
    config = _config(
        tmp_path, server, env=ExplodingEnv, problems=problems, batch_size=4, score_truncated=True
    )
    result = await main(config)
    assert result.final_metrics["env/all/rollout_errors"] == 1
    assert result.final_metrics["env/all/episodes"] == 12
    errors = [
        json.loads(line)
        for line in Path(result.log_path, "rollouts.jsonl").read_text().splitlines()
        if "error" in json.loads(line)
    ]
    assert len(errors) == 1 and "scorer crashed on purpose" in errors[0]["error"]
    assert "Traceback" in errors[0]["traceback"]


async def test_every_group_failing_stops_the_run(tmp_path, server):
    problems = [{"question": "What is 1 + 1?", "answer": "boom"}] * 2
    config = _config(tmp_path, server, env=ExplodingEnv, problems=problems, score_truncated=True)
    with pytest.raises(MintEnvkitError, match="every group of step 0 failed"):
        await main(config)


async def test_fail_fast_raises_the_env_error(tmp_path, server):
    problems = [{"question": "What is 1 + 1?", "answer": "boom"}, *_problems(1)]
    config = _config(
        tmp_path, server, env=ExplodingEnv, problems=problems, fail_fast=True, score_truncated=True
    )
    with pytest.raises(RuntimeError, match="on purpose"):
        await main(config)


async def test_resume_continues_from_the_last_checkpoint(tmp_path, server):
    first = await main(_config(tmp_path, server, max_steps=2, save_every=1))
    assert first.steps == 2 and first.resumed_from == 0
    again = await main(_config(tmp_path, server, max_steps=2, save_every=1))
    assert again.resumed_from == 2  # finished: nothing redone
    longer = await main(_config(tmp_path, server, max_steps=3, save_every=1))
    assert longer.resumed_from == 2
    files = RunFiles(longer.log_path)
    assert [m["step"] for m in files.metrics()] == [0, 1, 2]
    assert [c["step"] for c in files.checkpoints()] == [1, 2, 3]


async def test_kl_penalty_logs_kl_against_the_base_model(tmp_path, server):
    config = _config(
        tmp_path,
        server,
        env=ReplyHashEnv,
        kl_penalty_coef=0.05,
        kl_reference_config=KLReferenceConfig(MODEL),
        score_truncated=True,
        max_steps=2,
        group_size=8,
    )
    result = await main(config)
    metrics = RunFiles(result.log_path).metrics()
    assert [m["step"] for m in metrics] == [0, 1]
    assert all(m["train/datums"] > 0 for m in metrics)  # every group is mixed: both steps train
    # Step 0 samples at temperature 1 from weights equal to the base model: the KL is ~0.
    assert abs(metrics[0]["kl_policy_base"]) < 1e-3
    # Step 1 samples from the updated weights: the policy has moved away from the base model.
    assert metrics[1]["kl_policy_base"] > 1e-2


async def test_api_key_is_never_written(tmp_path, server, monkeypatch):
    monkeypatch.setenv("MINT_API_KEY", "sk-very-secret-key")
    result = await main(_config(tmp_path, server))
    written = sorted(p.name for p in Path(result.log_path).iterdir())
    assert {"config.json", "metrics.jsonl", "rollouts.jsonl"} <= set(written), written
    for path in Path(result.log_path).iterdir():
        assert "sk-very-secret-key" not in path.read_text()


async def test_unreachable_backend_fails_fast_with_advice(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(BackendError, match="did not answer") as info:
        await preflight(f"http://127.0.0.1:{port}", timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert "MINT_BASE_URL" in str(info.value)


async def test_learning_run_improves_mean_reward(tmp_path, server):
    """Group-relative IS updates on a one-token toy reward raise the mean reward.

    Over three sampling seeds: one seeded trajectory moves with the float rounding of
    the training arithmetic (the packed training row, equal to the old path to 1e-8,
    took seed 0's gain from +0.63 to +0.14; seeds 1-5 gained +0.41 to +0.64 either way),
    so one run's gain is not the claim."""
    problems = [{"question": f"Say something {i}.", "answer": ""} for i in range(4)]
    gains = []
    for seed in (0, 1, 2):
        config = _config(
            tmp_path / str(seed),
            server,
            env=FirstCharEnv,
            problems=problems,
            batch_size=2,
            group_size=8,
            score_truncated=True,
            max_tokens=1,
            max_steps=24,
            learning_rate=5e-3,
            lora_rank=8,
            temperature=1.0,
            sampling_seed=seed,
        )
        result = await main(config)
        rewards = [m["env/all/reward/total"] for m in RunFiles(result.log_path).metrics()]
        assert len(rewards) == 24
        gains.append(sum(rewards[-4:]) / 4 - sum(rewards[:4]) / 4)
    assert all(gain > 0 for gain in gains) and sum(gains) / 3 > 0.2, gains


async def test_step_samplers_are_unnamed_and_the_server_caps_them(tmp_path):
    """Per-step snapshots write nothing to storage; the server keeps only the newest few."""
    import httpx

    from mint_envkit.local.server import LocalServer

    with LocalServer(models=[MODEL], state_dir=tmp_path / "state", max_unnamed_samplers=2) as small:
        small.reset_counts()
        result = await main(_config(tmp_path, small, max_steps=4))
        counts = small.request_counts()
        stats = httpx.get(f"{small.base_url}/api/v1/mint_envkit/stats").json()
    assert result.steps == 4
    # 4 unnamed step snapshots + the final checkpoint's named sampler weights
    assert counts["save_weights_for_sampler"] == 5
    # on disk: only the final checkpoint (state + sampler weights)
    saved = sorted(p.parent.parent.name for p in (tmp_path / "state").rglob("meta.json"))
    assert saved == ["sampler_weights", "weights"]
    # in memory: 2 unnamed snapshots (the cap) + the named final one
    assert stats["samplers"] == 3


async def test_eval_every_runs_the_test_split(tmp_path, server):
    builder = DatasetBuilder(
        env=AddEnv,
        problems=_problems(4),
        test_problems=_problems(3),
        batch_size=2,
        group_size=2,
        model_name=MODEL,
    )
    config = Config(
        dataset_builder=attrs.evolve(builder, max_generation_tokens=4),
        model_name=MODEL,
        log_path=str(tmp_path / "run"),
        learning_rate=3e-3,
        lora_rank=4,
        max_steps=2,
        eval_every=1,
        save_every=0,
        base_url=server.base_url,
        backend="local",
    )
    result = await main(config)
    metrics = RunFiles(result.log_path).metrics()
    assert [m["step"] for m in metrics] == [0, 1]
    assert all("test/env/all/reward/total" in m for m in metrics)
    assert all(m["test/env/all/episodes"] == 3 for m in metrics)  # test groups of one
    records = [
        json.loads(line)
        for line in Path(result.log_path, "rollouts.jsonl").read_text().splitlines()
    ]
    assert sum(r["split"] == "test" for r in records) == 6
    assert sum(r["split"] == "train" for r in records) == 8
    # After the last update, the same problems again with the final weights.
    assert "test_final/env/all/reward/total" not in metrics[0]
    assert metrics[-1]["test_final/env/all/episodes"] == 3
    assert sum(r["split"] == "test_final" for r in records) == 3


class AlwaysRightEnv(SingleTurnEnv):
    """Every reply counts as correct: every group is constant (all correct)."""

    def check(self, parsed, answer):
        return True

    parser = staticmethod(lambda text: text or "empty")


class NeverParsedEnv(SingleTurnEnv):
    """No reply ever parses: every group is constant (all unparsed)."""

    parser = staticmethod(lambda text: None)


@pytest.mark.parametrize(
    ("env", "reason"), [(AlwaysRightEnv, "all_correct"), (NeverParsedEnv, "all_unparsed")]
)
async def test_constant_groups_are_dropped_and_counted_by_reason(tmp_path, server, env, reason):
    config = _config(tmp_path, server, env=env, score_truncated=True)
    result = await main(attrs.evolve(config, remove_constant_reward_groups=True))
    metrics = result.final_metrics
    assert metrics[f"env/all/by_group/dropped_{reason}"] == 2
    assert metrics["env/all/by_group/dropped"] == 2
    assert metrics["env/all/by_group/frac_mixed"] == 0.0
    assert metrics["train/datums"] == 0
    good = 1.0 if reason == "all_correct" else 0.0
    assert metrics["env/all/by_group/frac_all_good"] == good
    assert metrics["env/all/by_group/frac_all_bad"] == 1.0 - good


def _without_times(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def _metrics_and_rollouts(result) -> tuple[list[dict], list[dict]]:
    """A finished run's metrics (without timings) and rollouts (every line must parse)."""
    files = RunFiles(result.log_path)
    rollouts = [json.loads(line) for line in files.rollouts_path.read_text().splitlines()]
    return _without_times(files.metrics()), rollouts


async def test_off_policy_run_is_deterministic_for_a_fixed_seed(tmp_path):
    """Two k=1 runs with one seed, each on a fresh embedded backend, are identical, bit for
    bit. The prompts have one length: the server batches whatever requests arrive
    together, and on CPU a request's logprobs do not depend on that (the engine runs at
    least 8 rows, and the suite pins MKL's reproducible path, tests/conftest.py).
    20 in a row: ``for i in $(seq 20); do python -m pytest -q "tests/rl/test_train.py::
    test_off_policy_run_is_deterministic_for_a_fixed_seed"; done`` (docs/architecture.md)."""
    from mint_envkit.local.server import LocalServer

    results = []
    for name in ("a", "b"):
        with LocalServer(models=[MODEL], state_dir=str(tmp_path / name / "state")) as fresh:
            config = _config(
                tmp_path / name,
                fresh,
                env=FirstCharEnv,
                score_truncated=True,
                max_tokens=3,
                max_steps=3,
                max_steps_off_policy=1,
            )
            result = await main(config)
        results.append(_metrics_and_rollouts(result))
    (metrics, rollouts), again = results
    assert (metrics, rollouts) == again
    assert [m["off_policy/staleness_max"] for m in metrics] == [0.0, 1.0, 1.0]
    assert [m["off_policy/sampler_version"] for m in metrics] == [0.0, 0.0, 1.0]
    assert sorted({(r["step"], r["sampler_version"]) for r in rollouts}) == [(0, 0), (1, 0), (2, 1)]
    assert any(m["train/datums"] for m in metrics)


async def test_batch_invariant_runs_with_prompts_of_mixed_lengths_are_identical(tmp_path):
    """Prompts of many lengths, k=1, the loop's own embedded server with
    ``local_batch_invariant``: two runs agree bit for bit (without it, padded batches of
    mixed lengths round logprobs differently depending on what arrived together)."""
    problems = [
        {
            "question": "What is " + " + ".join(["7"] * (1 + i % 5)) + "?",
            "answer": str(7 * (1 + i % 5)),
        }
        for i in range(8)
    ]
    results = []
    for name in ("a", "b"):
        config = _config(
            tmp_path / name,
            None,
            env=FirstCharEnv,
            problems=problems,
            score_truncated=True,
            max_tokens=3,
            max_steps=3,
            max_steps_off_policy=1,
            base_url=None,
            local_batch_invariant=True,
        )
        result = await main(config)
        results.append(_metrics_and_rollouts(result))
    (metrics, rollouts), again = results
    questions = {m["content"] for r in rollouts for m in r["messages"] if m["role"] == "user"}
    assert len({len(q) for q in questions}) > 1  # the prompts' lengths do vary
    assert (metrics, rollouts) == again
    assert any(m["train/datums"] for m in metrics)


async def test_off_policy_run_resumes_and_evaluates(tmp_path, server):
    builder = DatasetBuilder(
        env=AddEnv,
        problems=_problems(4),
        test_problems=_problems(2),
        batch_size=2,
        group_size=2,
        model_name=MODEL,
    )
    fields = {"dataset_builder": builder, "eval_every": 1, "save_every": 1}
    first = await main(_config(tmp_path, server, max_steps=2, max_steps_off_policy=1, **fields))
    longer = await main(_config(tmp_path, server, max_steps=4, max_steps_off_policy=1, **fields))
    assert (first.steps, longer.resumed_from, longer.steps) == (2, 2, 4)
    metrics = RunFiles(longer.log_path).metrics()
    assert [m["step"] for m in metrics] == [0, 1, 2, 3]
    assert all("test/env/all/reward/total" in m for m in metrics)
    # resumed at 2: the pipeline refills from the checkpoint's weights
    assert [m["off_policy/sampler_version"] for m in metrics] == [0.0, 0.0, 2.0, 2.0]
    assert [c["step"] for c in RunFiles(longer.log_path).checkpoints()] == [1, 2, 3, 4]


@pytest.mark.parametrize(("recompute", "small"), [(None, True), (False, False)])
async def test_kl_against_the_base_model_is_zero_before_any_update_at_t07(
    tmp_path, server, recompute, small
):
    config = _config(
        tmp_path,
        server,
        env=ReplyHashEnv,
        score_truncated=True,
        temperature=0.7,
        kl_penalty_coef=0.05,
        kl_reference_config=KLReferenceConfig(MODEL),
        recompute_behavior_logprobs=recompute,
        group_size=8,
    )
    metrics = (await main(config)).final_metrics
    assert metrics["train/datums"] > 0  # ReplyHashEnv: every group is mixed, so the step trains
    assert metrics["optim/behavior_logprobs_recomputed"] == (1.0 if small else 0.0)
    if small:  # the sampler's own T=1 logprobs: the policy is the base model at step 0
        assert abs(metrics["kl_policy_base"]) < 1e-3
        assert abs(metrics["optim/kl_sample_train_v1"]) < 1e-3
    else:  # T=0.7 sampled logprobs are not the policy's
        assert abs(metrics["kl_policy_base"]) > 1e-2
        assert abs(metrics["optim/kl_sample_train_v1"]) > 1e-2
    assert metrics["optim/entropy"] > 0


async def test_a_step_that_trains_nothing_still_logs_kl_and_says_why(tmp_path, server, capsys):
    config = _config(
        tmp_path,
        server,
        env=AlwaysRightEnv,
        score_truncated=True,
        kl_penalty_coef=0.05,
        kl_reference_config=KLReferenceConfig(MODEL),
    )
    metrics = (await main(attrs.evolve(config, remove_constant_reward_groups=True))).final_metrics
    assert metrics["train/datums"] == 0
    assert abs(metrics["kl_policy_base"]) < 1e-3  # over every sampled token
    assert metrics["env/all/reward/total"] is not None
    assert "no update: 2/2 groups constant (all correct 2)" in capsys.readouterr().err


async def test_a_sweep_over_max_steps_off_policy_runs_both_modes(tmp_path, server):
    from mint_envkit.sweep import Sweep

    base = _config(tmp_path, server, max_steps=2)
    sweep = Sweep(base=base, grid={"max_steps_off_policy": [0, 1]}, root=tmp_path / "sweep")
    results = await sweep.run()
    assert [r.ok for r in results] == [True, True]
    versions = [
        [m["off_policy/sampler_version"] for m in RunFiles(r.log_path).metrics()] for r in results
    ]
    assert sorted(versions) == [[0.0, 0.0], [0.0, 1.0]]


async def test_a_local_run_says_where_its_checkpoints_go(tmp_path, server, capsys):
    await main(_config(tmp_path, server, max_steps=1))
    err = capsys.readouterr().err
    assert f"checkpoints: the state dir of the server at {server.base_url}" in err
    assert "mint-envkit checkpoints list" in err
