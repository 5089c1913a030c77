"""An OpenAI-compatible chat server as a place to sample: requests, retries, token usage.

:class:`OpenAIEndpoint` is what ``evaluate(client=...)`` and ``mint-envkit eval
--openai-base-url`` sample through (the sampler itself is
:class:`~mint_envkit.rollouts.sampler.OpenAISampler`).

Example::

    from mint_envkit.rollouts import OpenAIEndpoint

    endpoint = OpenAIEndpoint(base_url="http://127.0.0.1:8765/v1", model="mint-envkit/tiny-qwen3")
    endpoint.usage()["requests"]   # 0
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs

from mint_envkit.checks import is_integer
from mint_envkit.errors import BackendError, ConfigError

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def _check_openai_url(_instance: Any, _attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"base_url must be an http:// or https:// URL of an OpenAI-compatible server "
            f"(ending in /v1, as OpenAI's clients take it), got {value!r}"
        )


def _check_openai_model(_instance: Any, _attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"model must name the server's model (GET /v1/models), got {value!r}")


def _positive(_instance: Any, attribute: Any, value: Any) -> None:
    if not is_integer(value) or value < attribute.metadata["low"]:
        raise ConfigError(
            f"{attribute.name} must be an integer >= {attribute.metadata['low']}, got {value!r}"
        )


@attrs.define(kw_only=True)
class OpenAIEndpoint:
    """An OpenAI-compatible chat server (OpenAI, vLLM, Ollama, ``mint-envkit serve``'s
    ``/v1``) to evaluate an env on: ``evaluate(env, client=OpenAIEndpoint(...))``.

    Each sample is one Chat Completions request (``n=1``, which every such server
    takes) with the conversation's messages, the reply limit, temperature, ``top_p``, a
    seed per problem, env and turn, and the env's stop strings; at most
    ``max_concurrent`` requests are in flight, and a request that fails with 408, 409,
    429, 5xx or a connection error is tried again up to ``max_retries`` times (with a
    growing pause). The reply text becomes tokens of the env's tokenizer (plus its stop
    token when the server says ``finish_reason: stop``), so the env parses and scores it
    as any reply; ``usage()`` sums the server's token counts for the report.

    Attributes:
        base_url: the server's API root, e.g. ``http://127.0.0.1:8765/v1``.
        model: the server's model name (or a ``tinker://`` checkpoint on ours).
        api_key: sent as ``Authorization: Bearer``; None reads ``OPENAI_API_KEY``.
        max_concurrent: requests in flight at once.
        max_retries: tries after the first for a request that failed transiently.
        timeout_s: one request's time limit.
        transport: an ``httpx`` transport to send through (a proxy's, a test's); None:
            the network.

    Example::

        endpoint = OpenAIEndpoint(base_url="http://127.0.0.1:8765/v1", model="mint-envkit/tiny-qwen3")
        endpoint.usage()["requests"]   # 0
        # then: result = await evaluate(builder, client=endpoint, samples=4)
    """

    base_url: str = attrs.field(validator=_check_openai_url, converter=lambda u: str(u).rstrip("/"))
    model: str = attrs.field(validator=_check_openai_model)
    api_key: str | None = None
    max_concurrent: int = attrs.field(default=8, validator=_positive, metadata={"low": 1})
    max_retries: int = attrs.field(default=3, validator=_positive, metadata={"low": 0})
    timeout_s: float = 120.0
    transport: Any = attrs.field(default=None, repr=False)
    _counts: dict[str, int] = attrs.field(init=False, factory=dict, repr=False)
    _limit: asyncio.Semaphore | None = attrs.field(init=False, default=None, repr=False)

    def usage(self) -> dict[str, Any]:
        """What was sent so far: requests, retries, failures and the server's token counts.

        Example::

            endpoint.usage()["completion_tokens"]   # 0 before any request
        """
        keys = ("requests", "retries", "failed", "prompt_tokens", "completion_tokens")
        return {"base_url": self.base_url, "model": self.model} | {
            k: self._counts.get(k, 0) for k in keys
        }

    def _count(self, **amounts: int) -> None:
        for key, value in amounts.items():
            self._counts[key] = self._counts.get(key, 0) + int(value or 0)

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``/chat/completions``, with the retries; the answer's JSON.

        Raises:
            BackendError: the server refused (4xx but 408/409/429), or failed past the
                retries; the message has its status and what it said.

        Example::

            # not run: needs a running OpenAI-compatible server
            answer = await endpoint.chat({"model": endpoint.model, "max_tokens": 8,
                                          "messages": [{"role": "user", "content": "hi"}]})
        """
        import httpx

        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "none"
        if self._limit is None:
            self._limit = asyncio.Semaphore(self.max_concurrent)
        url = f"{self.base_url}/chat/completions"
        problem = ""
        async with (
            self._limit,
            httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport) as http,
        ):
            for attempt in range(self.max_retries + 1):
                if attempt:
                    self._count(retries=1)
                    await asyncio.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
                self._count(requests=1)
                try:
                    answer = await http.post(
                        url, json=body, headers={"Authorization": f"Bearer {key}"}
                    )
                except httpx.TransportError as err:
                    problem = f"{type(err).__name__}: {err}"
                    continue
                if answer.status_code == 200:
                    data = answer.json()
                    used = data.get("usage") or {}
                    self._count(
                        prompt_tokens=used.get("prompt_tokens", 0),
                        completion_tokens=used.get("completion_tokens", 0),
                    )
                    return data
                problem = f"HTTP {answer.status_code}: {answer.text[:500]}"
                if answer.status_code not in _RETRY_STATUS:
                    break
        self._count(failed=1)
        raise BackendError(
            f"the OpenAI-compatible server at {self.base_url} did not answer a chat "
            f"completion for model {self.model!r} ({problem}); check the URL (it ends in "
            "/v1), the model name (GET /v1/models) and OPENAI_API_KEY"
        )
