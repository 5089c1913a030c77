"""Multi-turn and tool envs: free turns, rewards that read the env's own words,
substring wins, tool-use bonuses, stalling until the turns run out.
"""

from __future__ import annotations

import re

from mint_envkit import (
    Feedback,
    MultiTurnEnv,
    Parser,
    RewardContext,
    ToolEnv,
    component,
    correct,
    same_number,
    tool,
    weighted,
)

from .numeric import addition, evaluate
from .zoo import Demo, pair, read_number

SECRETS = ["42", "7", "88", "15", "63", "29", "71", "3"]


def secrets() -> list[dict]:
    return [
        {"question": "I picked a number from 1 to 100. Guess it.", "answer": s} for s in SECRETS
    ]


# --- 42. guess the number: a wrong guess costs, a reply that is no guess is free ---
# Known class: per-turn shaping that penalises wrong attempts but not non-attempts
# (verifiers #354: a parse failure scored as no signal); tinker-cookbook's guess-number
# recipe shape.


class Guess(MultiTurnEnv):
    system_prompt = "Reply with one number per turn; I say higher or lower."
    required_fields = ("question", "answer")
    max_turns = 6

    def unparsed(self) -> Feedback:
        return Feedback(reply="Please reply with one number.")  # BUG: free, unlike a wrong guess

    async def respond(self, message):
        said = read_number(message["content"])
        if said is None:
            return self.unparsed()
        secret = float(self.problem["answer"])
        if float(said) == secret:
            return Feedback(reward=1.0, done=True)
        return Feedback(reply="Higher." if secret > float(said) else "Lower.", reward=-0.1)


class GuessFixed(Guess):
    def unparsed(self) -> Feedback:
        return Feedback(reply="Please reply with one number.", reward=-0.1)


pair(
    "guess_unparsed_free",
    "multi-turn",
    "each wrong guess costs -0.1, a turn without a number costs nothing",
    "verifiers #354 (parse failure as no signal); class: shaping that spares non-attempts",
    Guess,
    GuessFixed,
    secrets(),
    Demo(lambda p: ""),
    context_overflow_reward=-0.6,  # a cut-off reply: no more than a whole game of wrong guesses
    failed_parse_reward=-0.6,
)


# --- 43. the end-of-game reward reads the transcript, reveal included ---
# Known class: a rubric's `answer in completion` over every message after the prompt,
# which in a multi-turn env holds the env's own replies (verifiers multi-turn
# completions include env responses).

ANIMALS = ["otter", "falcon", "badger", "lizard", "salmon", "beetle", "heron", "walrus"]


def animals() -> list[dict]:
    return [
        {"question": "Guess my secret animal, one word per turn.", "answer": a} for a in ANIMALS
    ]


class Reveal(MultiTurnEnv):
    system_prompt = "Reply with one animal name per turn."
    required_fields = ("question", "answer")
    max_turns = 4

    async def setup(self):
        self.transcript = []

    def final_reward(self, reveal: str) -> float:
        text = " ".join([*self.transcript, reveal]).lower()
        return float(self.problem["answer"] in text)  # BUG: the reveal is in the transcript

    async def respond(self, message):
        guess = message["content"].strip().rstrip(".").lower()
        secret = self.problem["answer"]
        self.transcript.append(message["content"])
        if guess == secret:
            return Feedback(reward=1.0, done=True)
        if self.turns >= self.max_turns:
            reveal = f"Out of guesses: it was a {secret}."
            return Feedback(reply=reveal, reward=self.final_reward(reveal), done=True)
        hint = f"No. It starts with '{secret[0]}'."
        self.transcript.append(hint)
        return Feedback(reply=hint)


class RevealFixed(Reveal):
    def final_reward(self, reveal: str) -> float:
        return 0.0


pair(
    "reveal_then_score_transcript",
    "multi-turn",
    "after the last turn the env reveals the animal and scores 'the animal is in the "
    "transcript': every episode that runs out of turns wins",
    "class: rewards over env-written text (answer in completion, env turns included)",
    Reveal,
    RevealFixed,
    animals(),
    Demo(lambda p: "dog"),
)


# --- 44. twenty questions won by naming the animal anywhere ---
# Visual-RFT #79 (https://github.com/Liuziyu77/Visual-RFT/issues/79: a listing of options
# accepted); anchors.md (answers hidden in lists when a reward checks contains).

TRAITS = {
    "otter": {"swim", "fur", "mammal"},
    "falcon": {"fly", "bird", "feathers"},
    "badger": {"fur", "mammal", "dig"},
    "lizard": {"scales", "reptile"},
    "salmon": {"swim", "fish", "scales"},
    "beetle": {"insect", "fly"},
    "heron": {"fly", "bird", "feathers", "swim"},
    "walrus": {"swim", "mammal", "tusks"},
}


class TwentyQuestions(MultiTurnEnv):
    system_prompt = "Ask yes/no questions about my animal, or guess with 'Is it a <animal>?'."
    required_fields = ("question", "answer")
    max_turns = 5

    def guessed(self, text: str) -> bool:
        return self.problem["answer"] in text  # BUG: naming it anywhere wins

    async def respond(self, message):
        text = message["content"].strip().lower()
        if self.guessed(text):
            return Feedback(reward=1.0, done=True)
        traits = TRAITS[self.problem["answer"]]
        return Feedback(reply="Yes." if any(t in text for t in traits) else "No.")


class TwentyQuestionsFixed(TwentyQuestions):
    def guessed(self, text: str) -> bool:
        found = re.fullmatch(r"(?:is it an? )?([a-z]+)\??\.?", text)
        return bool(found) and found.group(1) == self.problem["answer"]


pair(
    "twenty_q_substring",
    "multi-turn",
    "a guess wins when the secret is a substring of the message: 'Is it an otter, a falcon or "
    "a badger?' wins",
    "https://github.com/Liuziyu77/Visual-RFT/issues/79; anchors.md (contains checks)",
    TwentyQuestions,
    TwentyQuestionsFixed,
    animals(),
    Demo(lambda p: "Is it " + ", ".join(ANIMALS) + "?"),
)


# --- 45. a bonus per tool call, paid whatever the answer ---
# Visual-Agent/DeepEyes #83 (https://github.com/Visual-Agent/DeepEyes/issues/83: the tool
# reward is the number of calls x 0.5, "nothing to do with whether the answer is accurate").


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression (+ - * / and parentheses).

    Args:
        expression: the expression, e.g. "12 + 7".
    """
    value = evaluate(expression)
    if value is None:
        return "error: not an arithmetic expression"
    return str(float(value)) if value.denominator != 1 else str(value.numerator)


def tool_calls(context: RewardContext) -> float:
    return float(sum(len(m.get("tool_calls") or []) for m in context.conversation))


def used_tool_and_right(context: RewardContext) -> float:
    value = read_number(context.completion)
    right = value is not None and same_number(value, context.answer)
    return float(right and tool_calls(context) > 0)


NUMBER_ONLY = Parser.from_function(read_number)
CALL = '<tool_call>{"name": "calculate", "arguments": {"expression": "1 + 1"}}</tool_call>'


class ToolBonus(ToolEnv):
    system_prompt = "Use the calculate tool, then reply with the number only."
    tools = [calculate]  # noqa: RUF012 - the API's class attribute
    max_turns = 5
    reward_fn = weighted(
        correct=(correct(NUMBER_ONLY), 1.0),
        tools=(component(tool_calls, bounds=(0.0, 10.0)), 0.1),  # BUG: per call, right or wrong
    )


class ToolBonusFixed(ToolBonus):
    reward_fn = weighted(
        correct=(correct(NUMBER_ONLY), 1.0),
        tools=(component(used_tool_and_right, bounds=(0.0, 1.0)), 0.1),
    )


pair(
    "tool_call_bonus",
    "multi-turn",
    "+0.1 per tool call whatever the answer: four calls and a wrong answer beat a wrong answer",
    "https://github.com/Visual-Agent/DeepEyes/issues/83",
    ToolBonus,
    ToolBonusFixed,
    addition(),
    Demo(lambda p: [CALL] * 4 + ["0"]),
)


# --- 46. running out of turns pays 0, a wrong answer -1 ---
# Known class: the ordering rule (no reply without an answer may earn more than a wrong
# one), unchecked for MultiTurnEnv (its wrong-answer reward is unknown to the kit);
# tinker-cookbook context overflow -0.1 vs format -1 (anchors.md).


class Clarify(MultiTurnEnv):
    system_prompt = "Answer with a number. If the question is unclear, ask."
    required_fields = ("question", "answer")
    max_turns = 3  # BUG: max_turns_reward stays 0.0, above a wrong answer's -1.0

    async def respond(self, message):
        value = read_number(message["content"])
        if value is None:
            return Feedback(reply="Please answer with a number.")
        right = same_number(value, self.problem["answer"])
        return Feedback(reward=1.0 if right else -1.0, done=True)


class ClarifyFixed(Clarify):
    max_turns_reward = -1.0


pair(
    "stall_beats_wrong",
    "multi-turn",
    "a wrong answer earns -1, stalling until the turns run out earns the default 0",
    "docs/writing-envs.md (the ordering rule; unchecked for MultiTurnEnv); anchors.md",
    Clarify,
    ClarifyFixed,
    addition(),
    Demo(lambda p: "Could you say that again?"),
    context_overflow_reward=-1.0,  # the kit cannot know a MultiTurnEnv's wrong answer: set
    failed_parse_reward=-1.0,
)
