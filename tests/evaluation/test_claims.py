"""The uncut re-measure's ladder (mint_envkit.evaluation.claims.uncut_budget)."""

from __future__ import annotations

from mint_envkit.evaluation.claims import uncut_budget
from mint_envkit.runs.record import Figures


def _measured(rates: dict[int, float]):
    asked: list[int] = []

    async def measure(max_tokens: int) -> Figures:
        asked.append(max_tokens)
        return Figures(truncated_rate=rates[max_tokens], max_tokens=max_tokens)

    return measure, asked


async def test_a_verbose_model_is_re_measured_until_it_is_not_cut_off():
    # the learning demo's shape: 77.5% cut off at 16 tokens, 20% at 32, 2.5% at 64
    measure, asked = _measured({32: 0.2, 64: 0.025, 128: 0.0})
    found = await uncut_budget(measure, 16, ceiling=2048, first_rate=0.775)
    assert found is not None and found[0] == 64 and asked == [32, 64]


async def test_replies_that_never_end_stop_the_ladder_once_more_room_ends_none():
    # SmolLM2 on leg_counting: 10% cut off at 96 tokens, then 7.5% at every larger limit
    measure, asked = _measured({192: 0.075, 384: 0.075, 768: 0.075})
    assert await uncut_budget(measure, 96, ceiling=2048, first_rate=0.1) is None
    assert asked == [192, 384]  # 768 (the most costly) is not evaluated

    measure, asked = _measured({192: 0.1, 384: 0.0, 768: 0.0})
    assert await uncut_budget(measure, 96, ceiling=2048, first_rate=0.1) is None
    assert asked == [192]  # as many cut off with twice the room


async def test_without_the_first_rate_every_growth_up_to_the_ceiling_is_tried():
    measure, asked = _measured({32: 0.5, 64: 0.5, 128: 0.5})
    assert await uncut_budget(measure, 16, ceiling=64) is None
    assert asked == [32, 64]
