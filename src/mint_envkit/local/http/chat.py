"""The OpenAI-compatible door's requests and answers: ``/v1/chat/completions`` in engine terms.

:func:`parse_chat` checks a Chat Completions body (the model, text messages, the reply
limit, temperature, ``top_p``, stop strings, ``n``, ``seed``, ``logprobs``, ``stream``)
and refuses what the server cannot honour with a 400 that names the field: tools,
response formats, logit biases, penalties, images. :func:`completion_json` and
:func:`chunk_events` shape the answer as OpenAI's API does (``chat.completion`` with
``usage``; ``chat.completion.chunk`` server-sent events ending in ``[DONE]``).
The route handlers are in :mod:`mint_envkit.local.http.routes.openai`.

Example::

    from mint_envkit.local.http.chat import parse_chat

    req = parse_chat({"model": "mint-envkit/tiny-qwen3", "max_tokens": 16, "stop": "\\n",
                      "messages": [{"role": "user", "content": "What is 2 + 3?"}]})
    assert (req.max_tokens, req.stop, req.n) == (16, ("\\n",), 1)
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.checks import is_integer, is_number
from mint_envkit.local.bounds import TEMPERATURE_MIN
from mint_envkit.local.http.requests import ProtocolError

DEFAULT_CHAT_MAX_TOKENS = 256
"""The reply limit of a request that gives neither ``max_tokens`` nor
``max_completion_tokens`` (OpenAI's own default is the model's context; a local
server's default is kept small, and the server's token limits bound either)."""

MAX_CHAT_MESSAGES = 1024
"""The most messages one request may send."""

MAX_CHAT_CHOICES = 128
"""The most completions (``n``) one request may ask for."""

MAX_STOP_STRINGS = 4
"""The most stop strings one request may give (OpenAI's limit)."""

_ROLES = ("system", "developer", "user", "assistant", "tool")
_UNSUPPORTED = {
    "tools": "tool calling",
    "tool_choice": "tool calling",
    "functions": "function calling",
    "function_call": "function calling",
    "response_format": "response formats",
    "logit_bias": "logit biases",
    "audio": "audio output",
    "prediction": "predicted outputs",
}
_ZERO_ONLY = ("presence_penalty", "frequency_penalty")


def _bad(message: str) -> ProtocolError:
    return ProtocolError(400, message)


@attrs.frozen
class ChatRequest:
    """A checked ``/v1/chat/completions`` request.

    Attributes:
        model: a served base model, or a ``tinker://`` sampler checkpoint of one.
        messages: ``{"role", "content"}`` dicts with text content.
        max_tokens: the reply limit of each choice.
        temperature: the engine's temperature (OpenAI's 0, greedy, becomes the
            smallest the engine takes).
        top_p, seed: as sent (seed None: a fresh one).
        stop: stop strings; the chat template's end-of-turn token always stops.
        n: completions to return.
        stream: answer as server-sent events.
        include_usage: with ``stream``, a last chunk carries ``usage``.
        logprobs: return each token's log probability.

    Example::

        assert req.model == "mint-envkit/tiny-qwen3" and not req.stream
    """

    model: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: tuple[str, ...]
    n: int
    stream: bool
    include_usage: bool
    logprobs: bool


def _integer(body: Mapping[str, Any], key: str, low: int, high: int | None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not is_integer(value):
        raise _bad(f"{key} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        limit = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise _bad(f"{key} must be {limit}, got {value}")
    return value


def _number(body: Mapping[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if not is_number(value) or value != value:
        raise _bad(f"{key} must be a number, got {value!r}")
    if not low <= value <= high:
        raise _bad(f"{key} must be from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise _bad(
                    f"{where}.content[{i}] is of type {kind!r}; this server takes text parts only"
                )
            if not isinstance(part.get("text"), str):
                raise _bad(f"{where}.content[{i}].text must be a string")
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"{where}.content must be a string or a list of text parts, got {content!r}")


def _messages(value: Any) -> tuple[dict[str, str], ...]:
    if not isinstance(value, list) or not value:
        raise _bad("messages must be a non-empty list of {'role', 'content'} objects")
    if len(value) > MAX_CHAT_MESSAGES:
        raise _bad(f"{len(value)} messages is over this server's limit of {MAX_CHAT_MESSAGES}")
    out = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise _bad(f"{where} must be an object with role and content")
        role = message.get("role")
        if role not in _ROLES:
            raise _bad(f"{where}.role must be one of {', '.join(_ROLES)}; got {role!r}")
        if message.get("tool_calls"):
            raise _bad(f"{where} has tool_calls; this server does not do tool calling")
        content = message.get("content")
        text = "" if content is None and role == "assistant" else _text(content, where)
        out.append({"role": "system" if role == "developer" else str(role), "content": text})
    return tuple(out)


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items):
        raise _bad(f"stop must be a non-empty string or a list of them, got {value!r}")
    if len(items) > MAX_STOP_STRINGS:
        raise _bad(f"stop takes at most {MAX_STOP_STRINGS} strings, got {len(items)}")
    return tuple(items)


def parse_chat(body: Any) -> ChatRequest:
    """Check a Chat Completions body; a :class:`ProtocolError` 400 names what is wrong.

    Example::

        try:
            parse_chat({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                        "tools": [{"type": "function"}]})
        except ProtocolError as err:
            assert err.status == 400 and "tool calling" in err.message
    """
    if not isinstance(body, Mapping):
        raise _bad("the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _bad("model must name a served base model or a tinker:// sampler checkpoint")
    for key, what in _UNSUPPORTED.items():
        if body.get(key) not in (None, [], {}):
            raise _bad(f"{key}: {what} is not supported by this server; leave it out")
    for key in _ZERO_ONLY:
        if body.get(key) not in (None, 0, 0.0):
            raise _bad(f"{key} is not supported by this server; leave it out or send 0")
    if _integer(body, "top_logprobs", 0, 20):
        raise _bad("top_logprobs is not supported by this server; use logprobs=true alone")
    limit = _integer(body, "max_completion_tokens", 1, None)
    limit = _integer(body, "max_tokens", 1, None) if limit is None else limit
    temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise _bad("stream_options must be an object")
    for key in ("stream", "logprobs"):
        if not isinstance(body.get(key, False) or False, bool):
            raise _bad(f"{key} must be true or false, got {body.get(key)!r}")
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
    if top_p == 0:
        raise _bad("top_p must be > 0 (1 samples from the whole distribution)")
    return ChatRequest(
        model=model.strip(),
        messages=_messages(body.get("messages")),
        max_tokens=DEFAULT_CHAT_MAX_TOKENS if limit is None else limit,
        temperature=max(temperature, TEMPERATURE_MIN),
        top_p=top_p,
        seed=_integer(body, "seed", -(2**63), 2**63 - 1),
        stop=_stop(body.get("stop")),
        n=_integer(body, "n", 1, MAX_CHAT_CHOICES) or 1,
        stream=bool(body.get("stream") or False),
        include_usage=bool(options.get("include_usage", False)),
        logprobs=bool(body.get("logprobs") or False),
    )


@attrs.frozen
class Choice:
    """One completion: its text, why it ended, its tokens and their logprobs.

    Example::

        Choice(text="5", finish_reason="stop", tokens=[20], logprobs=[-0.5], pieces=["5"])
    """

    text: str
    finish_reason: str
    tokens: list[int]
    logprobs: list[float]
    pieces: list[str]


def _logprobs(choice: Choice) -> dict[str, Any]:
    return {
        "content": [
            {
                "token": piece,
                "logprob": lp,
                "bytes": list(piece.encode("utf-8")),
                "top_logprobs": [],
            }
            for piece, lp in zip(choice.pieces, choice.logprobs, strict=True)
        ]
    }


def usage(prompt_tokens: int, choices: Sequence[Choice]) -> dict[str, int]:
    """OpenAI's ``usage``: the prompt's tokens, every choice's sampled tokens, their sum.

    Example::

        assert usage(10, [Choice("5", "stop", [20, 2], [0.0, 0.0], ["5", ""])]) == {
            "prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    """
    completion = sum(len(c.tokens) for c in choices)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }


def _ident() -> tuple[str, int]:
    return f"chatcmpl-{uuid.uuid4().hex}", int(time.time())


def completion_json(req: ChatRequest, prompt_tokens: int, choices: Sequence[Choice]) -> dict:
    """The ``chat.completion`` object for ``choices``.

    Example::

        body = completion_json(req, 10, [Choice("5", "stop", [20], [-0.5], ["5"])])
        assert body["choices"][0]["message"] == {"role": "assistant", "content": "5"}
    """
    ident, created = _ident()
    return {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": req.model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": c.text},
                "logprobs": _logprobs(c) if req.logprobs else None,
                "finish_reason": c.finish_reason,
            }
            for i, c in enumerate(choices)
        ],
        "usage": usage(prompt_tokens, choices),
    }


def chunk_events(req: ChatRequest, prompt_tokens: int, choices: Sequence[Choice]) -> Iterator[str]:
    """The answer as ``chat.completion.chunk`` server-sent events, then ``[DONE]``.

    The engine returns whole completions, so each choice arrives as one content chunk
    (then its ``finish_reason``); with ``include_usage`` a last chunk carries ``usage``.

    Example::

        events = list(chunk_events(req, 10, [Choice("5", "stop", [20], [-0.5], ["5"])]))
        assert events[-1] == "data: [DONE]\\n\\n" and len(events) == 3
    """
    ident, created = _ident()
    head = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": req.model}

    def event(choices_part: list[dict[str, Any]], **extra: Any) -> str:
        return f"data: {json.dumps({**head, 'choices': choices_part, **extra})}\n\n"

    for i, c in enumerate(choices):
        delta = {"role": "assistant", "content": c.text}
        yield event(
            [{"index": i, "delta": delta, "logprobs": _logprobs(c) if req.logprobs else None}]
        )
        yield event([{"index": i, "delta": {}, "finish_reason": c.finish_reason}])
    if req.include_usage:
        yield event([], usage=usage(prompt_tokens, choices))
    yield "data: [DONE]\n\n"


def openai_error(err: ProtocolError) -> dict[str, Any]:
    """OpenAI's error object for a refused request (what its clients read the message from).

    Example::

        assert openai_error(ProtocolError(404, "no such model"))["error"]["type"] == "not_found_error"
    """
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}
    return {
        "error": {
            "message": err.message,
            "type": kinds.get(err.status, "invalid_request_error"),
            "param": None,
            "code": None,
        }
    }
