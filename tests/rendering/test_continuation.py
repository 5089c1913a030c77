"""Token-faithful multi-turn: every observation extends the previous one token for token."""

from __future__ import annotations

import copy

import pytest

from mint_envkit import EnvError, Feedback, MultiTurnEnv, Renderer, RendererError, get_renderer
from mint_envkit.rendering import TINY_MODEL_NAME, EnvFromMessageEnv, get_tokenizer


class ThinkingGuessEnv(MultiTurnEnv):
    """Four turns; each feedback is a user message, so Qwen3 would drop earlier thinking."""

    max_turns = 4

    async def respond(self, message):
        if self.turns == 4:
            return Feedback(reward=1.0, done=True)
        return Feedback(reply=f"Not yet ({self.turns}).")


class RewritingEnv(MultiTurnEnv):
    """Drops the first user message from the conversation: not allowed at token level."""

    async def respond(self, message):
        del self.conversation[0]
        return Feedback(reply="again")


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(TINY_MODEL_NAME)


def reply(renderer, text):
    tokens = renderer.tokenizer.encode(text, add_special_tokens=False)
    return [*tokens, *renderer.get_stop_sequences()]


@pytest.mark.parametrize("name", ["qwen3", "qwen3_disable_thinking"])
async def test_every_observation_extends_the_previous_and_its_sampled_tokens(tok, name):
    renderer = get_renderer(name, tok)
    assert renderer.supports_continuation
    env = EnvFromMessageEnv(renderer, ThinkingGuessEnv(question="Guess."))
    observation, _ = await env.initial_observation()
    ob = observation.to_ints()
    for turn in range(4):
        sampled = reply(renderer, f"<think>turn {turn} thoughts</think>{turn}")
        result = await env.step(sampled, extra={"stop_reason": "stop"})
        if result.episode_done:
            break
        nxt = result.next_observation.to_ints()
        assert nxt[: len(ob) + len(sampled)] == [*ob, *sampled]
        text = tok.decode(nxt[len(ob) + len(sampled) :])
        assert text.startswith(f"\n<|im_start|>user\nNot yet ({turn + 1}).<|im_end|>\n")
        ob = nxt
    assert result.episode_done and result.reward == 1.0
    # All four think blocks are still in the last observation; a re-render drops them.
    assert tok.decode(ob).count("<think>") >= 3
    rerendered = tok.decode(renderer.render_tokens(env.messages))
    assert rerendered.count("turn 0 thoughts") == 0


async def test_a_reply_without_the_stop_token_gets_one_before_the_new_messages(tok):
    renderer = get_renderer("qwen3", tok)
    env = EnvFromMessageEnv(renderer, ThinkingGuessEnv(question="Guess."), score_truncated=True)
    ob = (await env.initial_observation())[0].to_ints()
    sampled = tok.encode("1", add_special_tokens=False)
    result = await env.step(sampled, extra={"stop_reason": "length"})
    nxt = result.next_observation.to_ints()
    stop = renderer.get_stop_sequences()
    assert nxt[: len(ob) + len(sampled) + 1] == [*ob, *sampled, *stop]


async def test_an_env_that_rewrites_history_is_an_error(tok):
    env = EnvFromMessageEnv(get_renderer("qwen3", tok), RewritingEnv(question="Q"))
    await env.initial_observation()
    with pytest.raises(EnvError, match="do not extend the conversation"):
        await env.step(reply(env.renderer, "1"), extra={"stop_reason": "stop"})


def test_a_template_that_cannot_continue_is_refused_up_front(tok):
    broken = copy.deepcopy(tok)
    # Assistant turns end with <|endoftext|>, not the stop token <|im_end|>.
    broken.chat_template = (
        "{%- for m in messages -%}{{- m['role'] + ': ' + m['content'] + '<|endoftext|>' -}}"
        "{%- endfor -%}{%- if add_generation_prompt -%}assistant: {%- endif -%}"
    )
    renderer = Renderer(broken, name="broken", enable_thinking=True)
    assert not renderer.supports_continuation
    assert "stop token" in renderer.continuation_error()
    with pytest.raises(RendererError, match="cannot render new messages"):
        EnvFromMessageEnv(renderer, ThinkingGuessEnv(question="Q"))
    with pytest.raises(RendererError):
        renderer.render_continuation([{"role": "user", "content": "x"}])


@pytest.mark.parametrize("name", ["qwen3", "qwen3_disable_thinking"])
def test_continuation_of_tool_results_is_what_the_template_writes_after_the_turn(tok, name):
    renderer = get_renderer(name, tok)
    tools = [{"role": "tool", "content": "5"}, {"role": "tool", "content": "7"}]
    text = tok.decode(renderer.render_continuation(tools))
    prompt = "<|im_start|>assistant\n" + ("" if name == "qwen3" else "<think>\n\n</think>\n\n")
    assert text == (
        "\n<|im_start|>user\n<tool_response>\n5\n</tool_response>\n"
        "<tool_response>\n7\n</tool_response><|im_end|>\n" + prompt
    )
    # The same text a full render puts after the assistant turn.
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    full = tok.decode(renderer.render_tokens([*history, *tools]))
    assert full.endswith("a<|im_end|>" + text)
