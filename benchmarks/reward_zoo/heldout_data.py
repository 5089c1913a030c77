"""The held-out set, dataset part: answer keys and label sets with one bug each (see
``heldout.py`` for what the held-out set is and how it was written).
"""

from __future__ import annotations

import re

from mint_envkit import Parser, SingleTurnEnv, exact

from .zoo import Demo, build, case, read_number

HELDOUT = {"heldout": True}


# --- H6. a label set that is mostly one label ---
# Known class: label imbalance, where the majority class is a strong trivial policy
# (BoolQ: 62% of answers are "yes", Clark et al. 2019).

REVIEWS = [
    ("Arrived on time and works perfectly.", "positive", "positive"),
    ("Great sound for the price, would buy again.", "positive", "positive"),
    ("The strap broke after two days.", "positive", "negative"),
    ("Lovely colours, my daughter adores it.", "positive", "positive"),
    ("Stopped charging within a week. Useless.", "negative", "negative"),
    ("Exactly as described, fast shipping.", "positive", "positive"),
    ("Smells of plastic and the lid does not close.", "positive", "negative"),
    ("Comfortable and warm, fits well.", "positive", "positive"),
    ("Customer service never answered my emails.", "positive", "negative"),
    ("The blade was dull out of the box.", "negative", "negative"),
]


def reviews(buggy: bool) -> list[dict]:
    """Buggy: the loader filled the missing labels with the first class, so 8 of 10 say
    positive and three of them are wrong; clean: the true labels, 5 and 5."""
    return [
        {
            "question": f"Is this review positive or negative?\n\n{text}",
            "answer": loaded if buggy else true,
        }
        for text, loaded, true in REVIEWS
    ]


class Sentiment(SingleTurnEnv):
    system_prompt = "Answer with one word: positive or negative."
    parser = exact(normalize=lambda text: text.strip().strip(".").lower())


@case(
    "majority_label",
    "data",
    "missing labels filled with 'positive': 8 of 10 reviews say positive (3 wrongly)",
    "class: label imbalance and default-filled labels; BoolQ (Clark et al. 2019, 62% yes)",
    Demo(lambda p: "positive"),
    **HELDOUT,
)
def majority_label(buggy: bool):
    return build(Sentiment, reviews(buggy))


# --- H7. list positions computed 0-based for a 1-based question ---
# Known class: off-by-one in generated answers (`items.index(x)` where the prompt counts
# from 1): the right reply is scored wrong and the reply one lower is paid.

LISTS = [
    (["banana", "kiwi", "plum", "fig", "pear"], "plum"),
    (["red", "blue", "green", "black"], "black"),
    (["oak", "elm", "ash", "yew", "fir", "pine"], "elm"),
    (["tea", "milk", "juice"], "juice"),
    (["Oslo", "Rome", "Lima", "Kyiv", "Doha"], "Kyiv"),
    (["cat", "dog", "cow", "hen"], "cow"),
    (["one", "two", "three", "four", "five"], "five"),
    (["sun", "moon", "star"], "moon"),
]


def positions(buggy: bool) -> list[dict]:
    return [
        {
            "question": f"In the list [{', '.join(items)}], at which position (counting from 1) is "
            f"'{item}'?",
            "answer": str(items.index(item) + (0 if buggy else 1)),  # BUG: 0-based
        }
        for items, item in LISTS
    ]


def true_position(problem: dict) -> str:
    items = re.search(r"\[(.*)\]", problem["question"]).group(1).split(", ")
    item = re.search(r"is '(.*)'\?", problem["question"]).group(1)
    return str(items.index(item) + 1)


class Position(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    parser = Parser.from_function(read_number)


@case(
    "index_off_by_one",
    "data",
    "answers are 0-based list indexes while the question counts from 1: the right reply is wrong",
    "class: off-by-one in generated answers (list.index for a 1-based question)",
    Demo(true_position, direction="less"),
    **HELDOUT,
)
def index_off_by_one(buggy: bool):
    return build(Position, positions(buggy))


# --- H8. missing answers read as the string 'nan' ---
# Known class: a table loaded with pandas and its answer column cast with astype(str):
# the empty cells become the answer "nan", which the reply "nan" matches.

TRIVIA = [
    ("Which planet is known as the Red Planet?", "Mars", False),
    ("What gas do plants take in from the air?", "carbon dioxide", True),
    ("How many legs does a spider have?", "8", False),
    ("What is the largest ocean on Earth?", "Pacific", False),
    ("Which metal is liquid at room temperature?", "mercury", True),
    ("What is the hardest natural mineral?", "diamond", False),
    ("Which organ pumps blood through the body?", "heart", False),
    ("What is the freezing point of water in Celsius?", "0", True),
    ("Which bird is a symbol of peace?", "dove", False),
    ("What do bees make?", "honey", False),
]


def trivia(buggy: bool) -> list[dict]:
    return [
        {"question": q, "answer": "nan" if buggy and missing else a}  # BUG: str(float('nan'))
        for q, a, missing in TRIVIA
    ]


class Trivia(SingleTurnEnv):
    system_prompt = "Answer in as few words as possible."
    parser = exact(normalize=lambda text: text.strip().strip(".").lower())

    def check(self, value, answer):
        return value == answer.lower()


@case(
    "nan_string_answers",
    "data",
    "3 of 10 answers are the string 'nan' (empty cells through astype(str)): 'nan' passes there",
    "class: pandas missing values cast to the string 'nan' in an answer column",
    Demo(lambda p: "nan"),
    **HELDOUT,
)
def nan_string_answers(buggy: bool):
    return build(Trivia, trivia(buggy))


# --- H9. look-alike characters in the answer key ---
# Known class: homoglyphs in scraped answer keys (a Cyrillic 'а' or 'о' that looks like
# the Latin letter; Unicode TR39 confusables): the right reply never matches.

WORDS = [
    ("cat", "chat"),
    ("water", "eau"),
    ("apple", "pomme"),
    ("house", "maison"),
    ("book", "livre"),
    ("sea", "mer"),
    ("bread", "pain"),
    ("friend", "ami"),
    ("school", "école"),
    ("night", "nuit"),
]
LOOKALIKE = str.maketrans({"a": "\u0430", "o": "\u043e", "e": "\u0435"})
"""Latin a, o, e to the Cyrillic letters that look the same."""


def french(buggy: bool) -> list[dict]:
    return [
        {
            "question": f"Translate into French, one word: '{english}'.",
            "answer": word.translate(LOOKALIKE) if buggy and i % 3 == 0 else word,  # BUG
        }
        for i, (english, word) in enumerate(WORDS)
    ]


FRENCH = {english: word for english, word in WORDS}


class Translate(SingleTurnEnv):
    system_prompt = "Reply with the French word only."
    parser = exact(normalize=lambda text: text.strip().strip(".'").lower())

    def check(self, value, answer):
        return value == answer.lower()


@case(
    "homoglyph_answers",
    "data",
    "3 of 10 answers hold Cyrillic look-alike letters ('chаt'): the right reply is wrong there",
    "class: homoglyphs in scraped answer keys (Unicode TR39 confusables)",
    Demo(lambda p: FRENCH[re.search(r"'(\w+)'", p["question"]).group(1)], direction="less"),
    **HELDOUT,
)
def homoglyph_answers(buggy: bool):
    return build(Translate, french(buggy))
