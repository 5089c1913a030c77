"""to_cookbook: our envs in tinker-cookbook 0.3.0's loop, token for token and reward for reward."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adapter_parity import ScriptSampler, compare, cookbook, ours, run_parity, scripts
from mint_envkit import DatasetBuilder, GroupBuilder
from mint_envkit.adapters import to_cookbook
from mint_envkit.errors import ConfigError
from mint_envkit.rendering import TINY_MODEL_NAME
from shared_envs import ARITHMETIC_PROBLEM, ArithmeticEnv

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from guess_the_number import GuessTheNumberEnv


def _arithmetic_builder(**kwargs):
    problems = [
        {"question": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(5) for b in (1, 2)
    ]
    fields = {
        "batch_size": 5,
        "group_size": 8,
        "model_name": TINY_MODEL_NAME,
        "max_generation_tokens": 8,
    }
    return DatasetBuilder(env=ArithmeticEnv, problems=problems, **{**fields, **kwargs})


async def _groups(builder):
    train, _ = await builder()
    return [g for i in range(len(train)) for g in train.get_batch(i)]


async def test_the_same_replies_score_the_same_in_both_loops():
    groups = await _groups(_arithmetic_builder(group_size=4))
    found = await run_parity(groups, "arithmetic", turns=1)
    assert found["episodes"] == 40 and found["differences"] == []


async def test_a_multi_turn_env_is_token_faithful_in_both_loops():
    problems = [{"secret": s} for s in (42, 37, 50, 99)]
    builder = DatasetBuilder(
        env=GuessTheNumberEnv,
        problems=problems,
        batch_size=4,
        group_size=4,
        model_name=TINY_MODEL_NAME,
        max_generation_tokens=8,
    )
    found = await run_parity(await _groups(builder), "guess", turns=8)
    assert found["episodes"] == 16 and found["transitions"] > 16
    assert found["differences"] == []


async def test_the_cookbook_samples_with_our_stop_condition():
    group = (await _groups(_arithmetic_builder()))[0]
    script = scripts("arithmetic", group.group_size, 1, seed=3)
    sampler = ScriptSampler(script)
    from mint_envkit.rollouts.run import rollout_group

    await rollout_group(group, sampler)
    ours_stops = {tuple(stop) for _, stop in sampler.requests}
    theirs = await cookbook(group, script)
    assert {tuple(s) for e in theirs for s in e["stops"]} == ours_stops


class RewardChangedEnv(ArithmeticEnv):
    reward_incorrect = -0.3  # the planted fault: one side scores a wrong answer differently


async def test_the_parity_check_fails_when_a_reward_is_changed_on_one_side():
    group = (await _groups(_arithmetic_builder()))[0]
    changed = GroupBuilder(
        problem=group.problem,
        env=RewardChangedEnv,
        group_size=group.group_size,
        model_name=group.model_name,
        max_generation_tokens=group.max_generation_tokens,
    )
    script = [[("7", "stop")], [("5", "stop")]] + [[("8", "stop")]] * (group.group_size - 2)
    differences = compare(await ours(group, script), await cookbook(changed, script))
    assert differences and all("rewards differ" in d or "total differ" in d for d in differences)
    assert not compare(await ours(group, script), await cookbook(group, script))


async def test_batches_and_the_test_split_are_ours():
    builder = _arithmetic_builder(test_fraction=0.2)
    train, test = await builder()
    cb_train, cb_test = await to_cookbook(builder)()
    assert len(cb_train) == len(train) and len(cb_test) == len(test)
    assert [g.group.problem for g in cb_train.get_batch(0)] == [
        g.problem for g in train.get_batch(0)
    ]
    assert cb_train.get_batch(0)[0].logging_tags() == ["ArithmeticEnv"]


def test_train_config_takes_what_the_builder_owns():
    builder = _arithmetic_builder()
    config = to_cookbook(builder).train_config(log_path="unused", learning_rate=1e-3)
    assert (config.model_name, config.max_tokens, config.renderer_name) == (
        TINY_MODEL_NAME,
        8,
        builder.renderer_name,
    )
    with pytest.raises(ConfigError, match="max_tokens=16"):
        to_cookbook(builder).train_config(log_path="x", learning_rate=1e-3, max_tokens=16)


def test_to_cookbook_refuses_what_is_not_a_dataset_builder():
    with pytest.raises(ConfigError, match="takes a mint_envkit DatasetBuilder"):
        to_cookbook(ArithmeticEnv)


def test_a_group_pickles_as_the_cookbook_asks():
    import pickle

    from mint_envkit.adapters.cookbook_loop import CookbookGroup

    group = GroupBuilder(
        problem=ARITHMETIC_PROBLEM, env=ArithmeticEnv, group_size=2, model_name=TINY_MODEL_NAME
    )
    assert pickle.loads(pickle.dumps(CookbookGroup(group))).group == group


@pytest.mark.integration
@pytest.mark.timeout(300)
async def test_the_cookbooks_own_loop_trains_our_env_for_two_steps(tiny_local_server, tmp_path):
    """Our Config through tinker-cookbook's rl.train.main (what --loop cookbook runs)."""
    from mint_envkit import Config

    builder = _arithmetic_builder(batch_size=2, group_size=4, test_fraction=0.2)
    config = Config(
        dataset_builder=builder,
        log_path=str(tmp_path / "cb"),
        learning_rate=1e-2,
        lora_rank=4,
        max_steps=2,
        eval_every=1,
        save_every=0,
        backend="local",
        base_url=tiny_local_server.base_url,
        eval_temperature=1e-3,
    )
    done = await to_cookbook(builder).train(config)
    lines = [json.loads(x) for x in (tmp_path / "cb" / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in lines if "progress/batch" in m]
    assert [m["progress/batch"] for m in steps] == [0, 1]
    assert all("env/all/reward/total" in m and "env/all/correct" in m for m in steps)
    # what each step trained: 2 groups x 4 replies, one datum each (the cookbook keeps
    # constant groups and has no zero-advantage skip)
    assert [m["train/datums"] for m in steps] == [8, 8]
    assert "test/env/all/reward/total" in steps[0]  # the cookbook's own held-out eval
    assert done["sampler_path"].startswith("tinker://")
    assert lines[-1]["loop"] == "tinker-cookbook" and "test_final/env/all/correct" in lines[-1]
    assert lines[-1]["progress/batch"] == 1  # added to the final step's line, as our loop does


def test_what_the_cookbook_cannot_honour_is_refused(tmp_path):
    from mint_envkit import Config, KLReferenceConfig
    from mint_envkit.adapters.cookbook_train import cookbook_config

    builder = _arithmetic_builder()
    config = Config(dataset_builder=builder, log_path=str(tmp_path), learning_rate=1e-3, top_p=0.9)
    with pytest.raises(ConfigError, match=r"top_p=0\.9 has no equivalent"):
        cookbook_config(config, base_url=None)
    ours = Config(
        dataset_builder=builder,
        log_path=str(tmp_path),
        learning_rate=1e-3,
        kl_penalty_coef=0.02,
        kl_reference_config=KLReferenceConfig(base_model=TINY_MODEL_NAME),
        lora_rank=4,
        max_steps=3,
    )
    theirs = cookbook_config(ours, base_url="http://127.0.0.1:1")
    assert (theirs.learning_rate, theirs.lora_rank, theirs.max_steps) == (1e-3, 4, 3)
    assert theirs.kl_penalty_coef == 0.02
    assert theirs.kl_reference_config.base_model == TINY_MODEL_NAME
