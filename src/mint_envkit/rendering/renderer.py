"""Renderers: chat messages to model tokens and back.

A :class:`Renderer` renders a conversation with the model's own chat template
(``apply_chat_template`` with the generation prompt added), names the stop
tokens, and parses sampled tokens back into an assistant message with the
thinking kept apart from the content.

Example::

    # not run: `sampled_tokens` is a sampled reply's tokens, built elsewhere
    from mint_envkit import get_renderer
    from mint_envkit.rendering import get_tokenizer

    renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
    prompt = renderer.build_generation_prompt([{"role": "user", "content": "2 + 3?"}])
    message, ok = renderer.parse_response(sampled_tokens)
    # message == {"role": "assistant", "content": "5", "thinking": "..."}; ok: stop token seen
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mint_envkit.envs.base import Message
from mint_envkit.errors import RendererError
from mint_envkit.rendering.tokenizer import get_tokenizer
from mint_envkit.rendering.tool_calls import (
    format_tool_calls,
    parse_hermes_tool_calls,
    tools_system_block,
)

if TYPE_CHECKING:
    import tinker
    from transformers import PreTrainedTokenizerBase

RENDERERS: dict[str, dict[str, Any]] = {
    "qwen3": {"enable_thinking": True},
    "qwen3_disable_thinking": {"enable_thinking": False},
    "chat_template": {},
}
"""The renderer names :func:`get_renderer` knows, with their template options."""

_UNKNOWN = object()
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


_TEMPLATE_FIELDS = (
    "role",
    "content",
    "thinking",
    "reasoning_content",
    "tool_calls",
    "name",
    "tool_call_id",
)
# A conversation the continuation probe renders before the new messages: its
# assistant turn holds a sentinel, so the text after that turn's stop token is
# exactly what the template writes for the new messages.
_PROBE_USER = "mint-envkit continuation probe"
_SENTINEL = "mint-envkit-sentinel-3f9c1a"
_PROBE_TOOL = "mint_envkit_probe_tool_3f9c1a"
_PROBE_CALL = {
    "type": "function",
    "id": "call_0",
    "function": {"name": _PROBE_TOOL, "arguments": "{}"},
}
_PROBE_SCHEMA = {
    "type": "function",
    "function": {"name": _PROBE_TOOL, "parameters": {"type": "object", "properties": {}}},
}
_PROBES: dict[str, tuple[list[Message], list[dict] | None]] = {
    "tools": ([{"role": "user", "content": "x"}], [_PROBE_SCHEMA]),
    "tool_calls": (
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [_PROBE_CALL]},
        ],
        None,
    ),
    "tool_results": (
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [_PROBE_CALL]},
            {"role": "tool", "name": "f", "tool_call_id": "call_0", "content": _PROBE_TOOL},
        ],
        None,
    ),
}


def _message_key(messages: Sequence[Message], tools: Sequence[dict] | None) -> str:
    fields = [{k: m[k] for k in _TEMPLATE_FIELDS if m.get(k) is not None} for m in messages]
    for field in fields:
        field.setdefault("content", "")  # a tool-call turn's None content (OpenAI style)
    return json.dumps([fields, list(tools or [])], default=str)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_unicode(index: int, role: str, text: str) -> None:
    """A RendererError naming a lone surrogate in ``text`` (no tokenizer encodes one: the
    fast tokenizers raised an unexplained ``TypeError: TextEncodeInput must be ...``)."""
    found = None if text.isascii() else _SURROGATE.search(text)
    if found is None:
        return
    at = found.start()
    raise RendererError(
        f"message {index} ({role}) holds a lone surrogate {found.group()!r} at char {at} "
        f"(...{text[max(0, at - 30) : at + 10]!r}...): not Unicode text, so no tokenizer can "
        "encode it. It comes from bytes decoded with errors='surrogateescape', or a JSON "
        "'\\ud800' escape without its pair; fix the problem's text, e.g. "
        "text.encode('utf-8', 'replace').decode('utf-8')"
    )


def _check_messages(messages: Sequence[Message], *, allow_empty: bool = False) -> None:
    for index, message in enumerate(messages):
        ok = (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and (
                isinstance(message.get("content"), str)
                or (message.get("content") is None and bool(message.get("tool_calls")))
            )
        )
        if not ok:
            raise RendererError(
                f"message {index} must be a dict with string 'role' and 'content' (content "
                f"may be None only beside 'tool_calls'), got {message!r}"
            )
        _check_unicode(index, message["role"], message.get("content") or "")
    if not messages and not allow_empty:
        raise RendererError("cannot render an empty conversation; give at least one message")


class Renderer:
    """Renders messages with a tokenizer's chat template; parses replies back.

    Build one with :func:`get_renderer`. Rendering the same conversation twice
    reuses the first result (a group's envs share one prompt).

    Attributes:
        name: the renderer name (``"qwen3"``...).
        tokenizer: the Hugging Face tokenizer.
        enable_thinking: passed to the chat template.

    Example::

        # not run: `tokenizer` is a tokenizer, built elsewhere
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
        self._continuation_cached = functools.lru_cache(maxsize=4096)(self._continuation_uncached)
        self._continuation_error: Any = _UNKNOWN
        self._shows: dict[str, bool] = {}

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

    def _template_shows(self, what: str) -> bool:
        """Whether the chat template writes ``what`` (tools, tool_calls, tool_results)."""
        if what not in self._shows:
            messages, tools = _PROBES[what]
            options: dict[str, Any] = {"enable_thinking": self.enable_thinking}
            if tools:
                options["tools"] = tools
            try:
                text = self.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True, **options
                )
                self._shows[what] = _PROBE_TOOL in text
            except Exception:
                self._shows[what] = False
        return self._shows[what]

    @property
    def tools_in_template(self) -> bool:
        """True when the chat template lists tools itself (it has a ``tools`` slot).

        When False, the renderer writes the schemas into the system message
        (:func:`~mint_envkit.rendering.tool_calls.tools_system_block`) and reads
        replies' ``<tool_call>`` JSON back, so tools are never dropped.

        Example::

            get_renderer("chat_template", "mint-envkit/smollm2-135m-instruct").tools_in_template
            # False: SmolLM2's template has no tools slot
        """
        return self._template_shows("tools")

    def _template_messages(
        self, messages: list[Message], tools: list[dict] | None
    ) -> list[Message]:
        """``messages`` as the template can show them: what it would drop goes into text."""
        out = [dict(m) for m in messages]
        if tools and not self._template_shows("tools"):
            block = tools_system_block(tools)
            if out and out[0]["role"] == "system":
                out[0]["content"] = f"{out[0]['content']}\n\n{block}".lstrip()
            else:
                out.insert(0, {"role": "system", "content": block})
        calls = any(m.get("tool_calls") for m in out)
        if calls and not self._template_shows("tool_calls"):
            for m in out:
                if m.get("tool_calls"):
                    written = format_tool_calls(list(m.pop("tool_calls")))
                    m["content"] = f"{m['content']}\n{written}".lstrip()
        results = any(m["role"] == "tool" for m in out)
        if results and not self._template_shows("tool_results"):
            for m in out:
                if m["role"] == "tool":
                    text = m["content"]
                    m.clear()
                    m.update(role="user", content=f"<tool_response>\n{text}\n</tool_response>")
        return out

    def _template(
        self, messages: list[Message], tools: list[dict] | None, *, generation_prompt: bool
    ) -> str:
        options: dict[str, Any] = {"enable_thinking": self.enable_thinking}
        if tools and self._template_shows("tools"):
            options["tools"] = tools
        return self.tokenizer.apply_chat_template(
            self._template_messages(messages, tools),
            tokenize=False,
            add_generation_prompt=generation_prompt,
            **options,
        )

    def _hidden(self, messages: list[Message], tools: list[dict] | None, text: str) -> list[str]:
        """The names of ``tools`` that ``text`` (the prompt rendered with them) does not show.

        A name counts as shown when it occurs more often in ``text`` than in the
        same conversation rendered without tools: a name the question or the
        system prompt mentions proves nothing.
        """
        names = [str(t.get("function", t).get("name", "")) for t in tools or []]
        names = [n for n in names if n]
        if not names:
            return []
        bare = self._template(messages, None, generation_prompt=True)
        return [n for n in names if text.count(n) <= bare.count(n)]

    def prompt_text(self, messages: Sequence[Message], tools: Sequence[dict] | None = None) -> str:
        """The prompt as text, generation prompt included, before any check of the tools.

        What :meth:`render_tokens` encodes (tools written into the system message
        when the template has no tools slot); unlike it, it does not raise when a
        tool is missing, so a tool (``mint-envkit check``) can show the prompt and
        :meth:`hidden_tools` together.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
            print(renderer.prompt_text(env.messages(), env.tool_specs()))
        """
        _check_messages(messages)
        fields, specs = json.loads(_message_key(messages, tools))
        return self._template(fields, specs, generation_prompt=True)

    def hidden_tools(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None
    ) -> list[str]:
        """The names of ``tools`` the rendered prompt does not show; ``[]`` when all are shown.

        A name is shown when the prompt rendered with ``tools`` holds it more often
        than the same conversation rendered without them (so a system prompt that
        names the tool does not hide a dropped schema). :meth:`render_tokens`
        raises a :class:`RendererError` when this is not empty.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
            renderer.hidden_tools(env.messages(), env.tool_specs())  # [] : every tool shows
        """
        _check_messages(messages)
        fields, specs = json.loads(_message_key(messages, tools))
        return self._hidden(fields, specs, self._template(fields, specs, generation_prompt=True))

    def _render_uncached(self, key: str) -> tuple[int, ...]:
        messages, tools = json.loads(key)
        text = self._template(messages, tools, generation_prompt=True)
        missing = self._hidden(messages, tools, text)
        if missing:
            raise RendererError(
                f"renderer {self.name!r}: the tools {missing} are not in the rendered prompt "
                "(the chat template drops both its tools= and the system message the renderer "
                "writes them into); use a model whose template shows a system message"
            )
        return tuple(self.tokenizer.encode(text, add_special_tokens=False))

    def render_tokens(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None
    ) -> list[int]:
        """The prompt tokens for ``messages``, generation prompt included.

        ``tools`` (tool schemas, :attr:`mint_envkit.Tool.schema`) go to the chat
        template's ``tools=``, which lists them the model family's way (Qwen3: a
        ``# Tools`` block with ``<tools></tools>`` in the system message). A
        template with no tools slot (SmolLM2, Llama 3 base templates; see
        :attr:`tools_in_template`) gets the same ``# Tools`` block written into
        the system message, and assistant ``tool_calls`` it would drop written as
        ``<tool_call>`` JSON in the content.

        Raises:
            RendererError: a message is not a dict with a string ``role`` and
                string ``content`` (``None`` allowed beside ``tool_calls``); or a
                tool is not shown in the rendered prompt (the template drops even
                the system message; see :meth:`hidden_tools`).
        """
        _check_messages(messages)
        return list(self._render_cached(_message_key(messages, tools)))

    def continuation_error(self) -> str | None:
        """Why this template cannot render new messages after a sampled turn, or None.

        The answer is measured once, on a probe conversation (see
        :meth:`render_continuation`).
        """
        if self._continuation_error is _UNKNOWN:
            try:
                self.render_continuation([{"role": "user", "content": "probe"}])
                self._continuation_error = None
            except RendererError as err:
                self._continuation_error = str(err)
        return self._continuation_error

    @property
    def supports_continuation(self) -> bool:
        """True when :meth:`render_continuation` works for this template.

        The token-level env needs it for multi-turn episodes: it never renders
        an earlier assistant turn again.
        """
        return self.continuation_error() is None

    def render_continuation(
        self, new_messages: Sequence[Message], tools: Sequence[dict] | None = None
    ) -> list[int]:
        """The tokens that follow a sampled assistant turn: ``new_messages``, then the
        generation prompt.

        The next prompt of a multi-turn episode is the previous prompt, the
        exact sampled tokens (ending with the stop token) and these tokens, so
        earlier turns are never rendered again (Qwen3's template would drop
        their ``<think>`` blocks). The tokens are what the chat template writes
        after an assistant turn's stop token when ``new_messages`` follow it.

        Raises:
            RendererError: the template cannot say it (it fails on the probe
                conversation, or does not end an assistant turn with the stop
                token); the message names the renderer.

        Example::

            # not run: `previous_observation` is the last observation's tokens, built elsewhere
            observation = [*previous_observation, *sampled_tokens,
                           *renderer.render_continuation([{"role": "user", "content": "Lower."}])]
        """
        _check_messages(new_messages, allow_empty=True)
        probe = [
            {"role": "user", "content": _PROBE_USER},
            {"role": "assistant", "content": _SENTINEL},
        ]
        return list(self._continuation_cached(_message_key([*probe, *new_messages], tools)))

    def _continuation_uncached(self, key: str) -> tuple[int, ...]:
        stop_text = self.tokenizer.decode([self._stop_token], skip_special_tokens=False)
        try:
            text = self._template(*json.loads(key), generation_prompt=True)
        except Exception as err:
            raise RendererError(
                f"renderer {self.name!r}: its chat template fails on a user, an assistant "
                f"turn and the new messages ({type(err).__name__}: {err}); it cannot "
                "continue a multi-turn episode without rendering earlier turns again"
            ) from err
        at = text.find(_SENTINEL)
        end = text.find(stop_text, at + len(_SENTINEL)) if at != -1 else -1
        if at == -1 or end == -1 or text.count(_SENTINEL) != 1:
            raise RendererError(
                f"renderer {self.name!r}: its chat template does not end an assistant turn "
                f"with the stop token {stop_text!r}, so new messages cannot be appended "
                "after the sampled tokens; use a single-turn env with it"
            )
        return tuple(self.tokenizer.encode(text[end + len(stop_text) :], add_special_tokens=False))

    def build_generation_prompt(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None
    ) -> tinker.ModelInput:
        """The prompt as a ``tinker.ModelInput``, ready to sample from.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
            model_input = renderer.build_generation_prompt(messages)
            await sampling_client.sample_async(prompt=model_input, num_samples=4, sampling_params=params)
        """
        import tinker

        return tinker.ModelInput.from_ints(self.render_tokens(messages, tools))

    def get_stop_sequences(self) -> list[int]:
        """The stop token ids (``<|im_end|>`` for Qwen-style templates)."""
        return [self._stop_token]

    def parse_response(self, tokens: Sequence[int]) -> tuple[Message, bool]:
        """Turn sampled tokens into an assistant message.

        Returns ``(message, ok)``: ``ok`` is False when the stop token is
        missing (the reply never ended). The message's ``content`` has complete
        ``<think>...</think>`` blocks removed; their text is in ``thinking``.
        Tool calls (see :meth:`parse_tool_calls`) move from the content to
        ``tool_calls``; calls that could not be read go to ``unparsed_tool_calls``
        (``{"raw_text": ..., "error": ...}``).
        An unclosed ``<think>`` stays in the content, so parsers report it as
        ``unclosed_think``.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
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
        content, calls, unparsed = self.parse_tool_calls(message["content"])
        if calls or unparsed:
            message["content"] = content
        if calls:
            message["tool_calls"] = calls
        if unparsed:
            message["unparsed_tool_calls"] = unparsed
        return message, ok

    def parse_tool_calls(self, content: str) -> tuple[str, list[Message], list[dict[str, str]]]:
        """Read the tool calls out of a reply's content, in this model family's format.

        Returns ``(content without the calls, calls, calls not read)``. Qwen
        renderers read ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
        blocks (see :func:`~mint_envkit.rendering.tool_calls.parse_hermes_tool_calls`);
        a renderer for another family overrides this method.

        Example::

            # not run: `renderer` is a Renderer, built elsewhere
            renderer.parse_tool_calls('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
            # ('', [{'type': 'function', 'id': 'call_0', 'function': {...}}], [])
        """
        return parse_hermes_tool_calls(content)

    def __repr__(self) -> str:
        return f"Renderer(name={self.name!r}, tokenizer={getattr(self.tokenizer, 'name_or_path', '?')!r})"


_SHARED: dict[tuple[str, str], Renderer] = {}


def get_renderer(name: str, tokenizer: PreTrainedTokenizerBase | str) -> Renderer:
    """Return the renderer called ``name`` for ``tokenizer``.

    ``tokenizer`` is a tokenizer, or a model name (or tokenizer directory) that
    :func:`~mint_envkit.rendering.tokenizer.get_tokenizer` loads; given a name, the
    renderer is built once per process and then shared (every group of a run renders
    with the same one).

    Known names: ``"qwen3"`` (thinking on), ``"qwen3_disable_thinking"``
    (the generation prompt pre-fills an empty think block) and
    ``"chat_template"`` (any tokenizer's own template, stop tokens read from it;
    see :mod:`mint_envkit.rendering.chat_template`).

    Raises:
        RendererError: the name is unknown (the message lists the known
            ones), or the tokenizer has no chat template.
        TokenizerError: ``tokenizer`` is a name that cannot be loaded.

    Example::

        renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
        shared = get_renderer("qwen3", "mint-envkit/tiny-qwen3")  # same renderer each call
    """
    options = RENDERERS.get(name)
    if options is None:
        raise RendererError(
            f"unknown renderer {name!r}; known renderers: {', '.join(sorted(RENDERERS))}"
        )
    key = (name, tokenizer) if isinstance(tokenizer, str) else None
    renderer = _SHARED.get(key) if key else None
    if renderer is None:
        tok = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        if name == "chat_template":
            from mint_envkit.rendering.chat_template import ChatTemplateRenderer

            renderer = ChatTemplateRenderer(tok)
        else:
            renderer = Renderer(tok, name=name, **options)
        if key:
            _SHARED[key] = renderer
    return renderer
