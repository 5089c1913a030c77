"""Renderers: chat messages to model tokens and back.

A :class:`Renderer` renders a conversation with the model's own chat template
(``apply_chat_template`` with the generation prompt added), names the stop
tokens, and parses sampled tokens back into an assistant message with the
thinking kept apart from the content.

Example::

    from mint_envkit import get_renderer, get_tokenizer

    renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
    prompt = renderer.build_generation_prompt([{"role": "user", "content": "2 + 3?"}])
    message, ok = renderer.parse_response(sampled_tokens)
    # message == {"role": "assistant", "content": "5", "thinking": "..."}; ok: stop token seen
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mint_envkit.envs.base import Message
from mint_envkit.errors import RendererError

if TYPE_CHECKING:
    import tinker
    from transformers import PreTrainedTokenizerBase

__all__ = ["RENDERERS", "Renderer", "get_renderer"]

RENDERERS: dict[str, dict[str, Any]] = {
    "qwen3": {"enable_thinking": True},
    "qwen3_disable_thinking": {"enable_thinking": False},
    "chat_template": {},
}
"""The renderer names :func:`get_renderer` knows, with their template options."""

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


def _message_key(messages: Sequence[Message]) -> tuple:
    return tuple(
        (m.get("role"), m.get("content"), m.get("thinking"), m.get("reasoning_content"))
        for m in messages
    )


class Renderer:
    """Renders messages with a tokenizer's chat template; parses replies back.

    Build one with :func:`get_renderer`. Rendering the same conversation twice
    reuses the first result (a group's envs share one prompt).

    Attributes:
        name: the renderer name (``"qwen3"``...).
        tokenizer: the Hugging Face tokenizer.
        enable_thinking: passed to the chat template.

    Example::

        renderer = get_renderer("qwen3_disable_thinking", tokenizer)
        renderer.render_tokens([{"role": "user", "content": "Hi"}])  # list[int]
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, *, name: str, enable_thinking: bool
    ) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise RendererError(
                f"tokenizer {getattr(tokenizer, 'name_or_path', tokenizer)!r} has no chat "
                "template; use an instruct/chat model's tokenizer"
            )
        self.name = name
        self.tokenizer = tokenizer
        self.enable_thinking = enable_thinking
        self._stop_token = self._find_stop_token()
        self._render_cached = functools.lru_cache(maxsize=4096)(self._render_uncached)

    def _find_stop_token(self) -> int:
        vocab = self.tokenizer.get_vocab()
        if "<|im_end|>" in vocab:
            return int(vocab["<|im_end|>"])
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise RendererError(
                f"tokenizer {getattr(self.tokenizer, 'name_or_path', '?')!r} has neither "
                "<|im_end|> nor an eos token, so replies could never end"
            )
        return int(eos)

    def _render_uncached(self, key: tuple) -> tuple[int, ...]:
        messages = []
        for role, content, thinking, reasoning in key:
            message: dict[str, Any] = {"role": role, "content": content}
            if thinking is not None:
                message["thinking"] = thinking
            if reasoning is not None:
                message["reasoning_content"] = reasoning
            messages.append(message)
        text = self.tokenizer.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=self.enable_thinking,
        )
        return tuple(self.tokenizer.encode(text, add_special_tokens=False))

    def render_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt tokens for ``messages``, generation prompt included.

        Raises:
            RendererError: a message is not a dict with a string ``role`` and
                string ``content``.
        """
        for index, message in enumerate(messages):
            if (
                not isinstance(message, dict)
                or not isinstance(message.get("role"), str)
                or not isinstance(message.get("content"), str)
            ):
                raise RendererError(
                    f"message {index} must be a dict with string 'role' and 'content', "
                    f"got {message!r}"
                )
        if not messages:
            raise RendererError("cannot render an empty conversation; give at least one message")
        return list(self._render_cached(_message_key(messages)))

    def build_generation_prompt(self, messages: Sequence[Message]) -> tinker.ModelInput:
        """The prompt as a ``tinker.ModelInput``, ready to sample from.

        Example::

            model_input = renderer.build_generation_prompt(messages)
            await sampling_client.sample_async(prompt=model_input, num_samples=4, ...)
        """
        import tinker

        return tinker.ModelInput.from_ints(self.render_tokens(messages))

    def get_stop_sequences(self) -> list[int]:
        """The stop token ids (``<|im_end|>`` for Qwen-style templates)."""
        return [self._stop_token]

    def parse_response(self, tokens: Sequence[int]) -> tuple[Message, bool]:
        """Turn sampled tokens into an assistant message.

        Returns ``(message, ok)``: ``ok`` is False when the stop token is
        missing (the reply never ended). The message's ``content`` has complete
        ``<think>...</think>`` blocks removed; their text is in ``thinking``.
        An unclosed ``<think>`` stays in the content, so parsers report it as
        ``unclosed_think``.

        Example::

            renderer.parse_response(tokenizer.encode("<think>hmm</think>5<|im_end|>"))
            # ({'role': 'assistant', 'content': '5', 'thinking': 'hmm'}, True)
        """
        tokens = list(tokens)
        ok = self._stop_token in tokens
        if ok:
            tokens = tokens[: tokens.index(self._stop_token)]
        text = self.tokenizer.decode(tokens, skip_special_tokens=False)
        message: Message = {"role": "assistant", "content": text}
        close = text.rfind(_THINK_CLOSE)
        if close != -1:
            thinking = text[:close]
            if thinking.lstrip().startswith(_THINK_OPEN):
                thinking = thinking.lstrip()[len(_THINK_OPEN) :]
            message["thinking"] = thinking.strip()
            message["content"] = text[close + len(_THINK_CLOSE) :].strip()
        else:
            message["content"] = text.strip()
        return message, ok

    def __repr__(self) -> str:
        return f"Renderer(name={self.name!r}, tokenizer={getattr(self.tokenizer, 'name_or_path', '?')!r})"


def get_renderer(name: str, tokenizer: PreTrainedTokenizerBase) -> Renderer:
    """Return the renderer called ``name`` for ``tokenizer``.

    Known names: ``"qwen3"`` (thinking on), ``"qwen3_disable_thinking"``
    (the generation prompt pre-fills an empty think block) and
    ``"chat_template"`` (any tokenizer's own template, stop tokens read from it;
    see :mod:`mint_envkit.rendering.chat_template`).

    Raises:
        RendererError: the name is unknown (the message lists the known
            ones), or the tokenizer has no chat template.

    Example::

        renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
    """
    options = RENDERERS.get(name)
    if options is None:
        raise RendererError(
            f"unknown renderer {name!r}; known renderers: {', '.join(sorted(RENDERERS))}"
        )
    if name == "chat_template":
        from mint_envkit.rendering.chat_template import ChatTemplateRenderer

        return ChatTemplateRenderer(tokenizer)
    return Renderer(tokenizer, name=name, **options)
