"""Prompt logprobs the sampler already computed, kept for the ``compute_logprobs`` that follows.

The SDK computes a prompt's logprobs by sampling one token of it with
``prompt_logprobs`` set: the server samples (one prefill pass over the prompt) and
then scores the prompt (a second full pass). For a one-token sample the prefill
pass also computes every prompt position's logprob (:mod:`.kvcache`) and leaves them
here, keyed by the snapshot and the exact tokens; the ``compute_logprobs`` call for
those tokens on that snapshot takes them (once) instead of running the model again.
Values agree with a fresh pass to the rounding of a batched prefill (~1e-6 in fp32).
Each cache here is a :class:`mint_envkit.lru.LRU` bounded in floats.

Example::

    from mint_envkit.local.engine.lpcache import PromptLogprobCache

    cache = PromptLogprobCache()
    cache.put("snap-key", [5, 6, 7], [-1.0, -2.0])
    assert cache.take("snap-key", [5, 6, 7]) == [None, -1.0, -2.0]
    assert cache.take("snap-key", [5, 6, 7]) is None  # taken once
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import torch

from mint_envkit.lru import LRU

MAX_CACHED_TOKENS = 1 << 18
"""Prompt tokens kept at most (oldest entries dropped first): a few MB of floats."""

_Key = tuple[str, tuple[int, ...]]


class PromptLogprobCache:
    """Per ``(snapshot key, tokens)`` the logprobs of the tokens after the first (LRU, bounded).

    Example::

        cache = PromptLogprobCache(max_tokens=1000)
        cache.put("k", [1, 2], [-0.5])
        assert cache.take("k", [1, 2]) == [None, -0.5]
    """

    def __init__(self, max_tokens: int = MAX_CACHED_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._kept: LRU[_Key, list[float]] = LRU(max_tokens, size=len)

    def __len__(self) -> int:
        return len(self._kept)

    def put(self, snap_key: str, tokens: Sequence[int], logprobs: Sequence[float]) -> None:
        """Keep ``logprobs`` (one per token after the first) of ``tokens`` on ``snap_key``.

        Example::

            cache.put(snap.key, prompt, [-7.6, -7.9])  # one logprob per token after the first
        """
        if len(logprobs) != len(tokens) - 1 or len(tokens) > self.max_tokens:
            return
        self._kept.put((snap_key, tuple(tokens)), list(logprobs))

    def get(self, snap_key: str, tokens: Sequence[int]) -> list[float] | None:
        """The logprobs of ``tokens[1:]`` on ``snap_key`` (kept), or None.

        Example::

            cache.put(snap.key, prompt, [-7.6, -7.9])
            assert cache.get(snap.key, prompt) == [-7.6, -7.9]  # kept: None when it is not
        """
        return self._kept.get((snap_key, tuple(tokens)), touch=True)

    def take(self, snap_key: str, tokens: Sequence[int]) -> list[float | None] | None:
        """The ``compute_logprobs`` answer for ``tokens`` on ``snap_key`` (removed), or None.

        Example::

            cache.put(snap.key, prompt, [-7.6, -7.9])
            assert cache.take(snap.key, prompt) == [None, -7.6, -7.9]  # removed
            assert cache.take(snap.key, prompt) is None
        """
        found = self._kept.pop((snap_key, tuple(tokens)))
        return None if found is None else [None, *found]


MAX_FOLLOWUP_FLOATS = 1 << 24
"""Floats of next-token logits kept at most (64 MB), oldest sequences dropped first."""


@attrs.frozen
class Followup:
    """What the sampler computed for one sampled sequence: enough to score it and continue it.

    Example::

        Followup(reply_start=12, reply_logprobs=[-0.5, -1.2], next_logits=torch.zeros(2048))
    """

    reply_start: int  # tokens before the reply (the prompt)
    reply_logprobs: list[float]  # T=1, untruncated: the model's own distribution
    next_logits: torch.Tensor  # fp32 logits after the last token


class FollowupCache:
    """Per ``(snapshot key, prompt + reply)`` its :class:`Followup` (LRU, bounded in floats).

    The RL loop recomputes each reply's logprobs (``compute_logprobs``, which the SDK
    asks as a one-token sample of prompt + reply) right after sampling it: the
    one-token draw then comes from ``next_logits`` and the reply's logprobs from
    ``reply_logprobs``, with no model pass over the sequence. A sequence sampled
    several times (a group's samples often give the same reply) is kept once and
    counted: each of its ``compute_logprobs`` calls takes one count.

    Example::

        cache = FollowupCache()
        cache.put("k", [1, 2, 3], Followup(2, [-0.5], torch.zeros(8)))
        assert cache.get("k", [1, 2, 3]).reply_start == 2
    """

    def __init__(self, max_floats: int = MAX_FOLLOWUP_FLOATS) -> None:
        self.max_floats = max_floats
        self._kept: LRU[_Key, tuple[Followup, int]] = LRU(
            max_floats, size=lambda kept: int(kept[0].next_logits.numel())
        )

    def __len__(self) -> int:
        return len(self._kept)

    def put(self, snap_key: str, tokens: Sequence[int], followup: Followup) -> None:
        """Keep ``followup`` of the sequence ``tokens`` (prompt + reply) on ``snap_key``.

        Putting a sequence that is already kept adds one to its count (the kept values
        stay: they are those of the same tokens on the same weights).

        Example::

            cache, seq = FollowupCache(), seqs[0]  # a sequence the package's example sampled
            logits = torch.zeros(2048)  # the next-token logits after it
            cache.put(snap.key, prompt + seq.tokens, Followup(len(prompt), seq.logprobs, logits))
        """
        key = (snap_key, tuple(tokens))
        kept = self._kept.get(key)
        followup, count = (followup, 1) if kept is None else (kept[0], kept[1] + 1)
        if int(followup.next_logits.numel()) <= self.max_floats:
            self._kept.put(key, (followup, count))

    def get(self, snap_key: str, tokens: Sequence[int]) -> Followup | None:
        """The follow-up of ``tokens`` on ``snap_key`` (kept), or None.

        Example::

            cache, tokens = FollowupCache(), prompt + seqs[0].tokens
            cache.put(snap.key, tokens, Followup(len(prompt), seqs[0].logprobs, torch.zeros(8)))
            assert cache.get(snap.key, tokens).reply_start == len(prompt)
        """
        found = self._kept.get((snap_key, tuple(tokens)))
        return None if found is None else found[0]

    def take(self, snap_key: str, tokens: Sequence[int]) -> Followup | None:
        """The follow-up of ``tokens`` on ``snap_key`` (one count removed), or None.

        Example::

            cache, tokens = FollowupCache(), prompt + seqs[0].tokens
            cache.put(snap.key, tokens, Followup(len(prompt), seqs[0].logprobs, torch.zeros(8)))
            assert cache.take(snap.key, tokens) is not None
            assert cache.take(snap.key, tokens) is None  # taken once
        """
        key = (snap_key, tuple(tokens))
        found = self._kept.pop(key)
        if found is None:
            return None
        followup, count = found
        if count > 1:  # the other counts stay, as the newest entry
            self._kept.put(key, (followup, count - 1))
        return followup


MAX_HIDDEN_FLOATS = 1 << 22
"""Floats of prompt hidden states kept at most (16 MB), oldest prompts dropped first."""


class PromptHiddenCache:
    """Per ``(snapshot key, prompt)`` the final normed hidden state of each prompt position
    but the last, from a sampling prefill (LRU, bounded in floats).

    The recompute's ``compute_logprobs`` of a sampled sequence needs its prompt's
    logprobs too; the prefill already ran the prompt, so only the fp32 head runs on
    these states (no pass of the body). Taken once: the logprobs are then kept in the
    :class:`PromptLogprobCache` for the group's other samples.

    Example::

        cache = PromptHiddenCache()
        cache.put("k", [1, 2, 3], torch.zeros(2, 64))
        assert cache.take("k", [1, 2, 3]).shape == (2, 64)
    """

    def __init__(self, max_floats: int = MAX_HIDDEN_FLOATS) -> None:
        self.max_floats = max_floats
        self._kept: LRU[_Key, torch.Tensor] = LRU(max_floats, size=torch.Tensor.numel)

    def __len__(self) -> int:
        return len(self._kept)

    def put(self, snap_key: str, tokens: Sequence[int], hidden: torch.Tensor) -> None:
        """Keep ``hidden`` (``len(tokens) - 1`` rows) of prompt ``tokens`` on ``snap_key``.

        Example::

            cache = PromptHiddenCache()
            cache.put(snap.key, prompt, torch.zeros(len(prompt) - 1, 64))  # states but the last
        """
        size = int(hidden.numel())
        if hidden.shape[0] != len(tokens) - 1 or size > self.max_floats:
            return
        self._kept.put((snap_key, tuple(tokens)), hidden)

    def take(self, snap_key: str, tokens: Sequence[int]) -> torch.Tensor | None:
        """The hidden states of prompt ``tokens`` on ``snap_key`` (removed), or None.

        Example::

            cache = PromptHiddenCache()
            cache.put(snap.key, prompt, torch.zeros(len(prompt) - 1, 64))
            assert cache.take(snap.key, prompt).shape == (2, 64)
            assert cache.take(snap.key, prompt) is None  # taken once
        """
        return self._kept.pop((snap_key, tuple(tokens)))
