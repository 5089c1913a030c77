"""Math and number checks: tolerances, casts, normalisers, prefixes, expressions, units.

Each class pair is the buggy env and its clean twin; the comment above each bug says
where it comes from.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import string
from fractions import Fraction

from mint_envkit import (
    Parser,
    SingleTurnEnv,
    boxed,
    component,
    exact,
    first_number,
    same_number,
    xml_tag,
)
from mint_envkit.parsers import as_number

from .zoo import (
    Demo,
    as_fraction,
    pair,
    read_float,
    read_fraction,
    read_number,
)

SYSTEM = "Reply with the number only."


def addition() -> list[dict]:
    pairs = [(12, 7), (25, 17), (8, 9), (31, 14), (6, 6), (45, 28), (19, 23), (7, 35), (52, 9)]
    return [{"question": f"What is {a} + {b}?", "answer": str(a + b)} for a, b in pairs]


def division() -> list[dict]:
    pairs = [(7, 2), (9, 4), (5, 8), (27, 6), (3, 4), (11, 5), (13, 8), (1, 16), (45, 12)]
    return [
        {"question": f"What is {a} / {b}? Give the exact decimal.", "answer": str(a / b)}
        for a, b in pairs
    ]


# --- 1. a float tolerance written as "not far", which NaN satisfies ---
# DMOJ judge-server #279 ("floatsrel checker accepts 'nan' as a valid answer",
# https://github.com/DMOJ/judge-server/issues/279); Kattis problemtools #202 (inf and nan
# treated as numbers by the default validator); issue 44 of this project.


class NanTolerance(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = Parser.from_function(read_float)
    audit_lenient = "numbers within 1e-6 of the answer count as right"  # intended

    def check(self, value, answer):
        return not abs(float(value) - float(answer)) > 1e-6  # BUG: NaN compares false


class NanToleranceFixed(NanTolerance):
    def check(self, value, answer):
        return abs(float(value) - float(answer)) <= 1e-6


pair(
    "nan_tolerance",
    "math",
    "float tolerance `not abs(v - a) > 1e-6`: the reply 'nan' is within it",
    "https://github.com/DMOJ/judge-server/issues/279; issue 44",
    NanTolerance,
    NanToleranceFixed,
    division(),
    Demo(lambda p: "nan"),
)


# --- 2. a relative tolerance scaled by the reply instead of the reference ---
# Kattis problemtools #202 (https://github.com/Kattis/problemtools/pull/202: inf and nan
# must not count as numbers in a float validator); a hand-written `rel_tol * abs(reply)`.


def percents() -> list[dict]:
    rows = [(15, 80), (20, 35), (75, 12), (5, 260), (40, 45), (12, 50), (90, 30), (35, 60)]
    return [{"question": f"What is {p}% of {n}?", "answer": str(p * n / 100)} for p, n in rows]


class RelativeTolerance(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = Parser.from_function(read_float)
    audit_lenient = "numbers within a relative 1e-6 of the answer count as right"  # intended

    def check(self, value, answer):
        v, a = float(value), float(answer)
        return abs(v - a) <= 1e-6 * abs(v)  # BUG: scaled by the reply: inf <= inf


class RelativeToleranceFixed(RelativeTolerance):
    def check(self, value, answer):
        return math.isclose(float(value), float(answer), rel_tol=1e-6)


pair(
    "inf_relative_tolerance",
    "math",
    "relative tolerance `abs(v - a) <= 1e-6 * abs(v)` (scaled by the reply): 'inf' passes",
    "https://github.com/Kattis/problemtools/pull/202",
    RelativeTolerance,
    RelativeToleranceFixed,
    percents(),
    Demo(lambda p: "inf"),
)


# --- 3. a lossy cast before the comparison ---
# Known class: normalising "19.0" and "19" with int(float(x)) (GSM8K-style graders that
# cast the prediction to int) also maps 19.9 to 19.


class IntCast(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = Parser.from_function(read_number)

    def check(self, value, answer):
        return int(float(value)) == int(float(answer))  # BUG: 19.9 -> 19


class IntCastFixed(IntCast):
    def check(self, value, answer):
        return same_number(value, answer)


pair(
    "int_truncation",
    "math",
    "`int(float(v)) == int(a)`: '19.9' is scored as 19",
    "class: lossy cast before comparing (int() of a float prediction)",
    IntCast,
    IntCastFixed,
    addition(),
    Demo(lambda p: p["answer"] + ".9"),
)


# --- 4. a float tolerance on integer answers ---
# Math-Verify #14 (https://github.com/huggingface/Math-Verify/issues/14: near values such
# as 1/2^99 and 1/2^98 verified equal through a numeric tolerance).


def products() -> list[dict]:
    pairs = [(23, 17), (31, 24), (46, 13), (52, 18), (27, 29), (64, 12), (38, 21), (19, 43)]
    return [{"question": f"What is {a} * {b}?", "answer": str(a * b)} for a, b in pairs]


class LooseTolerance(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = Parser.from_function(read_number)

    def check(self, value, answer):
        return math.isclose(float(value), float(answer), rel_tol=1e-3)  # BUG: 391.3 for 391


class LooseToleranceFixed(LooseTolerance):
    def check(self, value, answer):
        return same_number(value, answer)


pair(
    "loose_rel_tolerance",
    "math",
    "`isclose(rel_tol=1e-3)` on integer products: 391.3 is scored as 391",
    "https://github.com/huggingface/Math-Verify/issues/14",
    LooseTolerance,
    LooseToleranceFixed,
    products(),
    Demo(lambda p: p["answer"] + ".3"),
)


# --- 5. SQuAD's answer normaliser on numbers ---
# SQuAD v1.1 evaluate.py `normalize_answer` (lower, remove punctuation and articles),
# reused for numeric answers: "-7" and "7", "5.25" and "525" become equal.


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def subtraction() -> list[dict]:
    rows = [("4", "11"), ("7.5", "2.25"), ("3", "15"), ("10.5", "0.25"), ("12", "30")]
    rows += [("2.75", "1.5"), ("8", "21"), ("6.25", "4")]
    return [
        {"question": f"What is {a} - {b}?", "answer": _exact_text(Fraction(a) - Fraction(b))}
        for a, b in rows
    ]


def _exact_text(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


class SquadNormalized(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = exact()

    def check(self, value, answer):
        return normalize_answer(value) == normalize_answer(answer)  # BUG: drops '-' and '.'


class SquadNormalizedFixed(SquadNormalized):
    def check(self, value, answer):
        return same_number(value, answer)


pair(
    "punctuation_stripped_numbers",
    "math",
    "SQuAD normalize_answer on numbers: '7' passes for -7, '525' for 5.25",
    "SQuAD v1.1 evaluate.py normalize_answer (remove_punc) reused on numeric answers",
    SquadNormalized,
    SquadNormalizedFixed,
    subtraction(),
    Demo(lambda p: p["answer"].replace("-", "").replace(".", "")),
)


# --- 6. a prefix check: "10", "100", "1.5" pass for "1" ---
# LQDJudge online-judge PR #286 (https://github.com/LQDJudge/online-judge/pull/286:
# `re.match` anchors only the start, so an answer that starts with the key passes).


class StartsWith(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = exact()

    def check(self, value, answer):
        return value.startswith(answer)  # BUG: meant to allow "19." and "19 apples"


class StartsWithFixed(StartsWith):
    def check(self, value, answer):
        return same_number(value.rstrip("."), answer)


pair(
    "startswith_answer",
    "math",
    "`reply.startswith(answer)`: '190' and '19.5' pass for 19",
    "https://github.com/LQDJudge/online-judge/pull/286",
    StartsWith,
    StartsWithFixed,
    addition(),
    Demo(lambda p: p["answer"] + "0"),
)


# --- 7. the first number of the reply, when the reply may restate the question ---
# verifiers #2447 (first vs last answer when a completion restates numbers of the
# question); this project's arithmetic example before e6931de (docs/audit.md).


def with_identities() -> list[dict]:
    rows = [("7 * 1", 7), ("12 + 9", 21), ("15 + 0", 15), ("8 * 6", 48), ("23 - 0", 23)]
    rows += [("14 + 27", 41), ("9 * 1", 9), ("36 - 19", 17), ("5 * 7", 35), ("40 + 0", 40)]
    return [{"question": f"What is {q}?", "answer": str(a)} for q, a in rows]


class FirstNumber(SingleTurnEnv):
    system_prompt = SYSTEM
    parser = first_number  # BUG: "What is 15 + 0? 15" reads 15 from the restated question


class FirstNumberFixed(FirstNumber):
    parser = Parser.from_function(read_number)


pair(
    "first_number_restated",
    "math",
    "the parser reads the reply's first number: restating 'What is 15 + 0?' answers 15",
    "verifiers #2447 (first vs last number); docs/audit.md (e6931de)",
    FirstNumber,
    FirstNumberFixed,
    with_identities(),
    Demo(lambda p: p["question"]),
)


# --- 8. countdown without the check that the equation uses the given numbers ---
# TinyZero verl/utils/reward_score/countdown.py `validate_equation` (each given number
# used exactly once): a scorer that only evaluates the equation pays the target itself.

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def evaluate(expression: str) -> Fraction | None:
    """An arithmetic expression's exact value (+ - * / and parentheses), else None."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return value(node.left) / value(node.right)
        raise ValueError("not arithmetic")

    try:
        return value(tree.body)
    except (ValueError, ZeroDivisionError):
        return None


def countdown() -> list[dict]:
    rows = [((3, 5, 7), "3*5+7"), ((4, 9, 2), "4*9-2"), ((6, 8, 3), "(6+8)*3")]
    rows += [((12, 4, 5), "12/4+5"), ((7, 2, 9), "7*9-2"), ((10, 6, 3), "10*3+6")]
    rows += [((25, 5, 4), "25/5*4"), ((8, 11, 6), "8*6-11")]
    out = []
    for numbers, equation in rows:
        target = evaluate(equation)
        listed = ", ".join(map(str, numbers))
        out.append(
            {
                "question": f"Using the numbers {listed}, each exactly once, with + - * / and "
                f"parentheses, write an expression equal to {target}.",
                "answer": equation,
                "numbers": list(numbers),
                "target": int(target),
            }
        )
    return out


class Countdown(SingleTurnEnv):
    system_prompt = "Think, then give the expression in <answer></answer>."
    parser = xml_tag("answer")
    optional_fields = {"numbers": (), "target": 0}  # noqa: RUF012 - the API's class attribute

    def check(self, value, answer):
        return evaluate(value) == self.problem["target"]  # BUG: numbers used never checked


class CountdownFixed(Countdown):
    def check(self, value, answer):
        used = sorted(int(n) for n in re.findall(r"\d+", value))
        return used == sorted(self.problem["numbers"]) and evaluate(value) == self.problem["target"]


pair(
    "countdown_no_number_check",
    "math",
    "countdown scorer evaluates the expression but never checks the numbers used: "
    "'<answer>22</answer>' passes",
    "TinyZero verl/utils/reward_score/countdown.py validate_equation "
    "(https://github.com/Jiayi-Pan/TinyZero)",
    Countdown,
    CountdownFixed,
    countdown(),
    Demo(lambda p: f"<answer>{p['target']}</answer>"),
)


# --- 9. "simplify" checked by value: the unsimplified input passes ---
# Known class: value-equivalence graders (math-verify and friends) on tasks whose point
# is the form of the answer ("simplify", "expand", "in lowest terms").


def fractions_to_simplify() -> list[dict]:
    rows = [(6, 8), (10, 15), (12, 4), (9, 12), (14, 21), (8, 20), (18, 24), (25, 35)]
    return [
        {
            "question": f"Simplify the fraction {p}/{q}. Reply with the fraction only.",
            "answer": str(Fraction(p, q)),
        }
        for p, q in rows
    ]


class Simplify(SingleTurnEnv):
    parser = Parser.from_function(read_fraction)

    def check(self, value, answer):
        return as_fraction(value) == as_fraction(answer)  # BUG: '6/8' equals 3/4 in value


class SimplifyFixed(Simplify):
    def check(self, value, answer):
        return value.replace(" ", "") == answer  # lowest terms, as written


pair(
    "simplify_accepts_input",
    "math",
    "'simplify p/q' checked by value only: copying the unsimplified fraction passes",
    "class: value-equivalence grading of form-asking tasks (Math-Verify "
    "https://github.com/huggingface/Math-Verify/issues/14)",
    Simplify,
    SimplifyFixed,
    fractions_to_simplify(),
    Demo(lambda p: re.search(r"\d+/\d+", p["question"]).group()),
)


# --- 10. the number checked, the unit not ---
# Known class: graders that drop units before comparing (math-verify strips units;
# mint_envkit's own math_correct says "units dropped"), on tasks whose answer is a quantity.


def quantities() -> list[dict]:
    rows = [
        ("A cyclist rides at 15 km/h for 3 hours. How far does she ride?", "45 km"),
        ("A tap fills 2 L per minute. How much water after 7 minutes?", "14 L"),
        ("A runner does 5 laps of a 400 m track. How far does he run?", "2000 m"),
        ("A box holds 6 bags of 250 g. How heavy are the bags together?", "1500 g"),
        ("A film lasts 2 hours. How long is it in minutes?", "120 min"),
        ("A bottle holds 750 mL. How much do 4 bottles hold in litres?", "3 L"),
        ("A car uses 6 L per 100 km. How much fuel for 250 km?", "15 L"),
        ("A rope of 12 m is cut into 4 equal parts. How long is each?", "3 m"),
    ]
    suffix = " Give the number and its unit."
    return [{"question": q + suffix, "answer": a} for q, a in rows]


_QUANTITY = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*\.?\s*")


def quantity(text: str) -> tuple[str, str] | None:
    """A reply that is one number and one unit: (number, unit in lower case), else None."""
    found = _QUANTITY.fullmatch(text)
    return (found.group(1), found.group(2).lower()) if found else None


class UnitBlind(SingleTurnEnv):
    parser = exact()

    def audit_equivalent(self, value, answer):  # intended: '45km', '45 KM' for '45 km'
        return value.replace(" ", "").lower() == answer.replace(" ", "").lower()

    def check(self, value, answer):
        found = first_number(value)
        return bool(found) and same_number(found.value, first_number(answer).value)  # BUG


class UnitBlindFixed(UnitBlind):
    def check(self, value, answer):
        got, want = quantity(value), quantity(answer)
        return got is not None and same_number(got[0], want[0]) and got[1] == want[1]


pair(
    "unit_insensitive",
    "math",
    "only the number is compared: '45 m' passes for 45 km",
    "class: unit-dropping graders (Math-Verify drops units; docs/rewards-math-judge.md)",
    UnitBlind,
    UnitBlindFixed,
    quantities(),
    Demo(lambda p: p["answer"].split()[0] + " kg"),
)


# --- 11. a boxed set accepted when it contains the gold ---
# Math-Verify #14 ("n=2, 3, 4" verified against "n=1, 2, 3"; "\pm 2021" against 2021);
# Visual-RFT #79 ("<answer>A or B or C</answer>" always rewarded).


def linear() -> list[dict]:
    rows = [(3, 10), (7, 12), (-4, 5), (9, 30), (11, 2), (6, 6), (-8, 1), (15, 40)]
    return [
        {
            "question": f"Solve for x: x + {b} = {c}. Put the answer in \\boxed{{}}.",
            "answer": str(c - b),
        }
        for b, c in rows
    ]


class SetContains(SingleTurnEnv):
    parser = boxed

    def check(self, value, answer):
        parts = [p.strip() for p in re.split(r",|;|\bor\b|\band\b", value)]
        return answer in parts  # BUG: a set of candidates passes when one is right


class SetContainsFixed(SetContains):
    def check(self, value, answer):
        return same_number(value, answer)


pair(
    "set_contains_gold",
    "math",
    "a boxed list is accepted when one element is the answer: '\\boxed{6, 7, 8}' passes",
    "https://github.com/huggingface/Math-Verify/issues/14; "
    "https://github.com/Liuziyu77/Visual-RFT/issues/79",
    SetContains,
    SetContainsFixed,
    linear(),
    Demo(lambda p: f"\\boxed{{{int(p['answer']) - 1}, {p['answer']}, {int(p['answer']) + 1}}}"),
)


# --- 12. a gold that does not parse pays every reply ---
# open-r1 PR #566 (https://github.com/huggingface/open-r1/pull/566: "we defaulted to
# reward = 1 when the gold answer could not be parsed"; introduced in PR #55).


def mixed_golds() -> list[dict]:
    rows = addition()[:7]
    rows += [
        {"question": "Tom has 5 apples and buys 7. How many apples?", "answer": "12 apples"},
        {"question": "A square has side 3 cm. What is its side doubled?", "answer": "6 cm"},
        {"question": "Solve 2x = 8 for x.", "answer": "x = 4"},
    ]
    return rows


def accuracy_skip_bad_gold(completion: str, answer: str) -> float:
    gold = as_number(answer)
    found = boxed(completion)
    if gold is None:
        return 1.0  # BUG: "skip" an unparseable gold by paying every reply
    return float(bool(found) and same_number(found.value, gold))


def accuracy(completion: str, answer: str) -> float:
    gold = as_number(answer)
    found = boxed(completion)
    if gold is None:  # compare as written
        return float(bool(found) and found.value.strip() == answer.strip())
    return float(bool(found) and same_number(found.value, gold))


class GoldSkip(SingleTurnEnv):
    system_prompt = "Put the final answer in \\boxed{}."
    reward_fn = component(accuracy_skip_bad_gold, bounds=(0.0, 1.0))


class GoldSkipFixed(SingleTurnEnv):
    system_prompt = "Put the final answer in \\boxed{}."
    reward_fn = component(accuracy, bounds=(0.0, 1.0))


pair(
    "gold_unparseable_pays",
    "function",
    "a reward function pays 1.0 to every reply where the gold does not parse (3 of 10)",
    "https://github.com/huggingface/open-r1/pull/566",
    GoldSkip,
    GoldSkipFixed,
    mixed_golds(),
    Demo(lambda p: ""),
)
