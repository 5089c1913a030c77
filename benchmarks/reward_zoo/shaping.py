"""Reward shaping and plain-function rewards: weights, thinking, length, signs, cut-off
replies, exceptions, parsers that never match or were never passed.
"""

from __future__ import annotations

import re

from mint_envkit import (
    SingleTurnEnv,
    boxed,
    component,
    correct,
    exact,
    first_number,
    last_number,
    same_number,
    valid_format,
    weighted,
    xml_tag,
)

from .numeric import addition
from .zoo import Demo, pair, read_number

# --- 26. the weights of [accuracy, format] in the wrong order ---
# Known class: a weight list zipped with a list of reward functions in another order
# (TRL GRPOConfig.reward_weights, verifiers Rubric(funcs, weights) with weight-0 metrics);
# soup #814 (https://github.com/MakazhanAlpamys/Soup/issues/814: a format reward that
# pays structure around junk).

ANSWER_TAG = xml_tag("answer")


class WeightsSwapped(SingleTurnEnv):
    system_prompt = "Put the final number in <answer></answer>."
    reward_fn = weighted(
        accuracy=(correct(ANSWER_TAG), 0.0),  # BUG: weights meant (1.0, 0.0), swapped
        format=(valid_format(ANSWER_TAG), 1.0),
    )


class WeightsFixed(SingleTurnEnv):
    system_prompt = "Put the final number in <answer></answer>."
    reward_fn = weighted(
        accuracy=(correct(ANSWER_TAG), 1.0),
        format=(valid_format(ANSWER_TAG), 0.0),
    )


pair(
    "format_weight_swapped",
    "format",
    "reward weights swapped: accuracy weighs 0, format 1, so any tagged answer earns full reward",
    "class: reward_weights in another order than reward_funcs; "
    "https://github.com/MakazhanAlpamys/Soup/issues/814",
    WeightsSwapped,
    WeightsFixed,
    addition(),
    Demo(lambda p: "<answer>0</answer>"),
)


# --- 27. a reward that sees the thinking, and a parser that reads it ---
# verifiers PR #213 (https://github.com/PrimeIntellect-ai/verifiers/pull/213: math_verify
# "rewards even if thinking is not done"); verifiers #2027, tinker-cookbook #283.


def think_then_number(completion: str, answer: str) -> float:
    pattern = r"\s*<think>.+?</think>\s*-?\d+(?:\.\d+)?\s*"
    return float(re.fullmatch(pattern, completion, re.S) is not None)


class ThinkRead(SingleTurnEnv):
    system_prompt = "Think in <think></think>, then reply with the number only."
    reward_sees_thinking = True  # for the format part
    reward_fn = weighted(
        correct=(correct(first_number), 1.0),  # BUG: reads the thinking too
        format=(component(think_then_number, bounds=(0.0, 1.0)), 0.1),
    )


class ThinkReadFixed(ThinkRead):
    reward_fn = weighted(
        correct=(correct(first_number.after_thinking()), 1.0),
        format=(component(think_then_number, bounds=(0.0, 1.0)), 0.1),
    )


pair(
    "think_answer_counts",
    "format",
    "the reward reads the reply with its thinking and its parser does not skip it: the "
    "answer inside <think> alone passes",
    "https://github.com/PrimeIntellect-ai/verifiers/pull/213; verifiers #2027; "
    "tinker-cookbook #283",
    ThinkRead,
    ThinkReadFixed,
    addition(),
    Demo(lambda p: f"<think>{p['answer']}</think>"),
)


# --- 28. a distance reward with its sign lost ---
# NVlabs/alpamayo-recipes #29 (https://github.com/NVlabs/alpamayo-recipes/issues/29: a
# sign-inverted reward term; GRPO rewarded for worse agreement).


def closeness_inverted(completion: str, answer: str) -> float:
    value = read_number(completion)
    if value is None:
        return 0.0
    return min(1.0, abs(float(value) - float(answer)) / 10)  # BUG: meant 1 - min(...)


def closeness(completion: str, answer: str) -> float:
    value = read_number(completion)
    if value is None:
        return 0.0
    return 1.0 - min(1.0, abs(float(value) - float(answer)) / 10)


class Inverted(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(closeness_inverted, bounds=(0.0, 1.0))


class InvertedFixed(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(closeness, bounds=(0.0, 1.0))


pair(
    "inverted_distance_reward",
    "function",
    "a closeness reward missing its `1 -`: the further from the answer, the more it pays",
    "https://github.com/NVlabs/alpamayo-recipes/issues/29",
    Inverted,
    InvertedFixed,
    addition(),
    Demo(lambda p: str(int(p["answer"]) + 8)),
)


# --- 29. a penalty given as a negative number and subtracted ---
# stratosphereips/NetSecGame #478 (https://github.com/stratosphereips/NetSecGame/issues/478:
# `reward -= count * penalty` with penalty = -5 rewards what it meant to penalise).

WRONG_PENALTY = -0.5  # the config's penalty for a wrong answer


def penalised(completion: str, answer: str) -> float:
    value = read_number(completion)
    if value is None:
        return WRONG_PENALTY
    if same_number(value, answer):
        return 1.0
    return -WRONG_PENALTY  # BUG: "subtract the penalty" of a negative penalty: +0.5


def penalised_fixed(completion: str, answer: str) -> float:
    value = read_number(completion)
    if value is not None and same_number(value, answer):
        return 1.0
    return WRONG_PENALTY


class PenaltyInverted(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(penalised, bounds=(-0.5, 1.0))


class PenaltyFixed(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(penalised_fixed, bounds=(-0.5, 1.0))


pair(
    "sign_inverted_penalty",
    "function",
    "the wrong-answer penalty (-0.5) is subtracted, so a wrong guess earns +0.5",
    "https://github.com/stratosphereips/NetSecGame/issues/478",
    PenaltyInverted,
    PenaltyFixed,
    addition(),
    Demo(lambda p: str(int(p["answer"]) + 5)),
)


# --- 30. a "show your work" bonus paid whether or not the answer is right ---
# Anchors (cookbook and verifiers users: "additive format bonuses that destabilise
# GRPO"); DeepEyes #83 (https://github.com/Visual-Agent/DeepEyes/issues/83: a bonus
# independent of whether the answer is right).


def shows_work(completion: str, answer: str) -> float:
    return float(sum(1 for line in completion.splitlines() if line.strip()) >= 3)


def shows_work_when_right(completion: str, answer: str) -> float:
    found = last_number(completion)
    right = bool(found) and same_number(found.value, answer)
    return shows_work(completion, answer) if right else 0.0


class WorkBonus(SingleTurnEnv):
    system_prompt = "Show your work on separate lines, then give the number on the last line."
    reward_fn = weighted(
        correct=(correct(last_number), 1.0),
        work=(component(shows_work, bounds=(0.0, 1.0)), 0.2),  # BUG: paid to any reply
    )


class WorkBonusFixed(WorkBonus):
    reward_fn = weighted(
        correct=(correct(last_number), 1.0),
        work=(component(shows_work_when_right, bounds=(0.0, 1.0)), 0.2),
    )


pair(
    "length_bonus_lines",
    "format",
    "a +0.2 'shows work' bonus for 3+ lines, paid to any reply (a multi-line non-answer beats a wrong answer)",
    "https://github.com/Visual-Agent/DeepEyes/issues/83; anchors.md (additive format bonuses)",
    WorkBonus,
    WorkBonusFixed,
    addition(),
    Demo(lambda p: "Let me see.\nI add the two numbers.\nI am not sure of it."),
)


# --- 31. a reply cut off at the limit earns more than a wrong answer ---
# tinker-cookbook EnvFromMessageEnv (context overflow -0.1, a parse failure -1.0; anchors);
# tinker-cookbook PR #771 (0.9 for a missing stop token).


def plus_minus(completion: str, answer: str) -> float:
    value = read_number(completion)
    return 1.0 if value is not None and same_number(value, answer) else -1.0


class PlusMinus(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = plus_minus  # BUG: no bounds, so a cut-off reply keeps the default -0.1


class PlusMinusFixed(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(plus_minus, bounds=(-1.0, 1.0))


pair(
    "truncation_beats_wrong",
    "format",
    "wrong answers earn -1, a reply cut off at the token limit the default -0.1",
    "anchors.md (tinker-cookbook context overflow -0.1 vs parse failure -1.0; PR #771)",
    PlusMinus,
    PlusMinusFixed,
    addition(),
    Demo(lambda p: "Let me think about this step by step. " * 40, stop=False),
)


# --- 32. an exception in the reward caught as 0.0 while wrong answers earn -1 ---
# verifiers #354 (a parse failure silently scored 0; a legacy rubric turned every
# exception into 0.0; anchors.md item 1).


def graded(completion: str, answer: str) -> float:
    try:
        value = float(completion.strip())
    except ValueError:
        return 0.0  # BUG: no number earns more than a wrong number
    return 1.0 if value == float(answer) else -1.0


def graded_fixed(completion: str, answer: str) -> float:
    try:
        value = float(completion.strip())
    except ValueError:
        return -1.0
    return 1.0 if value == float(answer) else -1.0


class ExceptionZero(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(graded, bounds=(-1.0, 1.0))


class ExceptionZeroFixed(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    reward_fn = component(graded_fixed, bounds=(-1.0, 1.0))


pair(
    "exception_returns_zero",
    "function",
    "`except ValueError: return 0.0` in a reward where wrong answers earn -1",
    "verifiers #354; anchors.md item 1",
    ExceptionZero,
    ExceptionZeroFixed,
    addition(),
    Demo(lambda p: "I do not know."),
)


# --- 33. the answer read from a tag the prompt never asks for: always 0 ---
# verifiers #327 (https://github.com/PrimeIntellect-ai/verifiers/issues/327: the rubric's
# parser not used, every score 0.0); verifiers #277.


class WrongTag(SingleTurnEnv):
    system_prompt = "Put the final number in <answer></answer>."
    reward_fn = correct(xml_tag("final_answer"))  # BUG: the prompt says <answer>


class WrongTagFixed(SingleTurnEnv):
    system_prompt = "Put the final number in <answer></answer>."
    reward_fn = correct(xml_tag("answer"))


pair(
    "reward_always_zero",
    "function",
    "the reward parses <final_answer> while the prompt asks for <answer>: every reward is 0",
    "https://github.com/PrimeIntellect-ai/verifiers/issues/327; "
    "https://github.com/PrimeIntellect-ai/verifiers/issues/277",
    WrongTag,
    WrongTagFixed,
    addition(),
    Demo(lambda p: f"<answer>{p['answer']}</answer>", direction="less"),
)


# --- 34. a rubric missing its parser: the whole reply compared with the answer ---
# verifiers #277 (https://github.com/PrimeIntellect-ai/verifiers/issues/277: a Rubric
# without parser= falls back to `lambda x: x`; "reward calculations always returning 0,
# even when answers are correct").


class MissingParser(SingleTurnEnv):
    system_prompt = "Put the final answer in \\boxed{}."
    reward_fn = correct(exact())  # BUG: meant correct(boxed)


class MissingParserFixed(SingleTurnEnv):
    system_prompt = "Put the final answer in \\boxed{}."
    reward_fn = correct(boxed)


pair(
    "rubric_missing_parser",
    "function",
    "the prompt asks for \\boxed{} but the reward compares the whole reply: a reply that "
    "follows the prompt earns 0",
    "https://github.com/PrimeIntellect-ai/verifiers/issues/277",
    MissingParser,
    MissingParserFixed,
    addition(),
    Demo(lambda p: f"\\boxed{{{p['answer']}}}", direction="less"),
)
