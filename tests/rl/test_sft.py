"""Fine-tuning on good rollouts: the filters, the datums, and cross-entropy through the backend."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, SingleTurnEnv, first_number, get_renderer
from mint_envkit.errors import ConfigError
from mint_envkit.rl.sft import (
    SupervisedExample,
    fine_tune_on_rollouts,
    good_rollouts,
    supervised_datum,
    supervised_examples,
)
from mint_envkit.runs.files import RunFiles

MODEL = "mint-envkit/tiny-qwen3-small"


def _record(reward: float, correct: float | None, split: str = "test", **extra) -> dict:
    metrics = {} if correct is None else {"correct": correct}
    opening = [{"role": "user", "content": f"q{reward}"}]
    return {
        "step": 0,
        "split": split,
        "group": 0,
        "member": 0,
        "prompt": opening,
        "messages": [*opening, {"role": "assistant", "content": f"a{reward}"}],
        "replies": [f"a{reward}"],
        "reward": reward,
        "metrics": metrics,
        **extra,
    }


RECORDS = [
    _record(1.0, 1.0),
    _record(-0.25, 0.0),
    _record(0.5, None, split="train"),
    {"step": 0, "split": "test", "group": 3, "prompt": [], "error": "ValueError: x"},
    _record(0.75, 1.0, split="train"),
]


def test_correct_keeps_exactly_the_right_answers():
    kept = good_rollouts(RECORDS, correct=True)
    assert [r["reward"] for r in kept] == [1.0, 0.75]


def test_correct_false_keeps_the_wrong_ones_and_drops_episodes_without_the_metric():
    assert [r["reward"] for r in good_rollouts(RECORDS, correct=False)] == [-0.25]


def test_min_reward_and_split_combine():
    assert [r["reward"] for r in good_rollouts(RECORDS, min_reward=0.5)] == [1.0, 0.5, 0.75]
    kept = good_rollouts(RECORDS, min_reward=0.5, split="train")
    assert [r["reward"] for r in kept] == [0.5, 0.75]
    everything = good_rollouts(RECORDS, min_reward=-math.inf)
    assert len(everything) == 4  # the failed group is never kept


def test_a_filter_is_required_and_a_missing_file_named(tmp_path):
    with pytest.raises(ConfigError, match="needs a filter"):
        good_rollouts(RECORDS)
    with pytest.raises(ConfigError, match=r"nope\.jsonl"):
        good_rollouts(tmp_path / "nope.jsonl", correct=True)


def test_a_rollouts_file_is_read(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert [r["reward"] for r in good_rollouts(path, correct=True)] == [1.0, 0.75]


def test_the_datum_trains_only_the_completion():
    datum = supervised_datum(SupervisedExample([1, 2, 3], [4, 5]))
    assert datum.model_input.to_ints() == [1, 2, 3, 4]
    assert datum.loss_fn_inputs["target_tokens"].data == [2, 3, 4, 5]
    assert datum.loss_fn_inputs["weights"].data == [0.0, 0.0, 1.0, 1.0]


def test_an_example_is_the_rendered_prompt_then_the_reply_and_the_stop_token():
    renderer = get_renderer("qwen3", MODEL)
    (example,) = supervised_examples([RECORDS[0]], renderer)
    assert example.prompt == renderer.render_tokens([{"role": "user", "content": "q1.0"}])
    stop = renderer.get_stop_sequences()[0]
    assert example.completion == [
        *renderer.tokenizer.encode("a1.0", add_special_tokens=False),
        stop,
    ]
    # parsing the completion gives the reply back
    assert renderer.parse_response(example.completion)[0]["content"] == "a1.0"


def test_a_record_without_a_reply_gives_no_example():
    record = {"prompt": [{"role": "user", "content": "q"}], "messages": [], "replies": []}
    assert supervised_examples([record], get_renderer("qwen3", MODEL)) == []


class _AddEnv(SingleTurnEnv):
    parser = first_number


def _config(tmp_path: Path, server, **fields) -> Config:
    builder = DatasetBuilder(
        env=_AddEnv,
        problems=[{"question": "What is 1 + 1?", "answer": "2"}],
        batch_size=1,
        group_size=2,
        model_name=MODEL,
        max_generation_tokens=fields.pop("max_tokens", 64),  # the builder owns it
    )
    values = {
        "dataset_builder": builder,
        "model_name": MODEL,
        "log_path": str(tmp_path / "sft"),
        "learning_rate": 2e-3,
        "lora_rank": 4,
        "base_url": server.base_url,
        "backend": "local",
        **fields,
    }
    return Config(**values)


def test_load_checkpoint_path_must_be_a_tinker_path(tmp_path, phase_config):
    with pytest.raises(ConfigError, match="load_checkpoint_path"):
        attrs.evolve(phase_config, load_checkpoint_path="runs/sft")


@pytest.mark.integration
async def test_fine_tuning_lowers_the_loss_and_raises_the_kept_replies_logprob(tmp_path, server):
    import mint
    import tinker

    renderer = get_renderer("qwen3", MODEL)
    kept = good_rollouts([_record(1.0, 1.0), _record(0.75, 1.0), _record(0.0, 0.0)], correct=True)
    examples = supervised_examples(kept, renderer)
    assert len(examples) == 2
    config = _config(tmp_path, server)
    sft = await fine_tune_on_rollouts(config, examples, epochs=4, batch_size=2)
    assert sft.steps == 4 and len(sft.losses) == 4
    assert sft.losses[-1] < sft.losses[0] - 0.1
    assert sft.state_path.startswith("tinker://")
    files = RunFiles(config.log_path)
    assert [m["sft/loss"] for m in files.metrics()] == pytest.approx(sft.losses)
    assert files.last_checkpoint()["name"] == "final"

    service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
    before = service.create_sampling_client(base_model=MODEL)
    after = service.create_sampling_client(model_path=sft.sampler_path)
    for example in examples:
        tokens = tinker.ModelInput.from_ints(example.prompt + example.completion)
        n = len(example.completion)
        old = sum(before.compute_logprobs(tokens).result()[-n:])
        new = sum(after.compute_logprobs(tokens).result()[-n:])
        assert new > old + 0.5

    # the same directory again: nothing trains, the checkpoint comes back
    again = await fine_tune_on_rollouts(config, examples, epochs=4, batch_size=2)
    assert again.state_path == sft.state_path and again.losses == pytest.approx(sft.losses)


@pytest.mark.integration
async def test_an_rl_run_warm_starts_from_the_fine_tuned_weights(tmp_path, server, capsys):
    from mint_envkit.rl import run_training

    renderer = get_renderer("qwen3", MODEL)
    examples = supervised_examples([_record(1.0, 1.0)], renderer)
    sft = await fine_tune_on_rollouts(_config(tmp_path, server), examples, batch_size=1)
    rl = _config(
        tmp_path,
        server,
        log_path=str(tmp_path / "rl"),
        max_steps=1,
        save_every=0,
        max_tokens=4,
        load_checkpoint_path=sft.state_path,
    )
    result = await run_training(rl)
    assert result.steps == 1
    assert f"starting from the weights of {sft.state_path}" in capsys.readouterr().err


async def test_no_examples_is_a_config_error(tmp_path, phase_config):
    with pytest.raises(ConfigError, match="no examples"):
        await fine_tune_on_rollouts(phase_config, [])
    with pytest.raises(ConfigError, match="epochs"):
        await fine_tune_on_rollouts(phase_config, [SupervisedExample([1], [2])], epochs=0)
