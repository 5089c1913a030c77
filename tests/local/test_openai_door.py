"""The OpenAI-compatible door of the server, driven by the ``openai`` client.

Base models and a trained ``tinker://`` sampler checkpoint; the chat template, stop
strings, temperature, ``max_tokens``, usage counts, streaming; 4xx on bad input.
"""

from __future__ import annotations

import asyncio

import openai
import pytest
from mint import types
from server_helpers import SMALL

from mint_envkit.local.http.guard import Guard
from mint_envkit.local.http.requests import ProtocolError
from mint_envkit.rendering import default_renderer_for, get_renderer

MESSAGES = [
    {"role": "system", "content": "You are a precise calculator."},
    {"role": "user", "content": "What is 2 + 3?"},
]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(real_server):
    with openai.OpenAI(base_url=real_server.base_url + "/v1", api_key="sk-test") as c:
        yield c


def _prompt_tokens(messages) -> int:
    renderer = get_renderer(default_renderer_for(SMALL), SMALL)
    return len(renderer.render_tokens(messages, None))


def test_models_lists_the_served_base_models(client):
    assert [m.id for m in client.models.list().data][:1] == [SMALL]


def test_a_base_model_answers_with_its_chat_template_and_usage(client):
    answer = client.chat.completions.create(
        model=SMALL, messages=MESSAGES, max_tokens=6, n=3, seed=1, temperature=0.9
    )
    assert len(answer.choices) == 3
    assert answer.usage.prompt_tokens == _prompt_tokens(MESSAGES)  # rendered as our envs are
    assert answer.usage.completion_tokens <= 3 * 6
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    for choice in answer.choices:
        assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
        assert choice.finish_reason in ("stop", "length")
        assert "<|im_end|>" not in choice.message.content


def test_a_seed_repeats_a_reply_and_logprobs_come_per_token(client):
    ask = {"model": SMALL, "messages": MESSAGES, "max_tokens": 8, "seed": 7, "logprobs": True}
    one, two = client.chat.completions.create(**ask), client.chat.completions.create(**ask)
    assert one.choices[0].message.content == two.choices[0].message.content
    tokens = one.choices[0].logprobs.content
    assert len(tokens) == one.usage.completion_tokens
    assert all(t.logprob <= 0 for t in tokens)


def test_a_stop_string_cuts_the_reply_before_it(client):
    ask = {"model": SMALL, "messages": MESSAGES, "max_tokens": 16, "seed": 3}
    full = client.chat.completions.create(**ask).choices[0]
    text = full.message.content
    if len(text) < 4:
        pytest.fail(f"seed 3 gave a reply too short to cut: {text!r}; pick another seed")
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    cut = client.chat.completions.create(**ask, stop=[stop]).choices[0]
    assert cut.finish_reason == "stop"
    assert cut.message.content == text[: text.index(stop)]


def test_streaming_gives_the_same_reply(client):
    ask = {"model": SMALL, "messages": MESSAGES, "max_tokens": 8, "seed": 5}
    whole = client.chat.completions.create(**ask)
    chunks = list(
        client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True})
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] in ("stop", "length")
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


async def test_a_trained_checkpoint_is_a_model(real_server, service_client, client):
    training = await service_client.create_lora_training_client_async(
        base_model=SMALL, rank=4, seed=0, train_unembed=True
    )
    tokenizer = await asyncio.to_thread(training.get_tokenizer)
    prompt, reply = tokenizer.encode("What is 2 + 3?"), tokenizer.encode(" 5")
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(prompt + reply[:-1]),
        loss_fn_inputs={"target_tokens": prompt[1:] + reply},
    )
    await (await training.forward_backward_async([datum], "cross_entropy")).result_async()
    await (await training.optim_step_async(types.AdamParams(learning_rate=0.05))).result_async()
    path = (await (await training.save_weights_for_sampler_async("door")).result_async()).path
    assert path in [m.id for m in client.models.list().data]
    ask = {"messages": MESSAGES, "max_tokens": 8, "seed": 11, "logprobs": True}
    tuned = client.chat.completions.create(model=path, **ask)
    base = client.chat.completions.create(model=SMALL, **ask)
    assert tuned.model == path and tuned.usage.prompt_tokens == base.usage.prompt_tokens
    lps = [[t.logprob for t in a.choices[0].logprobs.content] for a in (tuned, base)]
    assert lps[0] != lps[1]  # the update changed what is sampled, or how likely it is


@pytest.mark.parametrize(
    ("change", "error", "says"),
    [
        ({"messages": []}, openai.BadRequestError, "non-empty list"),
        (
            {"tools": [{"type": "function", "function": {"name": "f"}}]},
            openai.BadRequestError,
            "tool calling",
        ),
        ({"temperature": 3.0}, openai.BadRequestError, "temperature must be from 0 to 2"),
        ({"n": 0}, openai.BadRequestError, "n must be from 1"),
        ({"max_tokens": 0}, openai.BadRequestError, "max_tokens must be at least 1"),
        ({"stop": ["a", "b", "c", "d", "e"]}, openai.BadRequestError, "at most 4"),
        ({"model": "nope/model"}, openai.NotFoundError, "unknown base model"),
        ({"model": "tinker://nope"}, openai.APIStatusError, "tinker://"),
        ({"max_tokens": 10**7}, openai.APIStatusError, "max"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, openai.BadRequestError, "role"),
    ],
)
def test_bad_input_is_a_4xx_that_names_it(client, change, error, says):
    ask = {"model": SMALL, "messages": MESSAGES, "max_tokens": 4, **change}
    with pytest.raises(error) as caught:
        client.with_options(max_retries=0).chat.completions.create(**ask)
    assert 400 <= caught.value.status_code < 500
    assert says in str(caught.value)


def test_an_unknown_door_path_is_a_404(client):
    with pytest.raises(openai.NotFoundError):
        client.with_options(max_retries=0).completions.create(model=SMALL, prompt="hi")


def test_the_key_may_come_as_a_bearer_token():
    guard = Guard(api_key="sk-k")
    guard.check("GET", {"authorization": "Bearer sk-k"}, route="openai_models", body=False)
    with pytest.raises(ProtocolError) as caught:
        guard.check("GET", {"authorization": "Bearer sk-x"}, route="openai_models", body=False)
    assert caught.value.status == 401


async def test_the_door_samples_what_asample_samples_for_a_seed(client, service_client):
    """Temperature 1, one seed: the door's reply is the SDK's sample of the same prompt."""
    renderer = get_renderer(default_renderer_for(SMALL), SMALL)
    prompt = renderer.render_tokens(MESSAGES, None)
    stop = renderer.get_stop_sequences()
    sampler = await service_client.create_sampling_client_async(base_model=SMALL)
    params = types.SamplingParams(max_tokens=12, temperature=1.0, seed=21, stop=stop)
    sampled = await sampler.sample_async(types.ModelInput.from_ints(prompt), 1, params)
    tokens = list(sampled.sequences[0].tokens)
    ask = {"model": SMALL, "messages": MESSAGES, "max_tokens": 12, "seed": 21, "logprobs": True}
    answer = client.chat.completions.create(**ask)
    shown = tokens[:-1] if tokens and tokens[-1] in stop else tokens
    assert answer.choices[0].message.content == renderer.tokenizer.decode(
        shown, skip_special_tokens=True
    )
    assert [t.logprob for t in answer.choices[0].logprobs.content] == pytest.approx(
        list(sampled.sequences[0].logprobs)
    )
