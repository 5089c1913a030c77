"""Admission by cost: what one request may ask of the engine, and how big jobs are cut.

One valid request could otherwise hold the single engine worker for minutes
and many GB. The server prices every request in tokens before it queues it:

- ``forward`` / ``forward_backward``: datums x the longest datum (the padded batch);
- ``asample``: ``num_samples`` x (prompt + ``max_tokens``), the KV cache it builds;
- ``prompt_logprobs`` (``compute_logprobs``): the prompt's tokens.

A request over its limit can never run and is refused with a 413 that names
the limit and the ``mint-envkit serve`` flag / ``LocalServer`` parameter that
raises it. An allowed sample request that costs more than
``sample_chunk_tokens`` is split into sub-requests of a few samples each, and
(when ``sample_segment_tokens`` > 0; off by default) samples longer than
``sample_segment_tokens`` are drawn in segments
(:mod:`~mint_envkit.local.http.splitting`); the batcher runs the pieces round
by round, so a small request that arrives meanwhile waits for one piece, not
for the whole job. A ``forward`` / ``forward_backward`` costing more than
``train_chunk_tokens`` runs in micro-batches of that size, and the sample
requests waiting meanwhile run between them (the gradient is the same sum,
in another order).

Example::

    limits = Limits(max_request_tokens=65536, max_sample_tokens=131072)
    assert limits.check_forward([[1, 2, 3]] * 8) == 24          # fine: 24 tokens
    assert limits.sample_chunks(num_samples=64, per_sample=1000) == [4] * 16   # 16 sub-requests
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mint_envkit.checks import integer, number
from mint_envkit.local.bounds import ENGINE_DEFAULT_MAX_TOKENS
from mint_envkit.local.http.requests import ProtocolError

DEFAULT_MAX_REQUEST_TOKENS = 65536
"""Tokens one forward/forward_backward (datums x longest) or prompt_logprobs prompt may hold."""

DEFAULT_MAX_SAMPLE_TOKENS = 131072
"""Tokens one asample may ask for: num_samples x (prompt + max_tokens)."""

DEFAULT_SAMPLE_CHUNK_TOKENS = 4096
"""A sample request costing more is split into sub-requests of about this many tokens
(the engine's default budget per pass, so splitting costs no throughput)."""

DEFAULT_TRAIN_CHUNK_TOKENS = 1024
"""A forward/forward_backward costing more runs in micro-batches of about this many padded
tokens, with waiting sample requests run between them (the gradient is the same sum)."""

DEFAULT_SAMPLE_SEGMENT_TOKENS = 0
"""Samples longer than this are drawn in segments of this many decode steps; 0: never.

Off by default: a seeded sample drawn in segments is not what one unsegmented request
draws for that seed (docs/local-backend.md, "Big jobs")."""

DEFAULT_IDLE_TIMEOUT_S = 30 * 60.0
"""Training clients and sessions idle this long are released."""

DEFAULT_REQUEST_READ_S = 30.0
"""Seconds a request may take to arrive whole (headers and body), from the connection's
opening or the first byte after the previous answer (``http/connections.py``)."""

DEFAULT_MAX_CONNECTIONS = 256
"""Connections open at once; past it the one waiting longest without an answer in
progress is closed (``http/connections.py``)."""

BODY_BYTES_PER_TOKEN = 128
"""Bytes of JSON a forward/forward_backward body may spend per token it may hold (the SDK
sends about 55 for an importance_sampling datum); ``asample`` gets half of this per token."""

SMALL_BODY_BYTES = 1 << 20
"""The body limit of every route but forward, forward_backward and asample (they send ids)."""


def split_seed(seed: int | None, index: int) -> int | None:
    """The seed of piece ``index`` of a split sample request (0 keeps the request's own).

    A row chunk starting at sample ``k`` is piece ``k + 1``: the seed the engine gives
    the part of a request it cuts there (``engine.sampling``), so a request cut by rows
    draws what one engine call draws.

    Example::

        assert (split_seed(7, 0), split_seed(None, 3)) == (7, None)
        assert split_seed(7, 1) == 7 * 1_000_003 + 1   # the engine's seed for its cut at row 0
    """
    if seed is None or index == 0:
        return seed
    return (seed * 1_000_003 + index) % (2**63)


@attrs.frozen
class Limits:
    """The cost limits of one server (see the module docstring; token counts), and how long
    a request may take to arrive and how many connections may be open
    (:mod:`~mint_envkit.local.http.connections`).

    Example::

        try:
            Limits(max_sample_tokens=4096).check_sample(num_samples=64, prompt=10, max_tokens=100)
        except ProtocolError as err:
            assert err.status == 413
            assert err.message.startswith("asample asks for 64 x (10 + 100) = 7040 tokens")
        else:
            raise AssertionError("over the limit is refused")
    """

    max_request_tokens: int = attrs.field(default=DEFAULT_MAX_REQUEST_TOKENS, validator=integer())
    max_sample_tokens: int = attrs.field(default=DEFAULT_MAX_SAMPLE_TOKENS, validator=integer())
    sample_chunk_tokens: int = attrs.field(default=DEFAULT_SAMPLE_CHUNK_TOKENS, validator=integer())
    sample_segment_tokens: int = attrs.field(
        default=DEFAULT_SAMPLE_SEGMENT_TOKENS,
        validator=integer(least=0, why="0 turns segmenting off"),
    )
    train_chunk_tokens: int = attrs.field(default=DEFAULT_TRAIN_CHUNK_TOKENS, validator=integer())
    idle_timeout_s: float = attrs.field(
        default=DEFAULT_IDLE_TIMEOUT_S, validator=number(low=0, low_open=True, why="seconds")
    )
    request_read_s: float = attrs.field(
        default=DEFAULT_REQUEST_READ_S, validator=number(low=0, low_open=True, why="seconds")
    )
    max_connections: int = attrs.field(default=DEFAULT_MAX_CONNECTIONS, validator=integer())

    def check_forward(self, inputs: Sequence[Sequence[int]]) -> int:
        """The cost of a forward batch (datums x longest), or 413 past ``max_request_tokens``.

        Example::

            assert Limits().check_forward([[1, 2], [3]]) == 4   # 2 datums x the longest, 2
        """
        cost = len(inputs) * max((len(x) for x in inputs), default=0)
        if cost > self.max_request_tokens:
            raise ProtocolError(
                413,
                f"forward batch of {len(inputs)} datums x {cost // max(len(inputs), 1)} tokens "
                f"= {cost} tokens is over this server's limit of {self.max_request_tokens} "
                "(mint-envkit serve --max-request-tokens, LocalServer(max_request_tokens=...)); "
                "send fewer or shorter datums per call",
            )
        return cost

    def check_sample(self, *, num_samples: int, prompt: int, max_tokens: int | None) -> int:
        """The cost of a sample request, or 413 past ``max_sample_tokens``.

        Example::

            assert Limits().check_sample(num_samples=4, prompt=10, max_tokens=6) == 64
            assert Limits().check_sample(num_samples=1, prompt=10, max_tokens=None) == 26  # 16 default
        """
        length = prompt + (ENGINE_DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens)
        cost = num_samples * length
        if cost > self.max_sample_tokens:
            raise ProtocolError(
                413,
                f"asample asks for {num_samples} x ({prompt} + "
                f"{length - prompt}) = {cost} tokens, over this server's limit of "
                f"{self.max_sample_tokens} (mint-envkit serve --max-sample-tokens, "
                "LocalServer(max_sample_tokens=...)); ask for fewer samples or fewer max_tokens",
            )
        return cost

    def check_prompt_logprobs(self, prompt: int) -> None:
        """413 when a prompt to score (``prompt_logprobs``) is over ``max_request_tokens``.

        Example::

            Limits(max_request_tokens=100).check_prompt_logprobs(50)   # fine; 101 would be a 413
        """
        if prompt > self.max_request_tokens:
            raise ProtocolError(
                413,
                f"prompt_logprobs on a {prompt}-token prompt is over this server's limit of "
                f"{self.max_request_tokens} (mint-envkit serve --max-request-tokens, "
                "LocalServer(max_request_tokens=...))",
            )

    def body_bytes(self, route: str, max_body_bytes: int) -> int:
        """The most bytes the body of ``route`` may have: a request bigger than that costs
        more tokens than these limits allow, so it is refused (413) before it is read.

        Example::

            assert Limits(max_request_tokens=1000).body_bytes("forward_backward", 1 << 26) == 128000
        """
        if route in ("forward", "forward_backward", "forward_backward_reverse_kl"):
            return min(max_body_bytes, self.max_request_tokens * BODY_BYTES_PER_TOKEN)
        if route == "asample":
            return min(max_body_bytes, self.max_sample_tokens * BODY_BYTES_PER_TOKEN // 2)
        return min(max_body_bytes, SMALL_BODY_BYTES)

    def sample_chunks(self, *, num_samples: int, per_sample: int) -> list[int]:
        """How many samples each sub-request of a sample request gets (one item: not split).

        Example::

            assert Limits(sample_chunk_tokens=100).sample_chunks(num_samples=5, per_sample=40) == [2, 2, 1]
        """
        per = max(1, self.sample_chunk_tokens // max(per_sample, 1))
        if num_samples <= per:
            return [num_samples]
        full, rest = divmod(num_samples, per)
        return [per] * full + ([rest] if rest else [])
