"""SingleTurnEnv: problem fields, the prompt, parsing, checking and scoring."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit import (
    ConfigError,
    EnvError,
    MessageStepResult,
    ParseResult,
    ProblemError,
    SingleTurnEnv,
    first_number,
)
from shared_envs import ArithmeticEnv


class FewShotEnv(SingleTurnEnv):
    system_prompt = "Answer briefly."
    few_shot = [  # noqa: RUF012 - the class attribute the API asks for
        {"role": "user", "content": "What is 1 + 1?"},
        {"role": "assistant", "content": "2"},
    ]
    parser = first_number


class UnitEnv(SingleTurnEnv):
    parser = first_number
    optional_fields = {"unit": "cm", "difficulty": None}  # noqa: RUF012


def reply(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


# --- construction ---------------------------------------------------------------


def test_keyword_construction_and_properties():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    assert env.question == "What is 2 + 3?"
    assert env.answer == "5"
    assert env.problem == {"question": "What is 2 + 3?", "answer": "5"}


def test_positional_construction_is_refused():
    with pytest.raises(TypeError):
        ArithmeticEnv("What is 2 + 3?", "5")  # type: ignore[misc]


def test_declared_optional_fields_get_defaults_or_given_values():
    env = UnitEnv(question="How long?", answer="3")
    assert env.problem["unit"] == "cm" and env.problem["difficulty"] is None
    env = UnitEnv(question="How long?", answer="3", unit="m")
    assert env.problem["unit"] == "m"


def test_unknown_field_is_a_problem_error_naming_it():
    with pytest.raises(ProblemError, match="'colour'") as info:
        ArithmeticEnv(question="q", answer="1", colour="red")
    assert "ArithmeticEnv" in str(info.value)
    assert "optional_fields" in str(info.value)


def test_missing_field_is_a_problem_error_naming_it():
    with pytest.raises(ProblemError, match="'answer'"):
        ArithmeticEnv(question="What is 2 + 3?")


@pytest.mark.parametrize("question", [5, None, ["What?"], b"bytes"])
def test_question_must_be_a_string(question):
    with pytest.raises(ProblemError, match="'question' to be a string"):
        ArithmeticEnv(question=question, answer="5")


def test_answer_may_be_a_number():
    env = ArithmeticEnv(question="What is 2 + 3?", answer=5)
    assert env.check("5", env.answer)


# --- the prompt -----------------------------------------------------------------


async def test_messages_are_system_prompt_few_shot_then_question():
    env = FewShotEnv(question="What is 2 + 3?", answer="5")
    assert await env.initial_observation() == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is 1 + 1?"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "What is 2 + 3?"},
    ]


async def test_no_system_message_without_system_prompt():
    env = SingleTurnEnv(question="Hi?", answer="hi")
    assert await env.initial_observation() == [{"role": "user", "content": "Hi?"}]


async def test_few_shot_is_not_shared_or_mutated_across_instances():
    first = FewShotEnv(question="What is 2 + 3?", answer="5")
    second = FewShotEnv(question="What is 4 + 4?", answer="8")
    messages = await first.initial_observation()
    messages[1]["content"] = "MUTATED"
    messages.append({"role": "user", "content": "extra"})
    again = first.messages()
    assert again[1]["content"] == "What is 1 + 1?"
    assert (await second.initial_observation())[1]["content"] == "What is 1 + 1?"
    assert FewShotEnv.few_shot[0]["content"] == "What is 1 + 1?"
    assert len(FewShotEnv.few_shot) == 2


# --- check ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parsed", "answer", "expected"),
    [
        ("5", "5", True),
        ("5.0", "5", True),
        ("5", "5.00", True),
        ("1,000", "1000", True),
        ("0.5", 0.5, True),
        ("6", "5", False),
        ("Paris", "Paris ", True),
        (" Paris", "Paris", True),
        ("paris", "Paris", False),
        ("5 apples", "5", False),
    ],
)
def test_check_numbers_by_value_text_after_strip(parsed, answer, expected):
    env = SingleTurnEnv(question="q", answer=answer)
    assert env.check(parsed, answer) is expected


async def test_check_override_is_used():
    class LowerEnv(SingleTurnEnv):
        def check(self, parsed, answer):
            return parsed.lower() == str(answer).lower()

    result = await LowerEnv(question="Capital of France?", answer="Paris").step(reply("PARIS"))
    assert result.reward == 1.0 and result.metrics["correct"] == 1.0


# --- step and score -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reward", "correct", "parsed", "status"),
    [
        ("5", 1.0, 1.0, 1.0, "ok"),
        ("The answer is 5.", 1.0, 1.0, 1.0, "ok"),
        ("7", -0.25, 0.0, 1.0, "ok"),
        ("five", -0.5, 0.0, 0.0, "no_match"),
    ],
)
async def test_step_rewards_metrics_and_logs(text, reward, correct, parsed, status):
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    await env.initial_observation()
    result = await env.step(reply(text))
    assert result.episode_done is True
    assert result.reward == reward
    assert result.metrics == {"correct": correct, "parsed": parsed}
    assert result.logs["parse_status"] == status
    assert result.logs["answer"] == "5"
    assert result.next_messages == []


async def test_step_twice_raises_env_error():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    await env.step(reply("5"))
    with pytest.raises(EnvError, match="stepped twice"):
        await env.step(reply("5"))


async def test_unclosed_think_is_its_own_status_and_gets_reward_unparsed():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    result = await env.step(reply("<think>the answer is 5"))
    assert result.logs["parse_status"] == "unclosed_think"
    assert result.reward == ArithmeticEnv.reward_unparsed
    assert result.metrics == {"correct": 0.0, "parsed": 0.0}


async def test_a_closed_think_block_in_the_content_is_not_parsed():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    result = await env.step(reply("<think>maybe 4</think> 5"))
    assert result.logs["parse_status"] == "ok"
    assert result.logs["parsed"] == "5"
    assert result.reward == 1.0


async def test_missing_content_is_unparsed_not_an_exception():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    result = await env.step({"role": "assistant"})
    assert result.metrics["parsed"] == 0.0 and result.reward == -0.5


def last_word(text: str) -> str | None:
    words = text.split()
    return words[-1] if words else None


async def test_parser_may_be_a_plain_function():
    class WordEnv(SingleTurnEnv):
        parser = last_word

    env = WordEnv(question="Capital of France?", answer="Paris")
    result = await env.step(reply("It is Paris"))
    assert result.reward == 1.0 and result.logs["parsed"] == "Paris"
    empty = await WordEnv(question="Capital of France?", answer="Paris").step(reply("   "))
    assert empty.logs["parse_status"] == "no_match" and empty.metrics["parsed"] == 0.0


async def test_parser_function_returning_parse_result():
    def strict_yes(text: str) -> ParseResult:
        return ParseResult.ok("yes") if text.strip() == "yes" else ParseResult.fail("ambiguous")

    class YesEnv(SingleTurnEnv):
        parser = strict_yes

    result = await YesEnv(question="Yes?", answer="yes").step(reply("yes or no"))
    assert result.logs["parse_status"] == "ambiguous"


async def test_score_override_gives_full_control():
    class LengthPenaltyEnv(ArithmeticEnv):
        def score(self, message):
            result = super().score(message)
            return attrs.evolve(
                result,
                reward=result.reward - 0.01 * len(message["content"]),
                metrics={**result.metrics, "length": float(len(message["content"]))},
            )

    result = await LengthPenaltyEnv(question="What is 2 + 3?", answer="5").step(reply("5 !"))
    assert result.reward == pytest.approx(1.0 - 0.03)
    assert result.metrics == {"correct": 1.0, "parsed": 1.0, "length": 3.0}


async def test_score_override_replacing_everything():
    class ConstantEnv(SingleTurnEnv):
        def score(self, message):
            return MessageStepResult(reward=0.42, episode_done=True, metrics={"seen": 1.0})

    result = await ConstantEnv(question="q", answer="a").step(reply("x"))
    assert result.reward == 0.42 and result.metrics == {"seen": 1.0}


def formatted_and_correct(completion: str, answer: str) -> float:
    """A plain reward function: correct only counts with the <answer> format."""
    formatted = completion.startswith("<answer>") and completion.endswith("</answer>")
    inner = completion.removeprefix("<answer>").removesuffix("</answer>")
    return float(formatted and inner.strip() == str(answer))


async def test_a_plain_function_is_a_reward_fn_and_its_value_a_metric():
    class GatedEnv(ArithmeticEnv):
        reward_fn = formatted_and_correct

    result = await GatedEnv(question="What is 2 + 3?", answer="5").step(reply("5"))
    assert result.reward == 0.0  # right number, wrong format: gated to 0
    # a plain-function reward_fn reports no answer check: no `correct` from the parser,
    # which would say 1.0 for a reply the reward scored 0
    assert result.metrics == {"reward/total": 0.0, "reward/formatted_and_correct": 0.0}
    assert result.logs["parse_status"] is None
    result = await GatedEnv(question="What is 2 + 3?", answer="5").step(reply("<answer>5</answer>"))
    assert result.reward == 1.0 and result.metrics["reward/formatted_and_correct"] == 1.0
    assert GatedEnv.scoring.reward.name == "formatted_and_correct"
    assert not GatedEnv.scoring.ordering_known  # a plain function has no known bounds


async def test_reward_fn_from_mint_envkit_rewards():
    from mint_envkit.parsers import xml_tag
    from mint_envkit.rewards import correct, gated, valid_format

    class TaggedEnv(SingleTurnEnv):
        parser = xml_tag("answer")
        reward_fn = gated(correct(xml_tag("answer")), gate=valid_format(xml_tag("answer")))

    good = await TaggedEnv(question="2 + 3?", answer="5").step(reply("<answer>5.0</answer>"))
    assert good.reward == 1.0
    assert good.metrics["correct"] == 1.0 and good.metrics["parsed"] == 1.0
    assert good.metrics["reward/total"] == 1.0
    assert good.metrics["reward/format"] == 1.0
    assert good.metrics["parse/correct/ok"] == 1.0
    cut = await TaggedEnv(question="2 + 3?", answer="5").step(reply("<answer>5"))
    assert cut.reward == 0.0
    assert cut.metrics["parsed"] == 0.0 and cut.metrics["reward/format"] == 0.0
    assert cut.metrics["parse/format/truncated"] == 1.0
    assert cut.logs["parse_status"] == "truncated"


def test_unscored_metrics_count_as_zero():
    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")
    assert env.unscored_metrics() == {"correct": 0.0, "parsed": 0.0}


def test_unparsed_reward_follows_incorrect_when_unset():
    class Wrong(SingleTurnEnv):
        reward_incorrect = -0.25

    class Deeper(Wrong):
        reward_incorrect = -0.5

    # decided once, into the class's scoring; the class attribute stays what was written
    assert Wrong.scoring.reward_unparsed == -0.25 and Wrong.scoring.unparsed_follows
    assert Deeper.scoring.reward_unparsed == -0.5
    assert SingleTurnEnv.scoring.reward_unparsed == 0.0
    assert Wrong.reward_unparsed is None and SingleTurnEnv.reward_unparsed is None
    assert "unparsed -0.25 (follows reward_incorrect)" in str(Wrong.scoring)


def test_unparsed_above_incorrect_is_refused_at_class_definition():
    with pytest.raises(ConfigError) as info:

        class Lenient(SingleTurnEnv):
            reward_incorrect = -0.25
            reward_unparsed = 0.0

    message = str(info.value)
    assert "Lenient.reward_unparsed = 0.0" in message
    assert "reward_incorrect = -0.25" in message
    assert "stop answering" in message


def test_inherited_explicit_unparsed_is_checked_against_a_new_incorrect():
    class Base(SingleTurnEnv):
        reward_incorrect = 0.0
        reward_unparsed = -0.1

    with pytest.raises(ConfigError, match=r"reward_unparsed = -0\.1"):

        class Harsher(Base):
            reward_incorrect = -0.5


def test_reward_that_is_not_a_number_is_refused():
    with pytest.raises(ConfigError, match="reward_correct must be a number"):

        class Bad(SingleTurnEnv):
            reward_correct = "1"
