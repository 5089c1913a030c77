"""The one evaluation through an OpenAI-compatible server: our own door, a base model and a
trained checkpoint; retries, failures and token usage in the report."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from mint_envkit import evaluate
from mint_envkit.cli import main
from mint_envkit.errors import BackendError, ConfigError
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import BackendSettings, OpenAIEndpoint, SamplingSettings
from shared_envs import ArithmeticEnv

PROBLEMS = [{"question": f"What is {a} + {a}?", "answer": str(2 * a)} for a in range(1, 5)]
GREEDY = SamplingSettings(temperature=1e-3, max_tokens=6)
EXAMPLE = f"{Path(__file__).resolve().parents[2] / 'examples' / 'arithmetic_env.py'}:ArithmeticEnv"


def _door(server, model=TINY_MODEL_NAME, **kwargs):
    return OpenAIEndpoint(base_url=server.base_url + "/v1", model=model, **kwargs)


def _replies(result):
    return [[t.messages[-1]["content"] for t in r.trajectories] for r in result.rollouts]


async def _tinker(server, **kwargs):
    return await evaluate(
        ArithmeticEnv,
        problems=PROBLEMS,
        model_name=TINY_MODEL_NAME,
        samples=2,
        sampling=GREEDY,
        backend=BackendSettings(backend="local", base_url=server.base_url),
        **kwargs,
    )


@pytest.mark.integration
async def test_the_door_scores_what_the_tinker_path_scores(tiny_local_server):
    """Greedy replies are the same through the door and through the SDK, so every score is."""
    door = _door(tiny_local_server)
    through_door = await evaluate(
        ArithmeticEnv,
        client=door,
        problems=PROBLEMS,
        model_name=TINY_MODEL_NAME,
        samples=2,
        sampling=GREEDY,
    )
    through_sdk = await _tinker(tiny_local_server)
    assert _replies(through_door) == _replies(through_sdk)
    assert [r.rewards for r in through_door.rollouts] == [r.rewards for r in through_sdk.rollouts]
    summary = through_door.summary
    assert summary["model"] == TINY_MODEL_NAME and summary["backend"].startswith("openai (")
    assert summary["usage"]["requests"] == 8 and summary["usage"]["failed"] == 0
    assert summary["usage"]["completion_tokens"] > 0 and summary["usage"]["prompt_tokens"] > 0


@pytest.mark.integration
async def test_a_trained_checkpoint_through_the_door(tiny_local_server):
    import mint
    from mint import types

    service = mint.ServiceClient(base_url=tiny_local_server.base_url, api_key="sk-test")
    training = service.create_lora_training_client(base_model=TINY_MODEL_NAME, rank=4, seed=1)
    tokens = training.get_tokenizer().encode("What is 1 + 1? 2")
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:]},
    )
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=0.05)).result()
    path = training.save_weights_for_sampler("eval-door").result().path
    service.holder.close()
    through_door = await evaluate(
        ArithmeticEnv,
        client=_door(tiny_local_server, path),
        problems=PROBLEMS,
        model_name=TINY_MODEL_NAME,
        samples=2,
        sampling=GREEDY,
    )
    through_sdk = await _tinker(tiny_local_server, checkpoint=path)
    assert _replies(through_door) == _replies(through_sdk)
    assert through_door.summary["model"] == path


def _answer(content, finish="stop"):
    return {
        "choices": [
            {"message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


async def test_transient_failures_are_retried_and_counted():
    calls = []

    def handler(request):
        body = json.loads(request.content)
        calls.append(body)
        if sum(c["seed"] == body["seed"] for c in calls) == 1:  # each request fails once
            return httpx.Response(429, json={"error": {"message": "slow down"}})
        return httpx.Response(200, json=_answer("4"))

    door = OpenAIEndpoint(
        base_url="http://api.test/v1",
        model="m",
        max_retries=1,
        transport=httpx.MockTransport(handler),
    )
    result = await evaluate(
        ArithmeticEnv,
        client=door,
        problems=PROBLEMS[1:2],
        model_name=TINY_MODEL_NAME,
        samples=2,
        sampling=GREEDY,
    )
    assert result.rollouts[0].rewards == [1.0, 1.0]
    assert result.summary["usage"] | {"base_url": None} == {
        "base_url": None,
        "model": "m",
        "requests": 4,
        "retries": 2,
        "failed": 0,
        "prompt_tokens": 20,
        "completion_tokens": 4,
    }
    assert len({c["seed"] for c in calls}) == 2  # a seed per env
    assert all(c["max_tokens"] == 6 and c["model"] == "m" for c in calls)


async def test_a_cut_reply_is_truncated_and_a_refusal_is_a_backend_error():
    door = OpenAIEndpoint(
        base_url="http://api.test/v1",
        model="m",
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json=_answer("4 4", "length"))),
    )
    result = await evaluate(
        ArithmeticEnv,
        client=door,
        problems=PROBLEMS[1:2],
        model_name=TINY_MODEL_NAME,
        samples=1,
        sampling=GREEDY,
    )
    assert result.truncated_rate == 1.0
    refused = OpenAIEndpoint(
        base_url="http://api.test/v1",
        model="m",
        max_retries=3,
        transport=httpx.MockTransport(lambda r: httpx.Response(401, text="bad key")),
    )
    with pytest.raises(BackendError, match="HTTP 401: bad key"):
        await refused.chat({"model": "m", "messages": []})
    assert refused.usage()["requests"] == 1 and refused.usage()["failed"] == 1  # no retry


def test_bad_endpoint_settings_name_the_fix():
    with pytest.raises(ConfigError, match="http:// or https://"):
        OpenAIEndpoint(base_url="localhost:8000", model="m")
    with pytest.raises(ConfigError, match="max_concurrent must be an integer >= 1"):
        OpenAIEndpoint(base_url="http://x/v1", model="m", max_concurrent=0)


@pytest.mark.integration
def test_the_eval_command_takes_an_openai_server(tmp_path, tiny_local_server, capsys):
    url = tiny_local_server.base_url + "/v1"
    args = [
        "eval",
        EXAMPLE,
        "--problem",
        json.dumps(PROBLEMS[0]),
        "--samples",
        "2",
        "--max-tokens",
        "6",
        "--out",
        str(tmp_path / "ev"),
        "--no-report",
        "--openai-base-url",
        url,
        "--model",
        TINY_MODEL_NAME,
        "--openai-concurrency",
        "2",
        "--tokenizer",
        TINY_MODEL_NAME,
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"openai ({url}) backend" in out and "usage: 2 requests (0 retried, 0 failed)" in out
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["usage"]["requests"] == 2


def test_the_eval_command_refuses_a_checkpoint_beside_an_openai_server(tmp_path, capsys):
    args = [
        "eval",
        EXAMPLE,
        "--problem",
        json.dumps(PROBLEMS[0]),
        "--out",
        str(tmp_path),
        "--openai-base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--compare",
    ]
    assert main(args) == 2
    assert "--checkpoint and --compare are for Tinker backends" in capsys.readouterr().err
    assert main([*args[:-3], "--compare"]) == 2
    assert "--openai-base-url needs --model" in capsys.readouterr().err
