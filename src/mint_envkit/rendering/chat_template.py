"""A renderer built from any tokenizer's own chat template (ChatML, Llama 3, Gemma, ...).

:class:`ChatTemplateRenderer` renders with ``apply_chat_template`` (generation
prompt added) and finds its stop tokens from the template itself: it renders a
short conversation that ends with an assistant reply and takes the first
special token the template writes after the reply (``<|im_end|>`` for ChatML,
``<|eot_id|>`` for Llama 3, ``<end_of_turn>`` for Gemma), plus the tokenizer's
eos token. Sampled tokens are parsed back into an assistant message, with a
``<think>...</think>`` block moved to ``thinking`` as the ``qwen3`` renderer does.

:func:`default_renderer_for` picks a renderer name for a model: ``"qwen3"`` for
the built-in tiny models and Qwen3 models, ``"chat_template"`` for any other.

Example::

    # not run: `sampled_tokens` is a sampled reply's tokens, built elsewhere
    from mint_envkit.rendering import get_renderer, get_tokenizer

    renderer = get_renderer("chat_template", get_tokenizer("mint-envkit/smollm2-135m-instruct"))
    renderer.get_stop_sequences()  # [2]  (<|im_end|>)
    tokens = renderer.render_tokens([{"role": "user", "content": "What is 2 + 3?"}])
    message, ok = renderer.parse_response(sampled_tokens)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mint_envkit.envs.base import Message
from mint_envkit.errors import RendererError
from mint_envkit.rendering.renderer import Renderer
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAMES

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

CHAT_TEMPLATE_RENDERER = "chat_template"
"""The renderer name of :class:`ChatTemplateRenderer`."""

_PROBE_REPLY = "Zq7 probe reply Zq7"


def default_renderer_for(model_name: str) -> str:
    """The renderer name that fits a model: ``"qwen3"`` for Qwen3 ones, else ``"chat_template"``.

    The built-in tiny models use a Qwen3 template; a model whose name (or
    directory) contains ``qwen3`` does too. Any other model is rendered with its
    own chat template.

    Example::

        default_renderer_for("mint-envkit/tiny-qwen3")             # 'qwen3'
        default_renderer_for("Qwen/Qwen3-0.6B")                    # 'qwen3'
        default_renderer_for("mint-envkit/smollm2-135m-instruct")  # 'chat_template'
    """
    if model_name in TINY_MODEL_NAMES or "qwen3" in str(model_name).lower():
        return "qwen3"
    return CHAT_TEMPLATE_RENDERER


class ChatTemplateRenderer(Renderer):
    """Renders with the tokenizer's own chat template; stop tokens read from the template.

    Build one with ``get_renderer("chat_template", tokenizer)``.

    Raises:
        RendererError: the tokenizer has no chat template, or the template ends
            an assistant turn with no special token and the tokenizer has no eos
            token (replies could never end).

    Example::

        # not run: `tokenizer` is a tokenizer, built elsewhere
        renderer = ChatTemplateRenderer(tokenizer)
        renderer.get_stop_sequences()  # [128009, 128001] for a Llama 3 instruct tokenizer
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        super().__init__(tokenizer, name=CHAT_TEMPLATE_RENDERER, enable_thinking=True)
        self._stops = self._template_stop_tokens()

    def _template_stop_tokens(self) -> list[int]:
        tok = self.tokenizer
        stops: list[int] = []
        try:
            text = tok.apply_chat_template(
                [
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": _PROBE_REPLY},
                ],
                tokenize=False,
            )
        except Exception as err:
            raise RendererError(
                f"the chat template of {getattr(tok, 'name_or_path', '?')!r} cannot render an "
                f"assistant reply ({type(err).__name__}: {err}); use a chat model's tokenizer"
            ) from err
        at = text.rfind(_PROBE_REPLY)
        if at != -1:
            special = set(tok.all_special_ids) | {
                i for i, t in tok.added_tokens_decoder.items() if getattr(t, "special", False)
            }
            after = tok.encode(text[at + len(_PROBE_REPLY) :], add_special_tokens=False)
            stops.extend(int(i) for i in after[:3] if i in special)
            stops = stops[:1]
        eos = tok.eos_token_id
        if eos is not None and int(eos) not in stops:
            stops.append(int(eos))
        if not stops:
            raise RendererError(
                f"the chat template of {getattr(tok, 'name_or_path', '?')!r} ends an assistant "
                "turn with no special token and the tokenizer has no eos token, so replies "
                "could never end; set tokenizer.eos_token"
            )
        return stops

    def get_stop_sequences(self) -> list[int]:
        """The stop token ids: the template's end-of-turn token, then the eos token."""
        return list(self._stops)

    def parse_response(self, tokens: Sequence[int]) -> tuple[Message, bool]:
        """Turn sampled tokens into an assistant message; ``ok`` when a stop token ended it.

        The reply is cut at the first stop token; thinking is split off as in
        :meth:`Renderer.parse_response`.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
            renderer.parse_response(tokenizer.encode("<think>hm</think> 5<|im_end|>"))
            # ({'role': 'assistant', 'content': '5', 'thinking': 'hm'}, True)
        """
        tokens = list(tokens)
        cut = next((i for i, t in enumerate(tokens) if t in self._stops), None)
        body = tokens if cut is None else tokens[:cut]
        message, _ = super().parse_response(body)
        return message, cut is not None
