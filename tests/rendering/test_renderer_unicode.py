"""A lone surrogate in a problem is named where it is (issue 46: it failed its group with an
unexplained ``TypeError: TextEncodeInput must be ...`` from the tokenizer)."""

from __future__ import annotations

import json

import pytest

from mint_envkit import RendererError, get_renderer
from mint_envkit.cli import main
from mint_envkit.rendering import TINY_MODEL_NAME, get_tokenizer


@pytest.mark.parametrize("name", ["qwen3", "chat_template"])
def test_a_lone_surrogate_is_named_with_its_message_and_place(name: str):
    renderer = get_renderer(name, get_tokenizer(TINY_MODEL_NAME))
    messages = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "What is 2 + 3?\ud800 and é"},
    ]
    with pytest.raises(
        RendererError, match=r"message 1 \(user\) holds a lone surrogate '\\ud800' at char 14"
    ):
        renderer.render_tokens(messages)
    fixed = [m | {"content": m["content"].encode("utf-8", "replace").decode()} for m in messages]
    assert renderer.render_tokens(fixed)  # the fix the message gives renders


def test_check_names_the_surrogate_in_the_problem(capsys):
    problem = json.dumps({"question": "What is 2 + 3?\ud800", "answer": "5"})
    code = main(["check", "examples/arithmetic_env.py:ArithmeticEnv", "--problem", problem])
    out = capsys.readouterr().out
    assert code == 1 and "holds a lone surrogate '\\ud800'" in out
    assert "TextEncodeInput" not in out
