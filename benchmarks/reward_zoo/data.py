"""Dataset bugs and list-valued partial credit: labels that never vary, answers leaked
into the prompt (few-shot, question text, system hint), order-blind and off-by-one
partial credit.
"""

from __future__ import annotations

import re

from mint_envkit import Parser, SingleTurnEnv, component, exact

from .zoo import Demo, build, case, integers, pair, read_number

NUMBER_ONLY = Parser.from_function(read_number)


# --- 47. a label generator that always says yes ---
# reasoning-gym #58 and anchors.md (generators and seeds); class: a comparison dataset
# generated with b = a - k, so "a > b" is always true; the right policy is constant.


def comparisons(buggy: bool) -> list[dict]:
    out = []
    for i in range(12):
        a = 20 + 7 * i % 60
        b = a - (3 + i % 5) if buggy or i % 2 == 0 else a + (2 + i % 7)
        answer = "yes" if a > b else "no"
        out.append({"question": f"Is {a} greater than {b}? Answer yes or no.", "answer": answer})
    return out


class YesNo(SingleTurnEnv):
    parser = exact(str.lower)


@case(
    "constant_label",
    "data",
    "the generator makes b = a - k, so every answer is 'yes' (constant 'yes' is 100% right)",
    "class: degenerate procedural generators (reasoning-gym #58, seeds and generators; anchors.md)",
    Demo(lambda p: "yes"),
)
def constant_label(buggy: bool):
    return build(YesNo, comparisons(buggy))


# --- 48. the few-shot example is the problem itself ---
# OpenO1-SFT #10 (https://github.com/Open-Source-O1/Open-O1/issues/10: test problems
# inside the training data); class: few-shot examples drawn from the same pool without
# excluding the problem (an off-by-one in the index).


def word_problems() -> list[dict]:
    rows = [
        ("Ann has 12 pens and gives away 5. How many pens are left?", "7"),
        ("A bus carries 23 people and 19 more get on. How many are on the bus?", "42"),
        ("Tom reads 15 pages a day for 6 days. How many pages does he read?", "90"),
        ("A box has 48 eggs in rows of 8. How many rows are there?", "6"),
        ("Mia saves 25 dollars a week for 4 weeks. How much does she save?", "100"),
        ("A rope of 60 m is cut into pieces of 12 m. How many pieces?", "5"),
        ("Sam had 81 cards and lost 27. How many cards does he have?", "54"),
        ("A garden has 9 rows of 13 tulips. How many tulips?", "117"),
    ]
    return [{"question": q, "answer": a} for q, a in rows]


class FewShot(SingleTurnEnv):
    system_prompt = "Solve the problem. Reply with the number only."
    optional_fields = {"shot_question": "", "shot_answer": ""}  # noqa: RUF012 - the API's class attribute

    parser = NUMBER_ONLY

    def messages(self):
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.problem["shot_question"]},
            {"role": "assistant", "content": self.problem["shot_answer"]},
            {"role": "user", "content": self.question},
        ]


def with_shots(buggy: bool) -> list[dict]:
    rows = word_problems()
    out = []
    for i, row in enumerate(rows):
        shot = rows[i] if buggy else rows[(i + 1) % len(rows)]  # BUG: i, meant i + 1
        out.append({**row, "shot_question": shot["question"], "shot_answer": shot["answer"]})
    return out


@case(
    "few_shot_contains_problem",
    "data",
    "the few-shot example is the problem itself, with its answer: copying it passes",
    "https://github.com/Open-Source-O1/Open-O1/issues/10; class: few-shot drawn from the "
    "problem's own pool",
    Demo(lambda p: p["shot_answer"]),
)
def few_shot_contains_problem(buggy: bool):
    return build(FewShot, with_shots(buggy))


# --- 49. GSM8K questions that kept their worked solution ---
# DataAgentBench PR #56 (https://github.com/ucbepic/DataAgentBench/pull/56: the gold
# answer injected into the prompt); class: a preprocessing split that left the solution
# and its '#### 72' line in the question.


def gsm8k(buggy: bool) -> list[dict]:
    solved = [
        ("7 + 5 = 12, so 12 pens minus the 5 given... 12 - 5 = 7", "7"),
        ("23 + 19 = 42", "42"),
        ("15 * 6 = 90", "90"),
        ("48 / 8 = 6", "6"),
        ("25 * 4 = 100", "100"),
        ("60 / 12 = 5", "5"),
        ("81 - 27 = 54", "54"),
        ("9 * 13 = 117", "117"),
    ]
    out = []
    for row, (work, answer) in zip(word_problems(), solved, strict=True):
        question = row["question"]
        if buggy:
            question += f"\n{work}\n#### {answer}"
        out.append({"question": question, "answer": answer})
    return out


class Gsm8k(SingleTurnEnv):
    system_prompt = "Solve the problem. Reply with the number only."
    parser = NUMBER_ONLY


@case(
    "gsm8k_solution_in_question",
    "data",
    "the question text still holds the worked solution and its '#### answer' line",
    "https://github.com/ucbepic/DataAgentBench/pull/56; class: GSM8K solution left in the question",
    Demo(lambda p: str(integers(p["question"])[-1])),
)
def gsm8k_solution_in_question(buggy: bool):
    return build(Gsm8k, gsm8k(buggy))


# --- 50. a hint field that holds the answer, shown in the system prompt ---
# DataAgentBench PR #56 ("GROUND TRUTH HINT (format only, not the answer): 'MI'", the
# hint line being the gold answer); futuresim #1 (questions revealing each other's answers).


class Hinted(SingleTurnEnv):
    parser = NUMBER_ONLY
    optional_fields = {"hint": ""}  # noqa: RUF012 - the API's class attribute

    def messages(self):
        system = f"Reply with the number only. Hint: {self.problem['hint']}"
        return [{"role": "system", "content": system}, {"role": "user", "content": self.question}]


def hinted(buggy: bool) -> list[dict]:
    out = []
    for row in word_problems():
        hint = f"the result is {row['answer']}." if buggy else "write the operation first."
        out.append({**row, "hint": hint})
    return out


@case(
    "hint_leaks_answer",
    "data",
    "each problem's 'hint', shown in the system prompt, is its answer",
    "https://github.com/ucbepic/DataAgentBench/pull/56; "
    "https://github.com/OpenForecaster/futuresim/issues/1",
    Demo(lambda p: " ".join(map(str, integers(p["hint"])))),
)
def hint_leaks_answer(buggy: bool):
    return build(Hinted, hinted(buggy))


# --- 51. sorting scored by the overlap of the sets of numbers ---
# Known class: list answers scored as sets (order-blind partial credit) on a task whose
# point is the order; asuzukosi/post-training-experiments #5 (partial credit vs strict).


def sorting() -> list[dict]:
    lists = [[9, 2, 7, 4], [15, 3, 8], [6, 1, 5, 2], [20, 11, 14], [7, 3, 9, 1], [12, 4, 10]]
    lists += [[5, 13, 2, 8], [18, 6, 9]]
    return [
        {
            "question": f"Sort in ascending order: {', '.join(map(str, xs))}. Reply with the "
            "numbers separated by commas.",
            "answer": ", ".join(map(str, sorted(xs))),
        }
        for xs in lists
    ]


_LIST = re.compile(r"\s*-?\d+(?:\s*,\s*-?\d+)*\s*\.?\s*")


def listed(text: str) -> list[int] | None:
    """The reply's numbers when it is a comma-separated list of integers, else None."""
    return integers(text) if _LIST.fullmatch(text) else None


class ListAnswer(SingleTurnEnv):
    def audit_equivalent(self, value, answer):  # intended: '2,4,7,9' for '2, 4, 7, 9'
        return listed(value) is not None and listed(value) == listed(answer)


def overlap(completion: str, answer: str) -> float:
    want = set(integers(answer))
    return len(set(integers(completion)) & want) / len(want)  # BUG: order ignored


def in_order(completion: str, answer: str) -> float:
    got = listed(completion)
    return float(got is not None and got == integers(answer))


class SortOverlap(ListAnswer):
    reward_fn = component(overlap, bounds=(0.0, 1.0))


class SortInOrder(ListAnswer):
    reward_fn = component(in_order, bounds=(0.0, 1.0))


pair(
    "partial_sort_set_overlap",
    "partial-credit",
    "a sorting task paid by the share of the numbers present: the unsorted input earns 1.0",
    "class: order-blind partial credit; "
    "https://github.com/asuzukosi/post-training-experiments/issues/5",
    SortOverlap,
    SortInOrder,
    sorting(),
    Demo(lambda p: p["question"].split(": ")[1].split(".")[0]),
)


# --- 52. off-by-one in positional partial credit ---
# Known class: an off-by-one denominator (n - 1 "to forgive one slip"), so a list with
# one wrong element earns full credit.


def multiples() -> list[dict]:
    rows = [(7, 4), (3, 5), (9, 4), (4, 6), (11, 3), (6, 5), (8, 4), (12, 3)]
    return [
        {
            "question": f"List the first {n} positive multiples of {k}, separated by commas.",
            "answer": ", ".join(str(k * i) for i in range(1, n + 1)),
        }
        for k, n in rows
    ]


def positional_forgiving(completion: str, answer: str) -> float:
    got, want = listed(completion) or [], integers(answer)
    hits = sum(g == w for g, w in zip(got, want, strict=False))
    return min(1.0, hits / (len(want) - 1))  # BUG: meant len(want)


def positional(completion: str, answer: str) -> float:
    got, want = listed(completion) or [], integers(answer)
    hits = sum(g == w for g, w in zip(got, want, strict=False))
    return hits / max(len(want), len(got))


class OffByOne(ListAnswer):
    reward_fn = component(positional_forgiving, bounds=(0.0, 1.0))


class OffByOneFixed(ListAnswer):
    reward_fn = component(positional, bounds=(0.0, 1.0))


pair(
    "partial_off_by_one",
    "partial-credit",
    "positional partial credit divided by n - 1: a list with one wrong element earns 1.0",
    "class: off-by-one in partial credit",
    OffByOne,
    OffByOneFixed,
    multiples(),
    Demo(lambda p: p["answer"].rsplit(",", 1)[0] + ", 1"),
)
