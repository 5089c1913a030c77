"""to_trl: our envs behind TRL 1.16's GRPOTrainer(environment_factory=...), reward owned by the env."""

from __future__ import annotations

import os

import pytest

from adapter_parity import ScriptSampler, reply_tokens, scripts
from mint_envkit import DatasetBuilder, MultiTurnEnv
from mint_envkit.adapters import to_trl
from mint_envkit.adapters.trl import mint_envkit_reply
from mint_envkit.errors import ConfigError
from mint_envkit.rendering import TINY_MODEL_NAME, get_renderer
from mint_envkit.rollouts.run import rollout_group
from shared_envs import ArithmeticEnv

PROBLEMS = [{"question": f"What is {a} + 2?", "answer": str(a + 2)} for a in range(8)]


def _builder(env=ArithmeticEnv, **kwargs):
    fields = {"batch_size": 4, "group_size": 4, "model_name": TINY_MODEL_NAME}
    return DatasetBuilder(
        env=env, problems=PROBLEMS, max_generation_tokens=8, **{**fields, **kwargs}
    )


def _trl_rewards(spec, index, tokens_list):
    envs = [spec.environment_factory() for _ in tokens_list]
    row = spec.train_dataset[index]
    for env in envs:
        env.reset(**row)
    assert mint_envkit_reply(completion_ids=tokens_list, environments=envs) == [None] * len(envs)
    return [env.get_reward() for env in envs]


def _trl_script(seed, size):
    """Replies TRL can produce: ended by the stop token, or cut at the length limit."""
    return [
        [r if r[1] != "nostop" else (r[0], "length") for r in env]
        for env in scripts("arithmetic", size, 1, seed)
    ]


async def test_the_same_replies_score_the_same_in_trl_and_in_our_loop():
    builder = _builder()
    spec = to_trl(builder)
    episodes = 0
    for index, group in enumerate(spec.groups):
        script = _trl_script(index, group.group_size)
        ours = await rollout_group(group, ScriptSampler(script), fail_fast=True)
        renderer = group.renderer()
        tokens = [reply_tokens(renderer, env[0]).tokens for env in script]
        assert _trl_rewards(spec, index, tokens) == ours.rewards
        episodes += len(tokens)
    assert episodes == 32


class RewardChangedEnv(ArithmeticEnv):
    reward_incorrect = -0.3  # the planted fault: one side scores a wrong answer differently


async def test_the_parity_check_fails_when_a_reward_is_changed_on_one_side():
    group = to_trl(_builder()).groups[0]
    changed = to_trl(_builder(env=RewardChangedEnv))
    renderer = group.renderer()
    script = [[("1", "stop")], [(group.problem["answer"], "stop")]] * 2  # group_size 4
    ours = await rollout_group(group, ScriptSampler(script), fail_fast=True)
    tokens = [reply_tokens(renderer, env[0]).tokens for env in script]
    assert _trl_rewards(changed, 0, tokens) != ours.rewards
    assert _trl_rewards(to_trl(_builder()), 0, tokens) == ours.rewards


def test_trl_renders_the_prompt_tokens_our_renderer_renders():
    builder = _builder()
    spec = to_trl(builder)
    renderer = get_renderer(builder.renderer_name, TINY_MODEL_NAME)
    row = spec.train_dataset[0]
    theirs = renderer.tokenizer.apply_chat_template(
        row["prompt"],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        **spec.chat_template_kwargs,
    )["input_ids"]
    assert list(theirs) == renderer.render_tokens(row["prompt"], None)


def test_grpo_config_takes_what_the_builder_owns():
    spec = to_trl(_builder())
    args = spec.grpo_config(output_dir="unused", report_to=[], use_cpu=True)
    assert (args.num_generations, args.max_completion_length) == (4, 8)
    with pytest.raises(ConfigError, match="num_generations=2"):
        spec.grpo_config(output_dir="unused", num_generations=2)


class Chat(MultiTurnEnv):
    async def respond(self, message):  # pragma: no cover - never reached
        return [], True


def test_multi_turn_envs_and_other_targets_are_refused():
    with pytest.raises(ConfigError, match="continues an episode only through tool calls"):
        to_trl(
            DatasetBuilder(
                env=Chat,
                problems=[{"question": "hi"}],
                batch_size=1,
                group_size=2,
                model_name=TINY_MODEL_NAME,
            )
        )
    with pytest.raises(ConfigError, match="takes a mint_envkit DatasetBuilder"):
        to_trl(ArithmeticEnv)
    env = to_trl(_builder()).environment_factory()
    with pytest.raises(ConfigError, match=r"pass reward_funcs=spec\.reward_funcs"):
        env.get_reward()


@pytest.mark.timeout(300)
def test_trls_own_trainer_runs_a_step_on_our_env(tmp_path, monkeypatch):
    """GRPOTrainer, on CPU, the small tiny model: one step, the reward from our env."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    from mint_envkit.local.models.tiny import tiny_model_dir

    model_dir = tiny_model_dir("mint-envkit/tiny-qwen3-small")
    builder = _builder(model_name="mint-envkit/tiny-qwen3-small", group_size=2)
    spec = to_trl(builder)
    tokenizer = get_renderer(builder.renderer_name, builder.model_name).tokenizer
    args = spec.grpo_config(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(model_dir)),
        args=args,
        train_dataset=spec.train_dataset,
        processing_class=tokenizer,
        reward_funcs=spec.reward_funcs,
        environment_factory=spec.environment_factory,
    )
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert logged and "rewards/MintEnvironment/mean" in logged[0]
    assert logged[0]["reward"] == pytest.approx(logged[0]["rewards/MintEnvironment/mean"])
    assert any(k.startswith("mint_envkit/") for k in logged[0])
    assert os.environ.get("TRL_EXPERIMENTAL_SILENCE") == "1"
