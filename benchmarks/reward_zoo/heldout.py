"""The held-out set, single-turn part: bugs written after the audit's rules were, from
classes the zoo's first 52 cases do not hold, to measure how the audit generalises.

Each env is written the way a researcher would write it from docs/writing-envs.md and
docs/parsers.md (a parser and a ``check``, or a ``reward_fn`` of parts), without looking
at the audit's rules; the comment above each case says where its bug comes from. A case
the audit misses is a result, not a defect of the case: the held-out catch rate is the
audit's generalisation figure (docs/audit.md, the zoo section).

Its dataset bugs are in ``heldout_data.py``, its multi-turn, tool and code cases in
``heldout_agents.py``.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from difflib import SequenceMatcher

from mint_envkit import (
    Parser,
    SingleTurnEnv,
    component,
    correct,
    exact,
    last_number,
    valid_format,
    weighted,
    xml_tag,
)

from .data import word_problems
from .zoo import Demo, pair, read_number

HELDOUT = {"heldout": True}


# --- H1. a structured-output reward that checks the schema, not the values ---
# Known class: schema validity taken for correctness in structured-output / JSON-mode
# rewards (a reply is "right" when it parses and has the expected keys).

PEOPLE = [
    ("Maria Silva, 34, moved to Lisbon last spring.", "Maria Silva", 34),
    ("Our new intern is Kenji Ito (age 21).", "Kenji Ito", 21),
    ("At 58, Ruth Okafor still runs every morning.", "Ruth Okafor", 58),
    ("Tomás Rey turned 40 on Sunday.", "Tomás Rey", 40),
    ("The winner, Lena Berg, is only 17.", "Lena Berg", 17),
    ("Ahmed Nasser (62) retired from teaching.", "Ahmed Nasser", 62),
    ("Priya Nair, aged 29, leads the team.", "Priya Nair", 29),
    ("Jonas Weber is 45 and lives in Graz.", "Jonas Weber", 45),
]


def extractions() -> list[dict]:
    return [
        {
            "question": f'Extract the person\'s name and age as JSON {{"name": ..., "age": ...}}.'
            f"\n\n{text}",
            "answer": json.dumps({"name": name, "age": age}),
        }
        for text, name, age in PEOPLE
    ]


def read_json_object(text: str) -> str | None:
    """The reply's JSON object (its first ``{...}``), re-serialised; None when there is none."""
    found = re.search(r"\{.*\}", text, re.S)
    if not found:
        return None
    try:
        value = json.loads(found.group(0))
    except ValueError:
        return None
    return json.dumps(value) if isinstance(value, dict) else None


class JsonSchemaOnly(SingleTurnEnv):
    system_prompt = "Reply with one JSON object only."
    parser = Parser.from_function(read_json_object)

    def check(self, value, answer):
        return set(json.loads(value)) == set(json.loads(answer))  # BUG: the keys, not the values


class JsonSchemaOnlyFixed(JsonSchemaOnly):
    def check(self, value, answer):
        return json.loads(value) == json.loads(answer)


pair(
    "json_schema_only",
    "format",
    "a JSON-extraction check compares the keys of the reply and the answer, not the values: "
    '\'{"name": "x", "age": 0}\' passes',
    "class: schema validity taken for correctness (structured-output rewards)",
    JsonSchemaOnly,
    JsonSchemaOnlyFixed,
    extractions(),
    Demo(lambda p: '{"name": "x", "age": 0}'),
    **HELDOUT,
)


# --- H2. a date grader that accepts both day/month orders ---
# Known class: "accept US and European dates" by trying %m/%d and %d/%m in turn, so an
# ambiguous reply is right whichever date it means (a month/day swap is never wrong).

STARTS = [
    (date(2024, 3, 25), 10),
    (date(2023, 1, 28), 7),
    (date(2024, 6, 1), 9),
    (date(2022, 10, 30), 5),
    (date(2024, 2, 20), 15),
    (date(2023, 7, 4), 3),
    (date(2021, 11, 26), 12),
    (date(2024, 8, 31), 6),
]


def date_sums() -> list[dict]:
    return [
        {
            "question": f"What date is {days} days after {start.isoformat()}? Reply as YYYY-MM-DD.",
            "answer": (start + timedelta(days=days)).isoformat(),
        }
        for start, days in STARTS
    ]


def read_date(text: str) -> str | None:
    text = text.strip().rstrip(".")
    return text if re.fullmatch(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}", text) else None


def as_date(text: str, formats: tuple[str, ...]) -> set[date]:
    """Every date ``text`` reads as under ``formats``."""
    out = set()
    for fmt in formats:
        try:
            out.add(datetime.strptime(text, fmt).date())
        except ValueError:
            continue
    return out


class DateEitherOrder(SingleTurnEnv):
    system_prompt = "Reply with the date only."
    parser = Parser.from_function(read_date)
    formats = ("%Y-%m-%d", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y")  # BUG: %m/%d and %d/%m both

    def check(self, value, answer):
        return date.fromisoformat(answer) in as_date(value, self.formats)


class DateEitherOrderFixed(DateEitherOrder):
    formats = ("%Y-%m-%d", "%d.%m.%Y")


def swapped_us(problem: dict) -> str:
    """The date with month and day swapped, written month first: '03/04/2024' for 3 April."""
    d = date.fromisoformat(problem["answer"])
    return f"{d.day:02d}/{d.month:02d}/{d.year}"


pair(
    "date_either_order",
    "string",
    "a date check tries %m/%d/%Y and %d/%m/%Y: '03/04/2024' passes for 3 April and 4 March alike",
    "class: lenient date parsing over ambiguous day/month orders",
    DateEitherOrder,
    DateEitherOrderFixed,
    date_sums(),
    Demo(swapped_us),
    **HELDOUT,
)


# --- H3. thousands separators stripped, so a decimal comma vanishes ---
# Known class: `text.replace(",", "")` before float() to read "1,000"; in a locale that
# writes decimals with a comma, "1,9" (1.9) becomes 19.

PRICES = [(4, 12), (7, 9), (3, 25), (6, 14), (8, 11), (5, 19), (9, 7), (2, 48)]


def totals() -> list[dict]:
    return [
        {
            "question": f"{n} tickets cost {p} euros each. What do they cost in all?",
            "answer": str(n * p),
        }
        for n, p in PRICES
    ]


class CommaStripped(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    parser = Parser.from_function(lambda text: read_number(text.replace(",", "")))  # BUG


def read_grouped(text: str) -> str | None:
    text = text.strip()
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", text):
        return text.replace(",", "")
    return read_number(text)


class CommaStrippedFixed(SingleTurnEnv):
    system_prompt = "Reply with the number only."
    parser = Parser.from_function(read_grouped)


def decimal_comma(problem: dict) -> str:
    """The answer with a comma after its first digit: '4,8' (4.8 in most of Europe) for 48."""
    answer = problem["answer"]
    return f"{answer[0]},{answer[1:]}"


pair(
    "comma_decimal_stripped",
    "math",
    "every comma is removed before reading the number: '4,8' (4.8) passes for 48",
    "class: thousands separators stripped with replace(',', ''), decimal commas lost",
    CommaStripped,
    CommaStrippedFixed,
    totals(),
    Demo(decimal_comma),
    **HELDOUT,
)


# --- H4. a length penalty with the wrong sign ---
# Known class: a brevity term added where it was meant to be subtracted (length-penalty
# sign errors; Singhal et al. 2023, "A Long Way to Go: Investigating Length Correlations
# in RLHF", on rewards that pay length).


def length_share(completion: str, answer: str) -> float:
    return min(1.0, len(completion) / 600)


class LengthSign(SingleTurnEnv):
    system_prompt = "Solve the problem. End with the number."
    reward_fn = weighted(
        correct=(correct(last_number), 1.0),
        length=(component(length_share, bounds=(0.0, 1.0)), 0.3),  # BUG: meant -0.3
    )


def brief_and_right(completion: str, answer: str) -> float:
    right = correct(last_number)(completion, answer).total
    return right * (1.0 - 0.3 * length_share(completion, answer))


class LengthSignFixed(SingleTurnEnv):
    # The penalty lowers a right answer's reward only. (The twin first written,
    # `weighted(correct=1.0, length=-0.3)`, broke the documented ordering rule: the empty
    # reply, 0.0, earned more than a short wrong answer, -0.0005; the audit said so on the
    # first run, rightly, and this twin replaced it.)
    system_prompt = "Solve the problem. End with the number."
    reward_fn = component(brief_and_right, bounds=(0.0, 1.0))


def rambling(problem: dict) -> str:
    return "Let me think about this carefully and check every step twice. " * 10 + "So it is 0."


pair(
    "length_penalty_sign",
    "format",
    "the length penalty's weight is +0.3 (meant -0.3): a 600-character wrong reply earns 0.3",
    "class: length-penalty sign errors; Singhal et al. 2023 (length correlations in RLHF)",
    LengthSign,
    LengthSignFixed,
    word_problems(),
    Demo(rambling),
    **HELDOUT,
)


# --- H5. rubric weights that sum past 1, clipped to 1 ---
# Known class: a rubric "normalised" with min(1, ...) whose weights sum to 1.5, so format
# and "reasoning" bonuses make up for a wrong answer (DeepSeek-R1-style format rewards).

TAG = xml_tag("answer")


def shows_reasoning(completion: str, answer: str) -> float:
    return float(bool(re.search(r"\b(because|so|therefore|step)\b", completion, re.I)))


def rubric(completion: str, answer: str, weights: tuple[float, float, float]) -> float:
    right = correct(TAG)(completion, answer).total
    tagged = valid_format(TAG)(completion, answer).total
    reasoned = shows_reasoning(completion, answer)
    return min(1.0, weights[0] * right + weights[1] * tagged + weights[2] * reasoned)


def clipped(completion: str, answer: str) -> float:
    return rubric(completion, answer, (0.7, 0.5, 0.3))  # BUG: the weights sum to 1.5


def clipped_fixed(completion: str, answer: str) -> float:
    return rubric(completion, answer, (0.8, 0.1, 0.1))


class RubricOverOne(SingleTurnEnv):
    system_prompt = "Explain briefly, then give the number in <answer></answer>."
    reward_fn = component(clipped, bounds=(0.0, 1.0))


class RubricOverOneFixed(SingleTurnEnv):
    system_prompt = "Explain briefly, then give the number in <answer></answer>."
    reward_fn = component(clipped_fixed, bounds=(0.0, 1.0))


pair(
    "rubric_weights_over_one",
    "format",
    "rubric weights 0.7 + 0.5 + 0.3 clipped at 1: a tagged wrong answer with 'so' earns 0.8",
    "class: unnormalised rubric weights; DeepSeek-R1 style format rewards (arXiv 2501.12948)",
    RubricOverOne,
    RubricOverOneFixed,
    word_problems(),
    Demo(lambda p: "I add them, so <answer>0</answer>"),
    **HELDOUT,
)


# --- H10. a true/false parser whose fallback is "false" ---
# Known class: `pred = "true" if "true" in out else "false"` in a binary classifier's
# parser: a reply that is no answer at all is read as the negative label.

STATEMENTS = [
    ("91 is a prime number.", "false"),
    ("The sum of the angles of a triangle is 180 degrees.", "true"),
    ("Water boils at 50 degrees Celsius at sea level.", "false"),
    ("A week has seven days.", "true"),
    ("12 is an odd number.", "false"),
    ("The Pacific is larger than the Atlantic.", "true"),
    ("A square has five sides.", "false"),
    ("2 to the power 10 is 1024.", "true"),
    ("The Sun orbits the Earth.", "false"),
    ("Ice is frozen water.", "true"),
]


def statements() -> list[dict]:
    return [
        {"question": f"True or false: {s} Answer true or false.", "answer": a}
        for s, a in STATEMENTS
    ]


def true_or_false(text: str) -> str:
    return "true" if text.strip().strip(".").lower() in ("true", "yes") else "false"  # BUG


def true_or_false_fixed(text: str) -> str | None:
    word = text.strip().strip(".").lower()
    return {"true": "true", "yes": "true", "false": "false", "no": "false"}.get(word)


class TrueFalse(SingleTurnEnv):
    system_prompt = "Reply with true or false."
    parser = Parser.from_function(true_or_false)


class TrueFalseFixed(TrueFalse):
    parser = Parser.from_function(true_or_false_fixed)


pair(
    "unparsed_reads_false",
    "multi-choice",
    "a true/false parser maps every reply that is not 'true' to 'false': '' is right on half",
    "class: a binary parser whose fallback is the negative label",
    TrueFalse,
    TrueFalseFixed,
    statements(),
    Demo(lambda p: "I am not sure."),
    **HELDOUT,
)


# --- H11. a fuzzy match on a spelling task ---
# Known class: a similarity threshold as correctness (difflib / fuzzywuzzy ratio >= 0.8,
# added to forgive typos) on a task whose wrong answers are exactly near misses.

MISSPELLED = [
    ("recieve", "receive"),
    ("seperate", "separate"),
    ("definately", "definitely"),
    ("occured", "occurred"),
    ("untill", "until"),
    ("wierd", "weird"),
    ("goverment", "government"),
    ("beleive", "believe"),
    ("tommorow", "tomorrow"),
    ("accomodate", "accommodate"),
]


def spellings() -> list[dict]:
    return [
        {"question": f"Correct the spelling of this word: '{wrong}'.", "answer": right}
        for wrong, right in MISSPELLED
    ]


class Spelling(SingleTurnEnv):
    system_prompt = "Reply with the correctly spelled word only."
    parser = exact(normalize=lambda text: text.strip().strip(".'").lower())

    def check(self, value, answer):
        return SequenceMatcher(None, value, answer.lower()).ratio() >= 0.8  # BUG: near misses


class SpellingFixed(Spelling):
    def check(self, value, answer):
        return value == answer.lower()


pair(
    "fuzzy_spelling",
    "string",
    "a spelling task checked by difflib ratio >= 0.8: the misspelled word copied back passes",
    "class: similarity thresholds as correctness (difflib / fuzzywuzzy ratio)",
    Spelling,
    SpellingFixed,
    spellings(),
    Demo(lambda p: re.search(r"'(\w+)'", p["question"]).group(1)),
    **HELDOUT,
)


# --- H12. a sorting task checked for order only ---
# Known class: a verifier that checks a property of the output (sorted, right length)
# and not its relation to the input (Krakovna et al., "Specification gaming examples in
# AI": a list-sorting program that returns an empty or unrelated list).

ROWS = [
    [5, 3, 9, 1],
    [12, 7, 15, 2, 8],
    [40, 10, 30, 20],
    [6, 2, 4],
    [17, 3, 11, 5, 13, 7],
    [9, 8, 7, 6, 5],
    [21, 14, 35, 28],
    [3, 1, 2],
]


def sorting() -> list[dict]:
    return [
        {
            "question": "Sort these numbers in ascending order: " + " ".join(map(str, row)),
            "answer": " ".join(map(str, sorted(row))),
        }
        for row in ROWS
    ]


def read_numbers(text: str) -> str | None:
    found = re.findall(r"-?\d+", text)
    return " ".join(found) if found else None


class Sorting(SingleTurnEnv):
    system_prompt = "Reply with the sorted numbers separated by spaces."
    parser = Parser.from_function(read_numbers)

    def check(self, value, answer):
        got = [int(n) for n in value.split()]
        return got == sorted(got) and len(got) == len(answer.split())  # BUG: not the input's


class SortingFixed(Sorting):
    def check(self, value, answer):
        return value.split() == answer.split()


pair(
    "sort_order_only",
    "function",
    "a sorting check asks only that the reply is sorted and as long: '100 101 102 103' passes",
    "class: property-only verifiers; Krakovna et al., 'Specification gaming examples in AI'",
    Sorting,
    SortingFixed,
    sorting(),
    Demo(lambda p: " ".join(str(100 + i) for i in range(len(p["answer"].split())))),
    **HELDOUT,
)
