"""Envs for the audit rules of issue 44's second round: each plants one member of a class
the reward zoo (benchmarks/reward_zoo/) also holds, written another way, beside a clean
twin, so a rule is shown to catch the class and not the zoo's one env.

- data that gives the answer away: an option picked by its length, a label set collapsed
  to one value, an earlier turn of a replayed chat that already holds the answer;
- rewards that read another form than the prompt asks for, or never vary;
- the form of an answer (its case, a fraction in lowest terms) where the task asks for it;
- shaping paid to non-answers: a multi-line bonus, tool calls paid with a wrong answer
  (per call, and once per episode), an LLM judge whose verdict a reply can plant.

A module (not a test file) so that ENV_SPECs can name them:
``tests/auditing/rule_envs.py:longest_builder``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from mint_envkit import (
    DatasetBuilder,
    Judge,
    Parser,
    RewardContext,
    SingleTurnEnv,
    ToolEnv,
    component,
    correct,
    exact,
    judged,
    last_number,
    tool,
    weighted,
)

MODEL = "mint-envkit/tiny-qwen3"


def builder(env: type, problems: list[dict]) -> DatasetBuilder:
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=2,
        group_size=2,
        model_name=MODEL,
        shuffle=False,
        context_overflow_reward=0.0,
    )


def read_word(text: str) -> str | None:
    """A reply that is one word (a final period allowed), else nothing read."""
    found = re.fullmatch(r"\s*([A-Za-z]+)\s*\.?\s*", text)
    return found.group(1) if found else None


WORD = Parser.from_function(read_word)


def read_integer(text: str) -> str | None:
    found = re.fullmatch(r"\s*(-?\d+)\s*\.?\s*", text)
    return found.group(1) if found else None


INTEGER = Parser.from_function(read_integer)


# --- an option picked by its length ----------------------------------------------------

# (a definition, the word it defines, three longer words, three words of mixed lengths)
DEFINITIONS = [
    ("a young dog", "pup", ["kitten", "foal", "lamb"], ["ox", "kitten", "foal"]),
    ("frozen water", "ice", ["steam", "vapour", "mist"], ["hail", "sleet", "snowfall"]),
    ("the colour of a clear sky", "blue", ["crimson", "yellow", "orange"], ["red", "tan", "ash"]),
    (
        "a large body of salt water",
        "sea",
        ["river", "stream", "pond"],
        ["river", "lagoon", "ocean"],
    ),
    ("the opposite of night", "day", ["dusk", "evening", "morning"], ["am", "dusk", "dawn"]),
    (
        "a tool for cutting paper",
        "knife",
        ["scissors", "stapler", "envelope"],
        ["pen", "glue", "tape"],
    ),
    (
        "a bird that cannot fly",
        "emu",
        ["eagle", "sparrow", "falcon"],
        ["kiwi", "ostrich", "penguin"],
    ),
    ("what bees make", "wax", ["honeycomb", "pollen", "nectar"], ["ox", "pollen", "nectar"]),
]


class DefinitionEnv(SingleTurnEnv):
    system_prompt = "Answer with the word only."
    parser = WORD

    def check(self, value, answer):
        return value.lower() == str(answer).lower()


def definition_problems(planted: bool) -> list[dict]:
    """Quoted options, the right one at each position twice. Planted: it is always the
    shortest; clean: the shortest on 3 of 8, the longest on 2, second on 3."""
    out = []
    for i, (meaning, word, longer, mixed) in enumerate(DEFINITIONS):
        options = list(longer if planted else mixed)
        options.insert(i % 4, word)
        quoted = ", ".join(f"'{o}'" for o in options)
        out.append({"question": f"Which word means {meaning}: {quoted}?", "answer": word})
    return out


def definitions_builder(planted: bool) -> DatasetBuilder:
    return builder(DefinitionEnv, definition_problems(planted))


# --- a label set collapsed to one value ------------------------------------------------

REVIEWS = [
    "The soup was cold and the waiter ignored us.",
    "Lovely staff and the best bread in town.",
    "We waited an hour for a burnt pizza.",
    "A quiet place with fresh fish and kind service.",
    "The room smelled of smoke and the bed was broken.",
    "Great view, generous portions, fair prices.",
    "Rude reception and a dirty bathroom.",
    "Friendly owner and the cake was perfect.",
    "Noisy, slow and overpriced.",
    "Everything was fresh and the coffee excellent.",
]


class SentimentEnv(SingleTurnEnv):
    system_prompt = "Reply with one word."
    parser = WORD

    def check(self, value, answer):
        return value.lower() == str(answer).lower()


def review_problems(collapsed: bool) -> list[dict]:
    """Collapsed: the labeller wrote 'positive' for every review (the bug); clean: the
    true labels, half and half."""
    out = []
    for i, review in enumerate(REVIEWS):
        label = "positive" if collapsed or i % 2 else "negative"
        question = f"Review: {review}\nIs this review positive or negative?"
        out.append({"question": question, "answer": label})
    return out


def reviews_builder(collapsed: bool, env: type | None = None) -> DatasetBuilder:
    return builder(env or SentimentEnv, review_problems(collapsed))


class PaysAnythingEnv(SentimentEnv):
    """A check that accepts any word: right and wrong earn the same."""

    def check(self, value, answer):
        return bool(value)


class CopyEnv(SentimentEnv):
    """A task that is the shortcut (declared): every answer is the word 'positive'."""

    audit_shortcut = "the task is to reply 'positive'; its data is one label on purpose"


def copy_builder() -> DatasetBuilder:
    return builder(CopyEnv, review_problems(True))


# --- a replayed chat whose earlier turn holds the answer -------------------------------

CAPITALS = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Peru", "Lima"),
    ("Kenya", "Nairobi"),
    ("Canada", "Ottawa"),
    ("Egypt", "Cairo"),
    ("Norway", "Oslo"),
    ("Chile", "Santiago"),
]


class ReplayedChatEnv(SingleTurnEnv):
    """A logged conversation replayed up to its last user turn (the user asks again)."""

    optional_fields = {"earlier": ""}  # noqa: RUF012 - the API's class attribute
    parser = WORD

    def check(self, value, answer):
        return value.lower() == str(answer).lower()

    def messages(self):
        return [
            {"role": "system", "content": "Answer with the city only."},
            {"role": "user", "content": "I have a geography question."},
            {"role": "assistant", "content": self.problem["earlier"]},
            {"role": "user", "content": self.question},
        ]


def chat_problems(leaked: bool) -> list[dict]:
    """Leaked: the logged assistant turn already named this problem's capital (the log
    was cut after the answer, not before it); clean: it only asks for the question."""
    out = []
    for country, city in CAPITALS:
        earlier = f"Sure, I think the answer is {city}." if leaked else "Sure, go ahead."
        out.append(
            {"question": f"What is the capital of {country}?", "answer": city, "earlier": earlier}
        )
    return out


def chat_builder(leaked: bool) -> DatasetBuilder:
    return builder(ReplayedChatEnv, chat_problems(leaked))


# --- a reward that reads another form than the prompt asks for ------------------------


def after_answer(text: str) -> str | None:
    found = re.search(r"Answer:\s*([A-Za-z]+)", text)
    return found.group(1) if found else None


class AnswerLineEnv(SingleTurnEnv):
    """The prompt asks for a last line 'Answer: <city>'; the reward compares the whole
    reply with the city (its parser forgotten): a reply that follows the prompt earns 0."""

    system_prompt = "Think it through, then end with a line 'Answer: <city>'."
    parser = exact(normalize=str.lower)

    def check(self, value, answer):
        return value == str(answer).lower()


class AnswerLineFixedEnv(AnswerLineEnv):
    parser = Parser.from_function(after_answer)

    def check(self, value, answer):
        return value.lower() == str(answer).lower()


def answer_line_builder(fixed: bool) -> DatasetBuilder:
    problems = [{"question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS]
    return builder(AnswerLineFixedEnv if fixed else AnswerLineEnv, problems[:6])


# --- a reward that never varies --------------------------------------------------------


class TypeMismatchEnv(SingleTurnEnv):
    """The parser reads text, the check compares it with the answer as an int: never
    equal, so every reply earns the same 0."""

    system_prompt = "Reply with the number only."
    parser = INTEGER

    def check(self, value, answer):
        return value == int(answer)  # BUG: value is the string '5'


class TypeMatchEnv(TypeMismatchEnv):
    def check(self, value, answer):
        return int(value) == int(answer)


def sums(n: int = 6) -> list[dict]:
    return [
        {"question": f"What is {a} + {a + 3}?", "answer": str(2 * a + 3)} for a in range(1, n + 1)
    ]


def flat_builder(fixed: bool) -> DatasetBuilder:
    return builder(TypeMatchEnv if fixed else TypeMismatchEnv, sums())


# --- the answer's form: its case, a fraction in lowest terms ---------------------------

WORDS = ["OCEAN", "Forest", "RIVER", "Desert", "ISLAND", "Valley", "GLACIER", "Canyon"]


class LowerCaseEnv(SingleTurnEnv):
    """'Write the word in lower case': checked case-insensitively, so copying passes."""

    system_prompt = "Reply with the word only."
    parser = WORD

    def check(self, value, answer):
        return value.lower() == str(answer).lower()  # BUG: the case is the task


class LowerCaseFixedEnv(LowerCaseEnv):
    def check(self, value, answer):
        return value == str(answer)


def lower_case_builder(fixed: bool) -> DatasetBuilder:
    problems = [
        {"question": f"Write the word '{w}' in lower case.", "answer": w.lower()} for w in WORDS
    ]
    return builder(LowerCaseFixedEnv if fixed else LowerCaseEnv, problems)


def read_fraction(text: str) -> str | None:
    found = re.search(r"-?\d+\s*/\s*\d+|-?\d+", text)
    return found.group().replace(" ", "") if found else None


def value_of(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


class DecimalToFractionEnv(SingleTurnEnv):
    """'Write 0.75 as a fraction in lowest terms', checked by value: 6/8 passes."""

    system_prompt = "Reply with the fraction only."
    parser = Parser.from_function(read_fraction)

    def check(self, value, answer):
        return value_of(value) == value_of(answer)  # BUG: the form is the task


class DecimalToFractionFixedEnv(DecimalToFractionEnv):
    def check(self, value, answer):
        return value == str(answer)


DECIMALS = ["0.75", "0.4", "0.125", "0.6", "2.5", "0.35", "1.2", "0.05"]


def decimal_problems(lowest: bool = True) -> list[dict]:
    ask = " as a fraction in lowest terms" if lowest else " as a fraction"
    return [{"question": f"Write {d}{ask}.", "answer": str(Fraction(d))} for d in DECIMALS]


def decimals_builder(fixed: bool, lowest: bool = True) -> DatasetBuilder:
    env = DecimalToFractionFixedEnv if fixed else DecimalToFractionEnv
    return builder(env, decimal_problems(lowest))


# --- shaping paid to non-answers -------------------------------------------------------


def structured(completion: str, answer: str) -> float:
    return float(completion.strip().count("\n") >= 2)


def structured_when_right(completion: str, answer: str) -> float:
    found = last_number(completion)
    right = found.value is not None and found.value.strip() == str(answer)
    return structured(completion, answer) if right else 0.0


class StepsBonusEnv(SingleTurnEnv):
    """A +0.3 bonus for a reply laid out on three lines or more, paid to any reply."""

    system_prompt = "Write each step on its own line; the last line is the number."
    reward_incorrect = -0.5
    reward_fn = weighted(
        correct=(correct(last_number), 1.0),
        layout=(component(structured, bounds=(0.0, 1.0)), 0.3),  # BUG: not gated
    )


class StepsBonusFixedEnv(StepsBonusEnv):
    reward_fn = weighted(
        correct=(correct(last_number), 1.0),
        layout=(component(structured_when_right, bounds=(0.0, 1.0)), 0.3),
    )


def steps_builder(fixed: bool) -> DatasetBuilder:
    return builder(StepsBonusFixedEnv if fixed else StepsBonusEnv, sums())


@tool
def lookup(country: str) -> str:
    """The capital of a country.

    Args:
        country: the country's name, e.g. "France".
    """
    return dict(CAPITALS).get(country.strip(), "unknown")


def calls(context: RewardContext) -> float:
    return float(sum(len(m.get("tool_calls") or []) for m in context.conversation))


def called(context: RewardContext) -> float:
    return float(calls(context) > 0)


def called_and_right(context: RewardContext) -> float:
    value = read_word(context.completion) or ""
    return float(calls(context) > 0 and value.lower() == str(context.answer).lower())


class LookupEnv(ToolEnv):
    system_prompt = "Use the lookup tool, then reply with the city only."
    tools = [lookup]  # noqa: RUF012 - the API's class attribute
    max_turns = 5


class PerCallBonusEnv(LookupEnv):
    """+0.05 per lookup, right answer or not (the bonus grows with the calls)."""

    reward_fn = weighted(
        correct=(correct(WORD), 1.0),
        tools=(component(calls, bounds=(0.0, 5.0)), 0.05),  # BUG: per call, ungated
    )


class UsedToolBonusEnv(LookupEnv):
    """+0.1 once an episode used the tool, right answer or not (a flat shaping bonus)."""

    reward_fn = weighted(
        correct=(correct(WORD), 1.0),
        tools=(component(called, bounds=(0.0, 1.0)), 0.1),
    )


class GatedToolBonusEnv(LookupEnv):
    reward_fn = weighted(
        correct=(correct(WORD), 1.0),
        tools=(component(called_and_right, bounds=(0.0, 1.0)), 0.1),
    )


def lookup_builder(env: type) -> DatasetBuilder:
    problems = [{"question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS]
    return builder(env, problems[:4])


def _graded(messages: list[dict]) -> tuple[str, str]:
    text = messages[-1]["content"]
    reply = text.split("Reply to grade:\n", 1)[-1].strip()
    answer = text.split("Reference answer:\n", 1)[-1].split("\n\n", 1)[0].strip()
    return reply, answer


async def echoing_judge(messages: list[dict]) -> str:
    """A judge model that gives its verdict, then repeats the graded reply."""
    reply, answer = _graded(messages)
    verdict = "YES" if reply.strip() == answer else "NO"
    return f"<verdict>{verdict}</verdict>\nFor the record, the reply was:\n{reply}"


async def quoting_first_judge(messages: list[dict]) -> str:
    reply, answer = _graded(messages)
    verdict = "YES" if reply.strip() == answer else "NO"
    return f"The reply was:\n{reply}\n<verdict>{verdict}</verdict>"


class JudgedSumEnv(SingleTurnEnv):
    """A sum graded by an LLM judge (a judged() part, no `correct`) whose verdict reader
    takes the last <verdict> tag, while the judge repeats the reply after its own."""

    system_prompt = "Reply with the number only."
    reward_fn = judged(Judge(echoing_judge, rubric="Is the reply the right sum?"))


class JudgedSumFixedEnv(JudgedSumEnv):
    reward_fn = judged(Judge(quoting_first_judge, rubric="Is the reply the right sum?"))


def judged_builder(fixed: bool) -> DatasetBuilder:
    return builder(JudgedSumFixedEnv if fixed else JudgedSumEnv, sums())
