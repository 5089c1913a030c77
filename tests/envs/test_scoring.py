"""Scoring sees the content; the thinking is in message["thinking"] and with_thinking()."""

from __future__ import annotations

from mint_envkit import (
    DatasetBuilder,
    Parser,
    ScriptedPolicy,
    SingleTurnEnv,
    boxed,
    last_number,
    with_thinking,
    xml_tag,
)
from mint_envkit.rewards import component, correct, gated, valid_format, weighted


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


# One scoring contract: `correct` and `parsed` agree with what gave the reward.

ADDITION = [{"question": "2+3?", "answer": "5"}]


def scripted_group(env, replies, *, end_with_stop=True):
    builder = DatasetBuilder(
        env=env,
        problems=ADDITION,
        batch_size=1,
        group_size=len(replies),
        model_name="mint-envkit/tiny-qwen3",
    )
    report = ScriptedPolicy(replies, end_with_stop=end_with_stop).run_sync(builder)
    (group,) = report.groups
    assert group.error is None, group.error
    return group


class BoxedRewardEnv(SingleTurnEnv):
    """No parser of its own: the reward and `correct` both come from reward_fn."""

    reward_fn = correct(boxed)


def test_correct_comes_from_the_reward_fn_not_the_default_parser():
    group = scripted_group(BoxedRewardEnv, ["\\boxed{5}", "7"])
    assert group.rewards == [1.0, 0.0]
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0]
    assert [m["parsed"] for m in group.metrics] == [1.0, 0.0]
    assert [log["parse_status"] for log in group.logs] == ["ok", "no_match"]
    assert [log["parsed"] for log in group.logs] == ["5", None]


class GatedEnv(SingleTurnEnv):
    parser = boxed
    reward_fn = gated(correct(boxed), gate=valid_format(xml_tag("answer")))


class WeightedEnv(SingleTurnEnv):
    reward_fn = weighted(
        answer=(correct(last_number), 1.0), fmt=(valid_format(xml_tag("answer")), 0.1)
    )


def test_correct_inside_gated_counts_only_when_the_gate_passes():
    replies = ["<answer>\\boxed{5}</answer>", "\\boxed{5}", "<answer>\\boxed{7}</answer>"]
    group = scripted_group(GatedEnv, replies)
    assert group.rewards == [1.0, 0.0, 0.0]
    # the right answer without the <answer> tag earned nothing: it is not counted correct
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0, 0.0]
    assert [m["parsed"] for m in group.metrics] == [1.0, 1.0, 1.0]


def test_correct_inside_weighted_is_the_answer_part():
    group = scripted_group(WeightedEnv, ["<answer>5</answer>", "5", "<answer>7</answer>", "x"])
    assert group.rewards == [1.1, 1.0, 0.1, 0.0]
    assert [m["correct"] for m in group.metrics] == [1.0, 1.0, 0.0, 0.0]
    assert [m["parsed"] for m in group.metrics] == [1.0, 1.0, 1.0, 0.0]
    assert [log["parse_status"] for log in group.logs] == ["ok", "ok", "ok", "no_match"]


def short(completion: str, answer: str) -> float:
    return float(len(completion) < 5)


class NoAnswerCheckEnv(SingleTurnEnv):
    """reward_fn checks no answer: there is no `correct` to report."""

    parser = last_number
    reward_fn = weighted(short=(component(short), 1.0), fmt=(valid_format(boxed), 0.5))


def test_a_reward_fn_without_an_answer_check_reports_no_correct():
    group = scripted_group(NoAnswerCheckEnv, ["5", "\\boxed{7} is it"])
    assert group.rewards == [1.0, 0.5]
    for metrics, log in zip(group.metrics, group.logs, strict=True):
        assert "correct" not in metrics and "parsed" not in metrics
        assert log["parse_status"] is None and log["parsed"] is None


def test_a_cut_off_reply_reports_correct_only_where_the_env_checks_answers():
    (no_check,) = scripted_group(NoAnswerCheckEnv, ["5"], end_with_stop=False).metrics
    assert no_check["truncated"] == 1.0
    assert "correct" not in no_check and "parsed" not in no_check
    (checked,) = scripted_group(BoxedRewardEnv, ["5"], end_with_stop=False).metrics
    assert checked["correct"] == 0.0 and checked["parsed"] == 0.0
