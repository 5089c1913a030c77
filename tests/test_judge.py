"""Judge / JudgedEnv with fake judge callables (offline, fast)."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.judge import Judge, JudgedEnv, JudgeResult
from mint_envkit.judge.model import judge_messages


class FakeJudge:
    """An async judge model: answers from a table, records calls and peak concurrency."""

    def __init__(self, reply: str = "ok <verdict>YES</verdict>", delay: float = 0.0) -> None:
        self.reply = reply
        self.delay = delay
        self.calls: list[list[dict]] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, messages: list[dict]) -> str:
        self.calls.append(messages)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(self.delay)
            if isinstance(self.reply, BaseException):
                raise self.reply
            return self.reply
        finally:
            self.running -= 1


@pytest.mark.parametrize(
    ("reply", "score", "status"),
    [
        ("fine. <verdict>YES</verdict>", 1.0, "ok"),
        ("<verdict>no</verdict>", 0.0, "ok"),
        ("<verdict>PASS</verdict>", 1.0, "ok"),
        ("<verdict>0.75</verdict>", 0.75, "ok"),
        ("<verdict>3/4</verdict>", 0.75, "ok"),
        ("I think yes", -1.0, "unparsed"),
        ("<verdict>maybe</verdict>", -1.0, "unparsed"),
    ],
)
async def test_verdicts(reply: str, score: float, status: str) -> None:
    judge = Judge(FakeJudge(reply), rubric="Is it polite?", on_failure=-1.0)
    result = await judge("Ask for a pen.", "Pen, please.")
    assert (result.score, result.status, result.text) == (score, status, reply)
    assert judge.counts["unparsed"] == (status == "unparsed")


async def test_prompt_holds_rubric_question_reply_and_answer() -> None:
    fake = FakeJudge()
    await Judge(fake, rubric="Is it right?")("What is 2+3?", "five", answer=5)
    text = fake.calls[0][1]["content"]
    assert all(part in text for part in ("Is it right?", "What is 2+3?", "five", "5"))
    assert judge_messages("r", "q", "a", None)[1]["content"].count("Reference") == 0


async def test_cache_per_rubric_question_reply_answer() -> None:
    fake = FakeJudge()
    judge = Judge(fake, rubric="Polite?")
    first = await judge("q", "reply")
    second = await judge("q", "reply")
    await judge("q", "other reply")
    await judge("q", "reply", answer="x")
    assert not first.cached and second.cached and second.score == first.score
    assert len(fake.calls) == 3
    assert dict(judge.counts) == {"requests": 4, "cached": 1, "calls": 3}
    other_rubric = Judge(fake, rubric="Short?")
    await other_rubric("q", "reply")
    assert len(fake.calls) == 4


async def test_the_cache_keeps_the_most_recently_used_verdicts() -> None:
    fake = FakeJudge()
    judge = Judge(fake, rubric="Polite?", cache_size=2)
    for reply in ("a", "b", "a", "c"):  # the second "a" is a hit: "b" is now the oldest
        await judge("q", reply)
    assert len(fake.calls) == 3
    await judge("q", "a")  # kept
    assert len(fake.calls) == 3
    await judge("q", "b")  # dropped for "c"
    assert len(fake.calls) == 4
    no_cache = Judge(fake, rubric="Polite?", cache_size=0)
    await no_cache("q", "a")
    await no_cache("q", "a")
    assert len(fake.calls) == 6


async def test_identical_requests_in_flight_share_one_call() -> None:
    fake = FakeJudge(delay=0.05)
    judge = Judge(fake, rubric="Polite?")
    results = await asyncio.gather(*(judge("q", "same") for _ in range(5)))
    assert len(fake.calls) == 1
    assert sum(result.cached for result in results) == 4


async def test_concurrency_is_limited() -> None:
    fake = FakeJudge(delay=0.02)
    judge = Judge(fake, rubric="Polite?", max_concurrency=3)
    await asyncio.gather(*(judge("q", f"reply {i}") for i in range(12)))
    assert len(fake.calls) == 12 and fake.peak == 3


async def test_failures_are_counted_not_raised_and_not_cached() -> None:
    fake = FakeJudge(RuntimeError("judge backend down"))
    judge = Judge(fake, rubric="Polite?", on_failure=0.5)
    result = await judge("q", "r")
    assert result.status == "failed" and result.score == 0.5
    assert "judge backend down" in result.text
    await judge("q", "r")
    assert len(fake.calls) == 2 and judge.counts["failed"] == 2
    assert result.metrics("judge")["judge/failed"] == 1.0


async def test_a_slow_judge_times_out() -> None:
    judge = Judge(FakeJudge(delay=5.0), rubric="Polite?", timeout=0.05)
    result = await judge("q", "r")
    assert result.status == "failed" and "timed out" in result.text


async def test_a_judge_returning_a_non_string_fails() -> None:
    async def complete(messages: list[dict]) -> str:
        return 1  # type: ignore[return-value]

    result = await Judge(complete, rubric="Polite?")("q", "r")
    assert result.status == "failed" and "int" in result.text


def test_one_judge_serves_several_event_loops() -> None:
    fake = FakeJudge(delay=0.01)
    judge = Judge(fake, rubric="Polite?", max_concurrency=2)
    for run in range(2):
        asyncio.run(asyncio.wait_for(judge("q", f"reply {run}"), 5))
    assert len(fake.calls) == 2


class PoliteEnv(JudgedEnv):
    judge = Judge(FakeJudge("polite. <verdict>YES</verdict>"), rubric="Is the reply polite?")


async def test_judged_env_reward_metrics_and_logs() -> None:
    env = PoliteEnv(question="Ask me for a pen.")
    result = await env.step({"role": "assistant", "content": "Could I borrow a pen?"})
    assert result.reward == 1.0 and result.episode_done
    assert result.metrics["judge/score"] == 1.0 and result.metrics["judge/failed"] == 0.0
    assert result.logs["judge_text"] == "polite. <verdict>YES</verdict>"
    assert result.logs["judge_status"] == "ok"


async def test_judged_env_without_a_judge_is_a_config_error() -> None:
    class NoJudge(JudgedEnv):
        pass

    with pytest.raises(ConfigError, match="judge"):
        await NoJudge(question="q").step({"role": "assistant", "content": "a"})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rubric": ""},
        {"rubric": "r", "max_concurrency": 0},
        {"rubric": "r", "timeout": -1},
        {"rubric": "r", "cache_size": -1},
        {"rubric": "r", "on_failure": "x"},
    ],
)
def test_bad_judge_settings(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        Judge(FakeJudge(), **kwargs)


def test_result_logs() -> None:
    result = JudgeResult(score=0.0, status="unparsed", text="hmm")
    assert result.logs("j") == {"j_text": "hmm", "j_status": "unparsed"}


async def test_judged_env_without_a_reference_answer_reports_no_correct() -> None:
    env = PoliteEnv(question="Say nothing at all.")
    result = await env.step({"role": "assistant", "content": "None"})
    assert result.reward == 1.0  # the judge's verdict
    assert "correct" not in result.metrics  # never "None" == str(None)
    assert result.logs["answer"] is None


async def test_judged_env_with_a_reference_answer_checks_it() -> None:
    env = PoliteEnv(question="What is 2 + 3?", answer="5")
    right = await env.step({"role": "assistant", "content": "5"})
    assert right.metrics["correct"] == 1.0
    wrong = await PoliteEnv(question="What is 2 + 3?", answer="5").step(
        {"role": "assistant", "content": "None"}
    )
    assert wrong.metrics["correct"] == 0.0


def test_judged_env_wrong_answer_reward_is_the_judges_no() -> None:
    assert PoliteEnv.wrong_answer_reward() == 0.0

    class Mixed(PoliteEnv):
        def combine(self, result, verdict):
            return result.reward + verdict.score

    assert Mixed.wrong_answer_reward() is None
