"""The uncut re-measure's ladder (mint_envkit.evaluation.claims.uncut_budget)."""

from __future__ import annotations

from types import SimpleNamespace

from mint_envkit.evaluation.claims import claims_against_base, uncut_budget
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


def _result(checkpoint, label, correct, truncated, max_tokens):
    figures = Figures(correct=correct, truncated_rate=truncated, max_tokens=max_tokens)
    return SimpleNamespace(figures=figures, summary={"checkpoint": checkpoint, "label": label})


async def test_claims_against_a_cut_off_base_use_the_pair_evaluated_where_it_is_not(capsys):
    calls = []

    async def evaluate_at(max_tokens, checkpoints):
        calls.append((max_tokens, checkpoints))
        return [_result(c, str(c), 0.5 if c else 0.25, 0.0, max_tokens) for c in checkpoints]

    results = [_result(None, "base", 0.0, 0.5, 16), _result("tinker://a", "a", 0.5, 0.0, 16)]
    [(label, claim)] = await claims_against_base(results, evaluate_at)

    assert label == "a" and calls == [(32, [None]), (32, ["tinker://a"])]
    assert (claim.uncut_before.correct, claim.uncut_after.correct) == (0.25, 0.5)
    assert "evaluating it again at 32 tokens" in capsys.readouterr().err
    calls.clear()
    results[0] = _result(None, "base", 0.0, 0.0, 16)  # not cut off: nothing re-run
    [(_, claim)] = await claims_against_base(results, evaluate_at)
    assert calls == [] and claim.uncut_before is None
