"""Renderers: messages to tokens with the chat template, sampled tokens back to messages."""

from __future__ import annotations

import pytest
import tinker

from mint_envkit import Renderer, RendererError, get_renderer
from mint_envkit.rendering import TINY_MODEL_NAME, get_tokenizer
from mint_envkit.rendering.renderer import RENDERERS

IM_END = 2045


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(TINY_MODEL_NAME)


@pytest.fixture(scope="module")
def renderer(tok):
    return get_renderer("qwen3", tok)


def encode(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


MESSAGES = [
    {"role": "system", "content": "Reply with a number."},
    {"role": "user", "content": "What is 2 + 3?"},
]


@pytest.mark.parametrize("name", ["qwen3", "qwen3_disable_thinking"])
def test_known_names(tok, name):
    renderer = get_renderer(name, tok)
    assert isinstance(renderer, Renderer)
    assert renderer.name == name
    assert renderer.enable_thinking is (name == "qwen3")
    assert name in RENDERERS
    assert name in repr(renderer)


def test_unknown_name_lists_the_known_ones(tok):
    with pytest.raises(RendererError, match="unknown renderer 'llama3'") as info:
        get_renderer("llama3", tok)
    for name in RENDERERS:
        assert name in str(info.value)


def test_a_model_name_gives_one_shared_renderer(tok):
    shared = get_renderer("qwen3", TINY_MODEL_NAME)
    assert shared is get_renderer("qwen3", TINY_MODEL_NAME)
    assert shared is not get_renderer("qwen3_disable_thinking", TINY_MODEL_NAME)
    assert shared.tokenizer is tok  # get_tokenizer's own cache
    assert get_renderer("qwen3", tok) is not get_renderer("qwen3", tok)  # a tokenizer: fresh


def test_unknown_name_is_refused_before_loading_a_tokenizer():
    with pytest.raises(RendererError, match="unknown renderer 'llama3'"):
        get_renderer("llama3", "/no/such/tokenizer")


def test_tokenizer_without_chat_template_is_refused(tok):
    class NoTemplate:
        chat_template = None
        name_or_path = "plain-tokenizer"

    with pytest.raises(RendererError, match="no chat template"):
        get_renderer("qwen3", NoTemplate())


def test_render_uses_the_chat_template_with_generation_prompt(renderer, tok):
    tokens = renderer.render_tokens(MESSAGES)
    assert tok.decode(tokens) == (
        "<|im_start|>system\nReply with a number.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_render_without_thinking_prefills_empty_think(tok):
    tokens = get_renderer("qwen3_disable_thinking", tok).render_tokens(MESSAGES)
    assert tok.decode(tokens).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_build_generation_prompt_is_a_model_input(renderer):
    prompt = renderer.build_generation_prompt(MESSAGES)
    assert isinstance(prompt, tinker.ModelInput)
    assert prompt.to_ints() == renderer.render_tokens(MESSAGES)


def test_stop_sequences_are_im_end(renderer):
    assert renderer.get_stop_sequences() == [IM_END]


def test_render_cache_gives_the_same_tokens_and_is_not_aliased(renderer):
    first = renderer.render_tokens(MESSAGES)
    first.append(999)  # the caller owns its list
    again = renderer.render_tokens([dict(m) for m in MESSAGES])
    assert again == first[:-1]
    assert 999 not in again
    other = renderer.render_tokens([MESSAGES[0], {"role": "user", "content": "What is 2 + 4?"}])
    assert other != again


def test_render_cache_distinguishes_thinking(renderer):
    base = [*MESSAGES, {"role": "assistant", "content": "5"}]
    with_thinking = [*MESSAGES, {"role": "assistant", "content": "5", "thinking": "2+3"}]
    assert renderer.render_tokens(base) != renderer.render_tokens(with_thinking)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user"}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": 5}],
        [{"content": "hi"}],
        ["just a string"],
        [{"role": "user", "content": "ok"}, {"role": 1, "content": "bad"}],
    ],
)
def test_bad_messages_are_renderer_errors(renderer, messages):
    with pytest.raises(RendererError):
        renderer.render_tokens(messages)


def test_bad_message_error_names_its_index(renderer):
    with pytest.raises(RendererError, match="message 1"):
        renderer.render_tokens([{"role": "user", "content": "ok"}, {"role": "user"}])


def test_parse_response_with_stop_token(renderer, tok):
    message, ok = renderer.parse_response([*encode(tok, "5"), IM_END])
    assert ok is True
    assert message == {"role": "assistant", "content": "5"}


def test_parse_response_ignores_tokens_after_the_stop_token(renderer, tok):
    message, ok = renderer.parse_response([*encode(tok, " 5 "), IM_END, *encode(tok, "junk")])
    assert ok and message["content"] == "5"


def test_parse_response_without_stop_token_is_a_parse_failure(renderer, tok):
    message, ok = renderer.parse_response(encode(tok, "5 and more"))
    assert ok is False
    assert message["content"] == "5 and more"


def test_parse_response_of_nothing(renderer):
    assert renderer.parse_response([]) == ({"role": "assistant", "content": ""}, False)
    assert renderer.parse_response([IM_END]) == ({"role": "assistant", "content": ""}, True)


def test_parse_response_splits_thinking(renderer, tok):
    tokens = [*encode(tok, "<think>\nadd 2 and 3\n</think>\n\n5"), IM_END]
    message, ok = renderer.parse_response(tokens)
    assert ok
    assert message == {"role": "assistant", "content": "5", "thinking": "add 2 and 3"}


def test_parse_response_empty_think_block_of_disabled_thinking(renderer, tok):
    message, ok = renderer.parse_response([*encode(tok, "<think>\n\n</think>\n\n7"), IM_END])
    assert ok and message["content"] == "7" and message["thinking"] == ""


def test_unclosed_think_is_kept_in_the_content(renderer, tok):
    message, ok = renderer.parse_response([*encode(tok, "<think>maybe 5"), IM_END])
    assert ok
    assert message["content"] == "<think>maybe 5"
    assert "thinking" not in message


def test_stray_close_tag_counts_what_precedes_as_thinking(renderer, tok):
    # Qwen3's generation prompt can open the think block itself, so a reply may start
    # inside it: everything before the last </think> is thinking, the rest content.
    message, ok = renderer.parse_response([*encode(tok, "2 + 3 is 5</think>\n\n5"), IM_END])
    assert ok
    assert message == {"role": "assistant", "content": "5", "thinking": "2 + 3 is 5"}


def test_parse_then_render_round_trip(renderer, tok):
    message, _ = renderer.parse_response([*encode(tok, "<think>hm</think>5"), IM_END])
    tokens = renderer.render_tokens([*MESSAGES, message, {"role": "user", "content": "And 3 + 4?"}])
    text = tok.decode(tokens)
    assert "<|im_start|>assistant\n5<|im_end|>" in text  # earlier thinking dropped
    assert text.endswith("<|im_start|>user\nAnd 3 + 4?<|im_end|>\n<|im_start|>assistant\n")
