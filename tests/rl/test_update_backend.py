"""num_substeps, post-update KL and parse-failure masking through the embedded backend.

The tiny model really trains here: ``num_substeps=2`` must move the weights exactly as
two ``forward_backward`` + ``optim_step`` pairs on the halves sent by hand do, and the
post-update KL must be measured with the weights after the whole update.
"""

from __future__ import annotations

import json
import math
import zlib

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, MessageStepResult, SingleTurnEnv
from mint_envkit.rl.datums import Sample, plan_datums, to_datums
from mint_envkit.rl.diagnostics import learner_logprobs, post_kl_metrics
from mint_envkit.rl.train import main, train_on_batch
from mint_envkit.runs.files import RunFiles

pytestmark = pytest.mark.integration

MODEL = "mint-envkit/tiny-qwen3-small"
LOSS = "importance_sampling"


async def _logprobs(training, samples: list[Sample]) -> list[list[float]]:
    """The training client's current logprobs of each sample's reply (a forward, no gradient)."""
    data = to_datums(samples, [[0.0] * len(s.reply) for s in samples])
    output = await (await training.forward_async(data, LOSS, None))
    return learner_logprobs(output.loss_fn_outputs, samples, plan_datums(samples))


async def test_two_substeps_train_like_two_pairs_on_the_halves_and_post_kl_sees_the_update(
    phase_config, server
):
    import mint
    import tinker

    config = attrs.evolve(
        phase_config,
        model_name=MODEL,
        learning_rate=1e-2,
        num_substeps=2,
        compute_post_kl=True,
        dataset_builder=attrs.evolve(phase_config.dataset_builder, model_name=MODEL),
    )
    service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
    try:
        clients = [
            await service.create_lora_training_client_async(base_model=MODEL, rank=4, seed=0)
            for _ in range(3)
        ]
        replies = [[7, 8, 9], [11, 12], [13, 14, 15], [16]]
        plain = [Sample([5, 17, 42], r, [0.0] * len(r), 0.0) for r in replies]
        behaviour = await _logprobs(clients[0], plain)  # the initial weights' own logprobs
        samples = [
            attrs.evolve(s, logprobs=lp, advantage=a)
            for s, lp, a in zip(plain, behaviour, [1.0, -1.0, 0.5, -0.5], strict=True)
        ]
        advantages = [s.token_advantages() for s in samples]

        ours = await train_on_batch(clients[0], config, samples, advantages)

        by_hand, data = clients[1], to_datums(samples, advantages)
        adam = tinker.AdamParams(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1e-8)
        for half in (data[:2], data[2:]):
            await (await by_hand.forward_backward_async(half, LOSS, None))
            await (await by_hand.optim_step_async(adam))
        expected = post_kl_metrics(behaviour, await _logprobs(by_hand, samples))

        one_step = attrs.evolve(config, num_substeps=1)
        single = await train_on_batch(clients[2], one_step, samples, advantages)
    finally:
        service.holder.close()  # stop its heartbeat before the server goes away

    assert ours["optim/substeps"] == 2
    assert abs(ours["kl_pre_post_v1"]) > 1e-3  # the update moved the policy
    assert ours["kl_pre_post_v1"] == pytest.approx(expected["kl_pre_post_v1"], abs=1e-5)
    assert ours["kl_pre_post_v2"] == pytest.approx(expected["kl_pre_post_v2"], abs=1e-5)
    # one step over the whole batch is a different update
    assert abs(single["kl_pre_post_v2"] - ours["kl_pre_post_v2"]) > 1e-4


class HalfParsedEnv(SingleTurnEnv):
    """Reward: a hash of the reply in [0, 1); the reply 'parses' when another hash is even,
    so a batch of the tiny model's replies has both parsed and unparsed ones."""

    def score(self, message):
        content = message["content"].encode()
        reward = (zlib.crc32(content) % 1000) / 1000
        status = "ok" if zlib.adler32(content) % 2 == 0 else "no_match"
        return MessageStepResult(
            reward=reward, episode_done=True, logs={"parse_status": status, "parsed": None}
        )


async def test_an_off_policy_run_with_substeps_post_kl_and_masking(tmp_path, server):
    builder = DatasetBuilder(
        env=HalfParsedEnv,
        problems=[{"question": f"Say {i}.", "answer": str(i)} for i in range(4)],
        batch_size=2,
        group_size=4,
        score_truncated=True,
        model_name=MODEL,
        seed=0,
    )
    config = Config(
        dataset_builder=attrs.evolve(builder, max_generation_tokens=6),
        model_name=MODEL,
        log_path=str(tmp_path / "run"),
        learning_rate=3e-3,
        lora_rank=4,
        max_steps=2,
        base_url=server.base_url,
        backend="local",
        save_every=0,
        max_steps_off_policy=1,
        num_substeps=2,
        compute_post_kl=True,
        mask_parse_failures=True,
    )
    server.reset_counts()
    result = await main(config)
    files = RunFiles(result.log_path)
    metrics = files.metrics()
    rollouts = [json.loads(line) for line in files.rollouts_path.read_text().splitlines()]

    counts = server.request_counts()
    trained = [m["train/datums"] > 0 for m in metrics]
    assert all(trained)  # hashed rewards: no group is constant
    assert (counts["forward_backward"], counts["optim_step"]) == (4, 4)  # 2 steps x 2 substeps
    # one post-KL pass per step, and a forward measuring the masked replies (advantages
    # all 0: no backward pass, rl/update.py) of each substep that has any
    assert 2 < counts["forward"] <= 2 + 4
    assert [m["off_policy/staleness_max"] for m in metrics] == [0.0, 1.0]
    for step, m in enumerate(metrics):
        assert m["optim/substeps"] == 2
        assert math.isfinite(m["kl_pre_post_v1"]) and m["kl_pre_post_v2"] >= 0
        unparsed = [
            r
            for r in rollouts
            if r["step"] == step and r["advantage"] is not None and r["parse_status"] != "ok"
        ]
        assert m["train/masked_parse_failures"] == len(unparsed)
        assert m.get("train/zero_advantage_datums", 0) == len(unparsed)
    assert sum(m["train/masked_parse_failures"] for m in metrics) > 0
