"""``mint-envkit check`` says which renderer and template produced each prompt, and the tools."""

from __future__ import annotations

import json

from mint_envkit.cli import main

CONVERT = "tests.rendering.test_tools_without_slot:ConvertEnv"
PROBLEM = json.dumps({"question": "How many metres is 3 km?", "answer": "3000"})
CALL = '<tool_call>\n{"name": "convert", "arguments": {"value": 3, "unit": "km"}}\n</tool_call>'


def _chatml_dir(chatml_tokenizer, tmp_path):
    chatml_tokenizer.save_pretrained(tmp_path / "smol")
    return str(tmp_path / "smol")


def test_qwen3_over_a_chatml_template_is_labelled_as_such(chatml_tokenizer, tmp_path, capsys):
    model = _chatml_dir(chatml_tokenizer, tmp_path)
    argv = ["check", CONVERT, "--problem", PROBLEM, "--model", model, "--groups", "1"]
    argv += ["--reply", json.dumps([CALL, "3000"]), "--renderer", "qwen3"]
    argv += ["--renderer", "chat_template"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    qwen3, chat_template = out.split("--- group 0\n")[1:]
    label = "qwen3 over the chat template of 'smol', not a Qwen3 template"
    assert f"prefix check [{label}] env 0: ok" in qwen3
    assert f"(note: renderer {label}; the prompt above is that template's text)" in qwen3
    assert "prefix check [chat_template] env 0: ok" in chat_template
    assert "note: renderer" not in chat_template
    for part in (qwen3, chat_template):
        assert "tools visible in the prompt: convert" in part
        assert "the template has no tools slot: the renderer writes tools" in part


def test_an_env_class_checked_on_a_model_gets_that_models_renderer(
    chatml_tokenizer, tmp_path, capsys
):
    model = _chatml_dir(chatml_tokenizer, tmp_path)
    argv = ["check", CONVERT, "--problem", PROBLEM, "--model", model, "--reply", "3000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(rendered by renderer 'chat_template' with the chat template of" in out
    assert "not a Qwen3 template" not in out


def test_the_tiny_qwen3_model_keeps_the_plain_qwen3_label(capsys):
    argv = ["check", CONVERT, "--problem", PROBLEM, "--groups", "1"]
    argv += ["--reply", json.dumps([CALL, "3000"])]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "prefix check [qwen3] env 0: ok" in out
    assert "tools go to the template's tools slot" in out
    assert "tools visible in the prompt: convert" in out
