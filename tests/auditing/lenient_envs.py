"""Envs for issue 44's audit tests: each planted bug is one member of a class, and the
tests use several members of each class, not only the one the issue names.

- graders that accept what is not the answer (non-finite numbers, numbers merely near,
  prefixes and substrings, fields missing), found by the strict second opinion and the
  generated probes;
- prompts that offer their options in lists (numbered lines, bullets, "X, Y or Z");
- parsers that normalise, so a baseline guess must go through the env's own parser;
- answers that are no plain number, replies that make the env raise, inverted rewards.

A module (not a test file) so that ENV_SPECs can name them:
``tests/auditing/lenient_envs.py:nan_builder``.
"""

from __future__ import annotations

import difflib
import json
import math
import random
from fractions import Fraction

from mint_envkit import (
    AuditProbe,
    DatasetBuilder,
    Parser,
    SingleTurnEnv,
    correct,
    exact,
    first_number,
)
from mint_envkit.parsers import as_number
from mint_envkit.rewards import component

MODEL = "mint-envkit/tiny-qwen3"


def builder(env: type, problems: list[dict], **fields) -> DatasetBuilder:
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=2,
        group_size=2,
        model_name=MODEL,
        shuffle=False,
        context_overflow_reward=fields.pop("context_overflow_reward", 0.0),
        **fields,
    )


# --- numbers: graders that pay what is no finite number, or merely near --------------


def read_float(text: str) -> str | None:
    """A float reader as users write it: whatever float() accepts ("nan", "inf" too)."""
    try:
        return str(float(text.strip()))
    except ValueError:
        return None


DIVISIONS = [
    {"question": f"What is {a} / {b}? Reply with a decimal number.", "answer": str(a / b)}
    for a, b in [(1, 4), (3, 8), (7, 2), (9, 5), (5, 16), (11, 4), (6, 5), (13, 8)]
]


class NanToleranceEnv(SingleTurnEnv):
    """The issue's case: "not far" is true for NaN, since NaN compares false."""

    reward_fn = correct(
        Parser.from_function(read_float),
        check=lambda value, answer: not abs(float(value) - float(answer)) > 1e-6,
    )


nan_builder = builder(NanToleranceEnv, DIVISIONS)


class ReplyRelativeEnv(SingleTurnEnv):
    """Relative error measured against the reply: abs(v - a) <= 1e-6 * abs(v) holds for
    v = inf (inf <= inf)."""

    reward_fn = correct(
        Parser.from_function(read_float),
        check=lambda v, a: abs(float(v) - float(a)) <= 1e-6 * abs(float(v)),
    )


relative_builder = builder(ReplyRelativeEnv, DIVISIONS)


def _sign_bug(value: str, answer: str) -> bool:
    return float(value) <= float(answer)  # meant: abs(float(value) - float(answer)) <= 1e-9


class AtMostEnv(SingleTurnEnv):
    """A comparison whose abs() was lost: any smaller number is right."""

    reward_fn = correct(Parser.from_function(read_float), check=_sign_bug)


at_most_builder = builder(AtMostEnv, DIVISIONS)


class TruncatingEnv(SingleTurnEnv):
    """Integer answers compared after int(): 7.9 is 7."""

    parser = first_number

    def check(self, parsed, answer):
        return int(float(parsed)) == int(float(answer))


SUMS = [
    {"question": f"What is {a} + {b}?", "answer": str(a + b)}
    for a, b in [(2, 3), (4, 4), (1, 7), (10, 5), (3, 3), (6, 1), (2, 2), (9, 9)]
]
truncating_builder = builder(TruncatingEnv, SUMS)


class CleanToleranceEnv(SingleTurnEnv):
    """The clean twin: a finite float within 1e-6, and it says that leniency is intended."""

    audit_lenient = "decimal answers within 1e-6 of the reference count as right"
    reward_fn = correct(
        Parser.from_function(read_float),
        check=lambda v, a: math.isfinite(float(v)) and abs(float(v) - float(a)) <= 1e-6,
    )


clean_tolerance_builder = builder(CleanToleranceEnv, DIVISIONS)


# --- text: graders that pay part of the answer, or something like it ------------------


CITIES = [
    ("France", "paris"),
    ("Japan", "tokyo"),
    ("Peru", "lima"),
    ("Kenya", "nairobi"),
    ("Italy", "rome"),
    ("Egypt", "cairo"),
]
CITY_PROBLEMS = [
    {"question": f"What is the capital of {country}? Reply with the city only.", "answer": city}
    for country, city in CITIES
]


class ContainedEnv(SingleTurnEnv):
    """Containment the wrong way round: any piece of the answer is right."""

    parser = exact(str.lower)

    def check(self, parsed, answer):
        return parsed.strip() in str(answer).lower()


contained_builder = builder(ContainedEnv, CITY_PROBLEMS)


class FuzzyEnv(SingleTurnEnv):
    """A fuzzy match meant for typos: anything 75% similar is right."""

    parser = exact(str.lower)

    def check(self, parsed, answer):
        return difflib.SequenceMatcher(None, parsed.strip(), str(answer)).ratio() >= 0.75


fuzzy_builder = builder(FuzzyEnv, CITY_PROBLEMS)


class DeclaredFuzzyEnv(FuzzyEnv):
    audit_lenient = "a typo or two in a city's name is forgiven"


declared_fuzzy_builder = builder(DeclaredFuzzyEnv, CITY_PROBLEMS)


class StrictCityEnv(SingleTurnEnv):
    """The clean twin: the city, any case."""

    parser = exact(str.lower)

    def check(self, parsed, answer):
        return parsed.strip() == str(answer).lower()


strict_city_builder = builder(StrictCityEnv, CITY_PROBLEMS)


# --- structures: a grader that reads one field ----------------------------------------


PEOPLE = [("Ada", 36), ("Alan", 41), ("Grace", 85), ("Edsger", 72)]
RECORD_PROBLEMS = [
    {
        "question": f"Write {name}'s record as JSON with the fields name and age ({age}).",
        "answer": json.dumps({"name": name, "age": age}),
    }
    for name, age in PEOPLE
]


def _json(text: str) -> str | None:
    try:
        return json.dumps(json.loads(text))
    except ValueError:
        return None


class OneFieldEnv(SingleTurnEnv):
    """Checks the name only: a record without its age passes."""

    parser = Parser.from_function(_json)

    def check(self, parsed, answer):
        return json.loads(parsed).get("name") == json.loads(answer)["name"]


one_field_builder = builder(OneFieldEnv, RECORD_PROBLEMS)


class WholeRecordEnv(OneFieldEnv):
    """The clean twin: the whole record."""

    def check(self, parsed, answer):
        return json.loads(parsed) == json.loads(answer)


whole_record_builder = builder(WholeRecordEnv, RECORD_PROBLEMS)


class DictRecordEnv(OneFieldEnv):
    """The clean twin with the answers as dicts, not JSON text."""

    def check(self, parsed, answer):
        return json.loads(parsed) == answer


dict_record_builder = builder(
    DictRecordEnv, [{**p, "answer": json.loads(p["answer"])} for p in RECORD_PROBLEMS]
)


# --- options in lists: the answer mostly at one position ------------------------------


def _listed(items: list[str], style: str) -> str:
    if style == "numbered":
        return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))
    if style == "paren":
        return "\n".join(f"({i}) {item}" for i, item in enumerate(items, 1))
    if style == "bullets":
        return "\n".join(f"- {item}" for item in items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def option_problems(style: str, n: int = 10, at: int = 2, share: float = 0.7) -> list[dict]:
    """ "Which of these is an animal?" with four things; the animal is the third listed on
    ``share`` of the problems."""
    rng = random.Random(44)
    animals = [
        "horse",
        "otter",
        "camel",
        "heron",
        "tiger",
        "zebra",
        "moose",
        "koala",
        "llama",
        "panda",
        "bison",
        "gecko",
    ]
    things = [
        "hammer",
        "spoon",
        "kettle",
        "brick",
        "chair",
        "spade",
        "ruler",
        "glove",
        "lamp",
        "broom",
        "towel",
        "clock",
    ]
    out = []
    for i in range(n):
        items = rng.sample(things, 3)
        where = at if i < round(share * n) else rng.choice([p for p in range(4) if p != at])
        items.insert(where, animals[i % len(animals)])
        if style == "phrase":
            question = f"Which of {_listed(items, style)} is an animal? Reply with the word only."
        else:
            question = (
                f"Which of these is an animal?\n{_listed(items, style)}\nReply with the word only."
            )
        out.append({"question": question, "answer": animals[i % len(animals)]})
    return out


class WordEnv(SingleTurnEnv):
    parser = exact(str.lower)


def options_builder(style: str) -> DatasetBuilder:
    return builder(WordEnv, option_problems(style))


numbered_builder = options_builder("numbered")
bullets_builder = options_builder("bullets")
phrase_builder = options_builder("phrase")


# --- normalising parsers: a baseline guess must go through the env's parser ------------


CAPITAL_PAIRS = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Belgium", "Paris"),
    ("Peru", "Lima"),
    ("Spain", "Paris"),
    ("Chile", "Santiago"),
]
# half of these answers are 'Paris' (the problems are made up: the baseline is the point)
CAPITAL_PROBLEMS = [{"question": f"Capital of {c}?", "answer": a} for c, a in CAPITAL_PAIRS]


class LowerCapitalEnv(SingleTurnEnv):
    """The docs' CapitalEnv pattern: the parser lower-cases, check compares lower-case."""

    parser = exact(normalize=str.lower)

    def check(self, parsed, answer):
        return parsed == str(answer).lower()


lower_capital_builder = builder(LowerCapitalEnv, CAPITAL_PROBLEMS)

_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5"}


def _digits(text: str) -> str | None:
    word = text.strip().lower().rstrip(".")
    return _WORDS.get(word, word if word.isdigit() else None)


class WordNumberEnv(SingleTurnEnv):
    """Answers spelled out ("three"); the parser reads words or digits as digits."""

    parser = Parser.from_function(_digits)

    def check(self, parsed, answer):
        return parsed == _WORDS[str(answer)]


WORD_PROBLEMS = [
    {"question": f"How many {thing}?", "answer": answer}
    for thing, answer in [
        ("legs has a tripod", "three"),
        ("wheels has a bike", "two"),
        ("sides has a triangle", "three"),
        ("eyes has a cat", "two"),
        ("corners has a triangle", "three"),
        ("moons has the earth", "one"),
    ]
]
word_number_builder = builder(WordNumberEnv, WORD_PROBLEMS)


# --- plain-function rewards: no `correct` ----------------------------------------------


def exact_reward(completion: str, answer: str) -> float:
    return float(completion.strip().lower() == str(answer).lower())


class PlainRewardEnv(SingleTurnEnv):
    """The first reward the docs teach: a function of the completion and the answer."""

    reward_fn = exact_reward


YES_NO = [
    {"question": f"Is {a} greater than {b}? Answer yes or no.", "answer": "yes" if a > b else "no"}
    for a, b in [(3, 9), (7, 2), (4, 8), (1, 6), (9, 5), (2, 7), (8, 3), (5, 9), (6, 4), (1, 3)]
]
plain_reward_builder = builder(PlainRewardEnv, YES_NO)


# --- answers that are no plain number, replies that raise, inverted rewards -------------


FRACTIONS = [
    {
        # any fraction of the value is right: the prompt asks for no lowest terms
        "question": f"Divide {a * k} by {b * k}. Reply with a fraction.",
        "answer": f"{a}/{b}",
    }
    for a, b, k in [(25, 49, 2), (3, 4, 3), (-7, 2, 5), (1, 3, 4), (5, 8, 2), (2, 9, 3)]
]


class FractionEnv(SingleTurnEnv):
    parser = first_number  # reads "25/49" as one fraction


fraction_builder = builder(FractionEnv, FRACTIONS)


def _one_number(text: str) -> str | None:
    return as_number(text.strip())


class LatexFractionEnv(SingleTurnEnv):
    parser = Parser.from_function(_one_number)  # a whole reply that is one number: \frac too


def _latex(fraction: str) -> str:
    top, bottom = fraction.split("/")
    return "\\frac{" + top + "}{" + bottom + "}"


LATEX = [
    {"question": p["question"], "answer": _latex(p["answer"])}
    for p in FRACTIONS
    if not p["answer"].startswith("-")
]
latex_builder = builder(LatexFractionEnv, LATEX)


def _fraction_check(value: str, answer: str) -> bool:
    return Fraction(value) == Fraction(answer)  # raises on "either 5 or 6", "1.5.2" ...


class RaisingEnv(SingleTurnEnv):
    """A check that raises on a reply it cannot read, instead of scoring it wrong."""

    parser = Parser.from_function(lambda text: text.strip() or None)

    def check(self, parsed, answer):
        return _fraction_check(parsed, answer)


raising_builder = builder(RaisingEnv, FRACTIONS)


class InvertedEnv(SingleTurnEnv):
    """A sign-inverted reward: -1 for the right answer."""

    parser = first_number
    reward_correct = -1.0
    reward_incorrect = 0.0


inverted_builder = builder(InvertedEnv, SUMS)


def _penalty(completion: str, answer: str) -> float:
    return -1.0 if completion.strip() == str(answer) else 0.5  # a "loss" used as a reward


class InvertedPlainEnv(SingleTurnEnv):
    reward_fn = component(_penalty, name="loss", bounds=(-1.0, 0.5))


inverted_plain_builder = builder(InvertedPlainEnv, SUMS, context_overflow_reward=-1.0)


class EquivalentEnv(SingleTurnEnv):
    """Accepts the decimal of a fraction answer, and says so for that value alone."""

    parser = first_number

    def check(self, parsed, answer):
        return Fraction(parsed) == Fraction(answer) or (parsed, answer) == ("0.33", "1/3")

    def audit_equivalent(self, value, answer):
        return value == "0.33" and answer == "1/3"

    def audit_probes(self, problem):
        return [AuditProbe("rounded_third", "0.33", "answer_shaped")]


equivalent_builder = builder(EquivalentEnv, FRACTIONS)
