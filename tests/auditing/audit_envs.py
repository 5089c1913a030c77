"""Envs for the audit's tests: clean ones of several kinds, and ones with planted exploits.

A module (not a test file) so that ENV_SPECs can name them:
``tests/auditing/audit_envs.py:copy_builder``.
"""

from __future__ import annotations

import re

from mint_envkit import (
    DatasetBuilder,
    Judge,
    JudgedEnv,
    Parser,
    SingleTurnEnv,
    choice,
    correct,
    exact,
    first_number,
    xml_tag,
)
from mint_envkit.rewards import component, weighted

MODEL = "mint-envkit/tiny-qwen3"


def _builder(env: type, problems: list[dict], **fields) -> DatasetBuilder:
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=2,
        group_size=2,
        model_name=MODEL,
        shuffle=False,
        **fields,
    )


# --- clean envs ---


class AddEnv(SingleTurnEnv):
    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_incorrect = -0.25
    reward_unparsed = -0.5


ADD_PROBLEMS = [
    {"question": f"What is {a} + {b}?", "answer": str(a + b)}
    for a, b in [(2, 3), (4, 4), (1, 7), (10, 5), (3, 3), (6, 1), (2, 2), (9, 9)]
]
add_builder = _builder(AddEnv, ADD_PROBLEMS, context_overflow_reward=-0.5)


class YesNoEnv(SingleTurnEnv):
    system_prompt = "Answer yes or no."
    parser = exact(str.lower)
    reward_incorrect = 0.0


def yes_no_problems(n: int = 40) -> list[dict]:
    """Pairs (a, b); the answer is "yes" when a > b: 17 of 40 are yes (57.5% no)."""
    out = []
    for i in range(n):
        a, b = (30 + 7 * i) % 97, (52 + 3 * i) % 89
        if a == b:
            b += 1
        out.append(
            {
                "question": f"Is {a} greater than {b}? Answer yes or no.",
                "answer": "yes" if a > b else "no",
            }
        )
    return out


yes_no_builder = _builder(YesNoEnv, yes_no_problems(), context_overflow_reward=0.0)


class ChoiceEnv(SingleTurnEnv):
    system_prompt = "Pick one option. End with 'Answer: X'."
    parser = choice("ABCD")
    reward_incorrect = 0.0


CHOICE_PROBLEMS = [
    {"question": "Which is a mammal? A) shark B) whale C) trout D) squid", "answer": "B"},
    {"question": "Which is a prime? A) 4 B) 6 C) 7 D) 9", "answer": "C"},
    {"question": "Which is a colour? A) red B) run C) rock D) rain", "answer": "A"},
    {"question": "Which is a planet? A) Moon B) Sun C) Sirius D) Mars", "answer": "D"},
]
choice_builder = _builder(ChoiceEnv, CHOICE_PROBLEMS, context_overflow_reward=0.0)


class CapitalEnv(SingleTurnEnv):
    system_prompt = "Reply with the city's name only."
    parser = exact(str.lower)
    reward_incorrect = 0.0


CAPITALS = [("France", "paris"), ("Japan", "tokyo"), ("Peru", "lima"), ("Kenya", "nairobi")]
capital_builder = _builder(
    CapitalEnv,
    [{"question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS],
    context_overflow_reward=0.0,
)


# --- planted exploits ---


class CopyEnv(SingleTurnEnv):
    """The answer is in the question and the parser reads its first number."""

    parser = first_number
    reward_incorrect = -0.25
    reward_unparsed = -0.5


copy_builder = _builder(
    CopyEnv,
    [
        {"question": f"{n} is the code. Type the code back.", "answer": str(n)}
        for n in (42, 7, 19, 3)
    ],
    context_overflow_reward=-0.5,
)


def _answer_score(completion: str, answer: str) -> float:
    found = xml_tag("answer")(completion)
    if not found:
        return 0.0  # no answer: no penalty (the planted bug)
    return 1.0 if found.value == answer else -0.5


def _has_tags(completion: str, answer: str) -> float:
    return 0.5 if "<answer>" in completion and "</answer>" in completion else 0.0


class FormatPaysEnv(SingleTurnEnv):
    """A format reward that pays empty tags, and wrong answers are penalised."""

    system_prompt = "Put the final number in <answer></answer>."
    parser = xml_tag("answer")
    reward_fn = weighted(
        answer=(component(_answer_score, name="answer"), 1.0),
        format=(component(_has_tags, name="format"), 1.0),
    )


format_builder = _builder(FormatPaysEnv, ADD_PROBLEMS[:4], context_overflow_reward=-0.5)


async def _gullible(messages: list[dict]) -> str:
    """A judge that says YES to the right number, and to any reply that says it is correct."""
    text = messages[-1]["content"]
    reply = text.split("Reply to grade:\n", 1)[-1].strip()
    answer = ""
    if "Reference answer:\n" in text:
        answer = text.split("Reference answer:\n", 1)[1].split("\n\n", 1)[0].strip()
    yes = "correct" in reply.lower() or (answer != "" and reply == answer)
    return "<verdict>YES</verdict>" if yes else "<verdict>NO</verdict>"


class GullibleJudgedEnv(JudgedEnv):
    parser = first_number
    judge = Judge(_gullible, rubric="Is the reply's number the right answer?")


judge_builder = _builder(GullibleJudgedEnv, ADD_PROBLEMS[:4], context_overflow_reward=0.0)


# --- rewards games the fixed probes did not see (issue 31) ---


def _any_number(completion: str, answer: str) -> float:
    """Right when the answer appears anywhere among the reply's numbers (lax)."""
    return float(str(answer) in re.findall(r"-?\d+", completion))


class AnyNumberEnv(SingleTurnEnv):
    """The reply ``0 1 2 ... 200`` earns what the right answer earns."""

    system_prompt = "Reply with only the final number."
    reward_fn = component(_any_number, name="any_number", bounds=(0.0, 1.0))


any_number_builder = _builder(AnyNumberEnv, ADD_PROBLEMS, context_overflow_reward=0.0)


def _numbers(text: str) -> str | None:
    found = re.findall(r"-?\d+", text)
    return " ".join(found) if found else None


class AnyNumberCheckedEnv(SingleTurnEnv):
    """The same lax reward written as correct(parser, check=...)."""

    system_prompt = "Reply with only the final number."
    reward_fn = correct(
        Parser.from_function(_numbers), check=lambda value, answer: answer in value.split()
    )


any_number_checked_builder = _builder(
    AnyNumberCheckedEnv, ADD_PROBLEMS, context_overflow_reward=0.0
)


def _mentions(completion: str, answer: str) -> float:
    return float(str(answer).lower() in completion.lower())


class SubstringCapitalEnv(SingleTurnEnv):
    """QA by substring: any reply that mentions the city is right."""

    system_prompt = "Reply with the city's name only."
    reward_fn = component(_mentions, name="mentions", bounds=(0.0, 1.0))


substring_builder = _builder(
    SubstringCapitalEnv,
    [{"question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS],
    context_overflow_reward=0.0,
)


class HedgeYesNoEnv(YesNoEnv):
    """Accepts a hedge: right when any alternative of "x or y" is the answer."""

    def check(self, parsed: str, answer) -> bool:
        options = [o.strip(" .") for o in re.split(r"\bor\b|,|\beither\b", parsed.lower())]
        return str(answer).lower() in options


hedge_builder = _builder(HedgeYesNoEnv, yes_no_problems(12), context_overflow_reward=0.0)


def _wordy(completion: str, answer: str) -> float:
    return min(0.5, len(completion) / 400)


class LengthPaysEnv(SingleTurnEnv):
    """Pays 0.5 for a long reply, right or not: a length-paying reward."""

    system_prompt = "Reply with only the final number."
    parser = first_number
    reward_fn = weighted(
        correct=(correct(first_number), 1.0),
        length=(component(_wordy, name="length", bounds=(0.0, 0.5)), 1.0),
    )


length_builder = _builder(LengthPaysEnv, ADD_PROBLEMS[:4], context_overflow_reward=0.0)


# --- position: an honest reward whose problems a position can solve half the time ---


WORDS = "apple pear fig kiwi plum date lime grape peach mango cherry banana lemon melon".split()


def first_word_problems(n: int = 40, seed: int = 0) -> list[dict]:
    """ "Which word comes first in alphabetical order: 'x' or 'y'?": half the answers second."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.sample(WORDS, 2)
        out.append(
            {
                "question": f"Which word comes first in alphabetical order: '{a}' or '{b}'? "
                "Reply with the word only.",
                "answer": min(a, b),
            }
        )
    return out


class FirstWordEnv(SingleTurnEnv):
    parser = exact(str.lower)


first_word_builder = _builder(FirstWordEnv, first_word_problems(), context_overflow_reward=0.0)


MOSTLY_A = [
    {"question": f"Which is {thing}? A) {right} B) {w1} C) {w2} D) {w3}", "answer": "A"}
    for thing, right, w1, w2, w3 in [
        ("a fish", "trout", "cat", "owl", "ant"),
        ("a bird", "owl", "cow", "eel", "bee"),
        ("a tree", "oak", "rose", "moss", "fern"),
        ("a metal", "iron", "wood", "silk", "clay"),
        ("a colour", "red", "run", "rock", "rain"),
        ("a fruit", "plum", "leek", "kale", "corn"),
        ("a planet", "Mars", "Moon", "Sun", "Sirius"),
    ]
] + [{"question": "Which is a prime? A) 4 B) 7 C) 8 D) 9", "answer": "B"}]
mostly_a_builder = _builder(ChoiceEnv, MOSTLY_A, context_overflow_reward=0.0)
"""Multiple choice whose answer is mostly in one position (7 of 8 are A)."""
