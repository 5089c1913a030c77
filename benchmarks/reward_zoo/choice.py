"""Multiple choice: position bias, the longest option, letters read anywhere or in lists.

The dataset bugs (position, length) leave the reward honest: a trivial policy that
never reads the question scores well above chance, so "the model learned" means nothing.
"""

from __future__ import annotations

import re

from mint_envkit import Parser, SingleTurnEnv, choice, exact

from .zoo import Demo, build, case

# (question, right option, three wrong options)
BANK = [
    ("Which of these is a mammal?", "whale", ("shark", "trout", "squid")),
    ("Which of these is a prime number?", "7", ("4", "6", "9")),
    ("Which of these is a colour?", "red", ("run", "rock", "rain")),
    ("Which of these is a planet?", "Mars", ("Moon", "Sun", "Sirius")),
    ("Which of these is a metal?", "iron", ("wood", "glass", "wool")),
    ("Which of these is a vegetable?", "carrot", ("apple", "bread", "cheese")),
    ("Which of these is a tool?", "hammer", ("cloud", "river", "song")),
    ("Which of these is a musical instrument?", "violin", ("table", "spoon", "lamp")),
    ("Which of these is an ocean?", "Pacific", ("Sahara", "Alps", "Amazon")),
    ("Which of these is a bird?", "eagle", ("frog", "bee", "seal")),
    ("Which of these is a fruit?", "pear", ("potato", "onion", "leek")),
    ("Which of these is a gas at room temperature?", "oxygen", ("gold", "salt", "sand")),
]
LETTERS = "ABCD"


def _options(right: str, wrong: tuple[str, ...], position: int) -> list[str]:
    options = list(wrong)
    options.insert(position, right)
    return options


def lettered(positions: list[int]) -> list[dict]:
    """The bank with the right option at ``positions[i]`` (0 = A) in question i."""
    out = []
    for (question, right, wrong), position in zip(BANK, positions, strict=True):
        options = _options(right, wrong, position)
        listed = " ".join(f"{LETTERS[i]}) {text}" for i, text in enumerate(options))
        out.append({"question": f"{question} {listed}", "answer": LETTERS[position]})
    return out


BALANCED = [0, 1, 2, 3, 1, 3, 0, 2, 2, 0, 3, 1]


class Lettered(SingleTurnEnv):
    system_prompt = "Reply with the letter of the right option."
    parser = choice("ABCD")


# --- 21. the right option is B in 9 of 12 questions ---
# rohitg00/ai-engineering-from-scratch #239 and #240 (answer B in 60% of 1,846 quiz
# questions, https://github.com/rohitg00/ai-engineering-from-scratch/issues/240);
# hendrycks/test #11 (MMLU categories up to 47% D).


@case(
    "mc_position_bias",
    "data",
    "the right option is 'B' in 9 of 12 questions (a trivial 'always B' scores 75%)",
    "https://github.com/rohitg00/ai-engineering-from-scratch/issues/240; "
    "https://github.com/hendrycks/test/issues/11",
    Demo(lambda p: "B"),
)
def mc_position_bias(buggy: bool):
    positions = [1, 1, 2, 1, 1, 1, 0, 1, 1, 3, 1, 1] if buggy else BALANCED
    return build(Lettered, lettered(positions))


# --- 22. numbered options on lines; the third is right 70% of the time ---
# Issue 44 of this project (options on numbered lines are not read as candidates);
# the same position-bias class as above.


def numbered(positions: list[int]) -> list[dict]:
    out = []
    for (question, right, wrong), position in zip(BANK, positions, strict=False):
        options = _options(right, wrong, position)
        lines = "\n".join(f"{i + 1}. {text}" for i, text in enumerate(options))
        out.append({"question": f"{question}\n{lines}\nReply with the word only.", "answer": right})
    return out


class Numbered(SingleTurnEnv):
    parser = exact()

    def check(self, value, answer):
        return value.strip().rstrip(".").lower() == answer.lower()


@case(
    "mc_numbered_third",
    "data",
    "options on numbered lines, the third is right in 7 of 10 questions",
    "issue 44 (numbered options); https://github.com/hendrycks/test/issues/11",
    Demo(lambda p: re.search(r"^3\. (.+)$", p["question"], re.M).group(1)),
)
def mc_numbered_third(buggy: bool):
    positions = [2, 2, 0, 2, 2, 3, 2, 1, 2, 2] if buggy else [0, 1, 2, 3, 1, 3, 0, 2, 2, 0]
    return build(Numbered, numbered(positions))


# --- 23. the right option is always the longest ---
# Known class: answer-length artifacts of hand-written multiple choice (the right answer
# is the most qualified, hence longest, option; "pick the longest" beats chance).

LONG_BANK = [
    (
        "Why does ice float on water?",
        "ice is less dense than liquid water because its molecules form an open lattice",
        ("ice is hot", "water is sticky", "the wind pushes it"),
        (
            "ice is warmer than the water around it, so it rises up to the top",
            "water holds on to anything that touches its surface very strongly",
            "the wind above the water keeps pushing any small object up and out of it",
        ),
    ),
    (
        "Why do we have seasons?",
        "the Earth's axis is tilted, so each hemisphere gets more direct sunlight part of the year",
        ("the Sun gets hotter", "clouds move", "the Moon blocks light"),
        (
            "the Sun itself gets hotter and cooler over a yearly cycle of its activity",
            "clouds move around the planet and cover different parts of it each month",
            "the Moon blocks a different share of the sunlight in each part of the year",
        ),
    ),
    (
        "Why does a metal spoon feel colder than a wooden one?",
        "metal conducts heat away from your hand much faster than wood does",
        ("metal is wet", "wood is alive", "metal is heavy"),
        (
            "metal always holds a thin film of cold water on its surface, which cools your skin",
            "wood is still slightly alive and keeps itself warm inside",
            "metal is heavier, so it presses on your skin harder",
        ),
    ),
    (
        "Why does the sky look blue?",
        "air scatters short blue wavelengths of sunlight more than the longer red ones",
        ("the sea reflects", "space is blue", "ozone glows"),
        (
            "the sea below reflects its own blue colour up into the whole sky",
            "space itself is blue, and we see it through the clear air",
            "the ozone layer glows blue when sunlight hits it during the day",
        ),
    ),
    (
        "Why does bread go stale?",
        "its starch slowly recrystallises and the bread loses its moisture to the air",
        ("it gets cold", "yeast dies", "light hits it"),
        (
            "it gets cold in the kitchen, and cold bread always hardens within a day",
            "the yeast inside it finally dies, and dead yeast makes the crumb hard",
            "light hits it through the bag and dries out the crust and crumb",
        ),
    ),
    (
        "Why do onions make you cry?",
        "cutting them releases a sulfur compound that irritates the eyes' tear glands",
        ("they are spicy", "they smell sad", "juice splashes"),
        (
            "they are so spicy that their heat reaches your eyes through the air",
            "their smell reminds the brain of sad memories and triggers tears",
            "juice splashes into your eyes whenever the knife goes through a layer",
        ),
    ),
    (
        "Why does a balloon stick to a wall after rubbing it on hair?",
        "rubbing moves electrons onto the balloon, which is then attracted by static charge",
        ("hair is glue", "walls are magnetic", "air pressure"),
        (
            "hair leaves a thin layer of natural glue on the balloon's skin",
            "most walls are slightly magnetic, and the rubbed balloon becomes a weak magnet",
            "the air pressure in the room pushes the balloon flat against the wall",
        ),
    ),
    (
        "Why do boats float even when made of steel?",
        "their hull shape displaces a weight of water greater than the boat's own weight",
        ("steel is light", "paint floats", "engines lift them"),
        (
            "the steel used for boats is a special light alloy lighter than water",
            "the many layers of paint on the hull float and hold the steel up",
            "the engines push downwards on the water and lift the hull up",
        ),
    ),
]


def by_length(balanced: bool) -> list[dict]:
    out = []
    for i, (question, right, short, long) in enumerate(LONG_BANK):
        position = [0, 1, 2, 3, 2, 0, 3, 1][i]
        # the twin's wrong options are as long as the right one or longer
        wrong = (long[0] + ", and that is the whole reason", *long[1:]) if balanced else short
        options = _options(right, wrong, position)
        listed = "\n".join(f"{LETTERS[j]}) {text}" for j, text in enumerate(options))
        out.append({"question": f"{question}\n{listed}", "answer": LETTERS[position]})
    return out


def longest_option(problem: dict) -> str:
    """The letter of the longest option: a policy that never reads the question."""
    options = re.findall(r"^([A-D])\) (.+)$", problem["question"], re.M)
    return max(options, key=lambda option: len(option[1]))[0]


@case(
    "mc_longest_option",
    "data",
    "the right option is always the longest (positions balanced)",
    "class: answer-length artifacts of hand-written multiple choice",
    Demo(longest_option),
)
def mc_longest_option(buggy: bool):
    return build(Lettered, by_length(balanced=not buggy), max_generation_tokens=64)


# --- 24. the first capital letter A-D anywhere in the reply ---
# Known class: regexes matching anywhere in the reply (re.search instead of an anchored
# or marked answer); this project's choice() parser documents why it refuses "A cat...".


def first_letter(text: str) -> str | None:
    found = re.search(r"\b([A-D])\b", text)  # BUG: the first A-D anywhere
    return found.group(1) if found else None


class LetterAnywhere(SingleTurnEnv):
    system_prompt = "Reply with the letter of the right option."
    parser = Parser.from_function(first_letter)


@case(
    "mc_letter_anywhere",
    "multi-choice",
    "the parser takes the first capital A-D anywhere: restating the options answers 'A'",
    "class: unanchored answer regex (re.search over the whole reply)",
    Demo(lambda p: p["question"]),
)
def mc_letter_anywhere(buggy: bool):
    return build(LetterAnywhere if buggy else Lettered, lettered(BALANCED))


# --- 25. a letter accepted when it is among the letters of the reply ---
# Visual-RFT #79 (https://github.com/Liuziyu77/Visual-RFT/issues/79: "<answer>A or B or
# C</answer>" always earns the accuracy reward).


class AnyLetter(SingleTurnEnv):
    system_prompt = "Reply with the letter of the right option."
    parser = exact()

    def check(self, value, answer):
        return answer in re.findall(r"\b[A-D]\b", value)  # BUG: 'A, B, C, D' passes


@case(
    "mc_multiple_letters",
    "multi-choice",
    "the check accepts the answer's letter among several: 'A or B or C' passes",
    "https://github.com/Liuziyu77/Visual-RFT/issues/79",
    Demo(lambda p: "A or B or C or D"),
)
def mc_multiple_letters(buggy: bool):
    return build(AnyLetter if buggy else Lettered, lettered(BALANCED))
