"""The audit's scripted replies (mint_envkit.auditing.replies)."""

from __future__ import annotations

import tracemalloc

from mint_envkit.auditing.replies import probe_replies


def _listed(reply: str) -> list[str]:
    return reply.removeprefix("<answer>").removesuffix("</answer>").split()


def _replies(answers: list[str]) -> dict:
    problem = {"question": "What is the total?", "answer": answers[0]}
    messages = [{"role": "user", "content": "What is the total?"}]
    return probe_replies(
        problem,
        messages,
        [],
        template="<answer>{}</answer>",
        reference=f"<answer>{answers[0]}</answer>",
        answers=answers,
        common=answers[0],
        reply_limit=64,
        count_tokens=len,
    )


def test_the_range_probe_lists_numbers_from_the_lowest_answer_in_both_orders():
    first, reversed_ = _replies(["12", "30", "7"])["enumerate_range"].replies
    # 10 below the smallest answer to 10 above the largest
    assert _listed(first) == [str(v) for v in range(-3, 41)]
    assert _listed(reversed_) == _listed(first)[::-1]


def test_answers_far_apart_do_not_build_the_whole_span():
    # reasoning-gym's basic_arithmetic has answers of 12 digits: the range between the
    # smallest and the largest once took all 24 GB of the machine before it was cut to
    # its first numbers; it is now bounded before it is built
    tracemalloc.start()
    try:
        probe = _replies(["3", "2000000", "-5"])["enumerate_range"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # bytes; the whole span of 2 million strings is over 100 MB
    # the 200 numbers (the most an enumeration lists) from 10 below the smallest answer
    assert _listed(probe.replies[0]) == [str(v) for v in range(-15, 185)]


def test_non_finite_or_fractional_answers_have_no_range_probe():
    assert "enumerate_range" not in _replies(["inf", "3"])
    assert "enumerate_range" not in _replies(["2.5", "3"])
