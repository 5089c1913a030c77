"""The sampling-distribution rows of a conformance run: temperature, ``top_k``, ``top_p``.

- ``sample: temperature``: 16 replies of 8 tokens at temperature 0.7. A sampled token's
  logprob at temperature ``T`` is ``lp1 / T - log Z`` (``lp1`` its logprob at
  temperature 1, ``compute_logprobs``; ``Z`` a sum over the vocabulary that depends
  only on what comes before the token). So among the tokens drawn after the same
  prefix, ``sampled - lp1 / T`` is one number; a server that ignores the temperature
  reports ``lp1``, and ``lp1 - lp1 / T`` differs from token to token. The row needs
  two different tokens after one prefix whose ``lp1`` differ enough to tell the two
  apart (it says so when the replies gave none: a fault could then pass unseen).
- ``sample: top_k``: at temperature 2 (where replies spread), ``top_k=1`` must give 8
  identical replies (greedy), and ``top_k=2`` at most 2 different tokens after any
  prefix its 16 replies share.
- ``sample: top_p``: at temperature 2, ``top_p=0.001`` keeps only the likeliest token:
  8 identical replies.

Each row says whether free sampling at that temperature gives different replies; where
it does not (a model certain of its reply), the truncation rows cannot tell a server
that ignores them, and say so.

Example::

    # not run: needs a running backend
    rows = await run_checks(SAMPLING_CHECKS, probe, timeout_s=120)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mint_envkit.conformance.calls import params, prompt_input
from mint_envkit.conformance.probe import AGREEMENT_BOUNDS, Probe, check_logprobs
from mint_envkit.conformance.rows import Check
from mint_envkit.errors import BackendError

TEMPERATURE = 0.7
"""The temperature of the temperature row (the seed's and the cookbook recipes' value)."""

SPREAD_TEMPERATURE = 2.0
"""The temperature of the truncation rows: replies spread, so truncation shows."""


async def _replies(probe: Probe, count: int, **values: Any) -> list[Any]:
    response = await probe.base.sample_async(prompt_input(probe), count, params(**values))
    sequences = list(response.sequences)
    if len(sequences) != count:
        raise BackendError(f"asked for {count} samples, got {len(sequences)}")
    return sequences


def _by_prefix(replies: Sequence[Sequence[int]]) -> dict[tuple[int, ...], set[int]]:
    """For each prefix the replies share, the tokens drawn right after it."""
    after: dict[tuple[int, ...], set[int]] = {}
    for reply in replies:
        for i, token in enumerate(reply):
            after.setdefault(tuple(reply[:i]), set()).add(int(token))
    return after


async def _temperature(probe: Probe) -> str:
    import tinker

    sequences = await _replies(probe, 16, temperature=TEMPERATURE)
    scored = await asyncio.gather(
        *(
            probe.base.compute_logprobs_async(
                tinker.ModelInput.from_ints(probe.prompt + list(seq.tokens))
            )
            for seq in sequences
        )
    )
    # prefix -> token -> (sampled logprob at T, logprob at 1)
    seen: dict[tuple[int, ...], dict[int, tuple[float, float]]] = {}
    for seq, values in zip(sequences, scored, strict=True):
        tokens = [int(t) for t in seq.tokens]
        sampled = check_logprobs(seq.logprobs or [], len(tokens), "sample")
        at_one = check_logprobs(values[len(probe.prompt) :], len(tokens), "compute_logprobs")
        for i, token in enumerate(tokens):
            seen.setdefault(tuple(tokens[:i]), {})[token] = (sampled[i], at_one[i])
    bound = AGREEMENT_BOUNDS[probe.dtype][0] * (1 + 1 / TEMPERATURE) * 2
    worst, signal = 0.0, 0.0
    for tokens in seen.values():
        if len(tokens) < 2:
            continue
        offsets = [s - one / TEMPERATURE for s, one in tokens.values()]
        ones = [one for _, one in tokens.values()]
        worst = max(worst, max(offsets) - min(offsets))
        signal = max(signal, (max(ones) - min(ones)) * abs(1 - 1 / TEMPERATURE))
    if worst > bound:
        raise BackendError(
            f"temperature {TEMPERATURE}: the sampled logprobs are not those of the "
            f"temperature-scaled distribution: after one prefix, sampled - lp1 / T differs "
            f"by {worst:.3g} between tokens (bound {bound:.2g}); ignoring the temperature "
            f"would give up to {signal:.3g}"
        )
    if signal < 10 * bound:
        raise BackendError(
            f"temperature {TEMPERATURE}: could not test: the 16 replies drew no two tokens "
            f"after one prefix whose logprobs differ enough (a server ignoring the "
            f"temperature would be off by {signal:.3g}, the bound is {bound:.2g})"
        )
    return (
        f"16 replies at T={TEMPERATURE}: sampled = lp1 / T - log Z within {worst:.2g} after "
        f"every shared prefix (bound {bound:.2g}; ignoring T would show up to {signal:.3g})"
    )


async def _spread(probe: Probe) -> bool:
    """Whether free sampling at :data:`SPREAD_TEMPERATURE` draws more than one reply."""
    free = await _replies(probe, 8, temperature=SPREAD_TEMPERATURE)
    return len({tuple(s.tokens) for s in free}) > 1


def _free(spread: bool) -> str:
    return (
        "free sampling at T=2 drew different replies"
        if spread
        else "free sampling at T=2 drew one reply too, so this could not tell a server that "
        "ignores it"
    )


async def _top_k(probe: Probe) -> str:
    spread = await _spread(probe)
    greedy = await _replies(probe, 8, temperature=SPREAD_TEMPERATURE, top_k=1)
    distinct = {tuple(s.tokens) for s in greedy}
    if len(distinct) != 1:
        raise BackendError(f"top_k=1 at T=2 drew {len(distinct)} different replies of 8, not 1")
    two = await _replies(probe, 16, temperature=SPREAD_TEMPERATURE, top_k=2)
    widest = max(len(t) for t in _by_prefix([list(s.tokens) for s in two]).values())
    if widest > 2:
        raise BackendError(f"top_k=2 at T=2 drew {widest} different tokens after one prefix")
    return (
        f"top_k=1: 8 identical replies; top_k=2: at most {widest} tokens a prefix; {_free(spread)}"
    )


async def _top_p(probe: Probe) -> str:
    spread = await _spread(probe)
    greedy = await _replies(probe, 8, temperature=SPREAD_TEMPERATURE, top_p=0.001)
    distinct = {tuple(s.tokens) for s in greedy}
    if len(distinct) != 1:
        raise BackendError(f"top_p=0.001 at T=2 drew {len(distinct)} different replies of 8, not 1")
    return f"top_p=0.001: 8 identical replies; {_free(spread)}"


_BASE = ("create_sampling_client(base_model)",)

SAMPLING_CHECKS: tuple[Check, ...] = (
    Check(f"sample: temperature {TEMPERATURE}", _temperature, needs=_BASE),
    Check("sample: top_k", _top_k, needs=_BASE),
    Check("sample: top_p", _top_p, needs=_BASE),
)
"""The sampling-distribution rows, in order."""
