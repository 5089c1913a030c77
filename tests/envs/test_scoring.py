"""Scoring sees the content; the thinking is in message["thinking"] and with_thinking()."""

from __future__ import annotations

from mint_envkit import (
    DatasetBuilder,
    Parser,
    ScriptedPolicy,
    SingleTurnEnv,
    boxed,
    with_thinking,
)
from mint_envkit.rewards import correct, valid_format, weighted


def think_then_box(text: str) -> str | None:
    """Format: a non-empty think block, then a box after it."""
    head, sep, tail = text.partition("</think>")
    if not sep or not head.strip().removeprefix("<think>").strip():
        return None
    return "ok" if boxed(tail) else None


class ThinkBoxEnv(SingleTurnEnv):
    parser = boxed
    reward_sees_thinking = True
    reward_fn = weighted(
        correct=(correct(boxed.after_thinking()), 1.0),
        format=(valid_format(Parser.from_function(think_then_box)), 0.5),
    )


def test_with_thinking():
    assert with_thinking({"role": "assistant", "content": "5"}) == "5"
    text = with_thinking({"role": "assistant", "content": "5", "thinking": "2+3"})
    assert text == "<think>\n2+3\n</think>\n\n5"


async def test_think_then_boxed_format_reward_through_the_renderer():
    builder = DatasetBuilder(
        env=ThinkBoxEnv,
        problems=[{"question": "What is 2 + 3?", "answer": "5"}],
        batch_size=1,
        group_size=3,
        model_name="mint-envkit/tiny-qwen3",
        renderer_name="qwen3",
    )
    replies = ["<think>2 + 3 = 5</think>\n\\boxed{5}", "\\boxed{5}", "<think>hm</think>5"]
    report = await ScriptedPolicy(replies).run(builder)
    (group,) = report.groups
    assert group.rewards == [1.5, 1.0, 0.0]
    assert [m["reward/format"] for m in group.metrics] == [1.0, 0.0, 0.0]
    assert [m["correct"] for m in group.metrics] == [1.0, 1.0, 0.0]


async def test_reward_fn_reads_the_content_by_default():
    class ContentOnly(ThinkBoxEnv):
        reward_sees_thinking = False

    env = ContentOnly(question="q", answer="5")
    result = await env.step({"role": "assistant", "content": "\\boxed{5}", "thinking": "x"})
    assert result.metrics["reward/format"] == 0.0 and result.metrics["reward/correct"] == 1.0
