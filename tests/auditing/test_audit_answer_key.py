"""The answer key itself (``answer_key``): missing values written as text and look-alike
letters in the reference answers fail the audit, on envs other than the reward zoo's
(an element-symbol quiz, a capital-city quiz), each beside a clean twin."""

from __future__ import annotations

from mint_envkit import DatasetBuilder, SingleTurnEnv, exact
from mint_envkit.auditing import audit
from mint_envkit.auditing.answer_key import answer_key_finding, mixed_script

MODEL = "mint-envkit/tiny-qwen3"

SYMBOLS = [
    ("gold", "Au"),
    ("iron", "Fe"),
    ("sodium", "Na"),
    ("silver", "Ag"),
    ("lead", "Pb"),
    ("tin", "Sn"),
    ("copper", "Cu"),
    ("mercury", "Hg"),
]
CAPITALS = [
    ("Peru", "Lima"),
    ("Norway", "Oslo"),
    ("Cuba", "Havana"),
    ("Kenya", "Nairobi"),
    ("Chile", "Santiago"),
    ("Japan", "Tokyo"),
    ("Egypt", "Cairo"),
    ("Spain", "Madrid"),
]


class SymbolQuiz(SingleTurnEnv):
    system_prompt = "Reply with the chemical symbol only."
    parser = exact()

    def check(self, parsed, answer):
        return parsed == answer


class CapitalQuiz(SingleTurnEnv):
    system_prompt = "Reply with the city's name only."
    parser = exact(normalize=str.lower)

    def check(self, parsed, answer):
        return parsed == answer.lower()


def _builder(env: type, problems: list[dict]) -> DatasetBuilder:
    return DatasetBuilder(
        env=env, problems=problems, batch_size=2, group_size=2, model_name=MODEL, shuffle=False
    )


def symbols(lost: bool) -> DatasetBuilder:
    """A quiz read from a sheet whose empty cells became 'null' (2 of 8 when ``lost``)."""
    return _builder(
        SymbolQuiz,
        [
            {
                "question": f"What is the symbol of {element}?",
                "answer": "null" if lost and i in (2, 5) else symbol,
            }
            for i, (element, symbol) in enumerate(SYMBOLS)
        ],
    )


def capitals(scraped: bool) -> DatasetBuilder:
    """Capitals whose 'o' is the Greek omicron (5 of 8 answers) when ``scraped``."""
    return _builder(
        CapitalQuiz,
        [
            {
                "question": f"What is the capital of {country}?",
                "answer": city.replace("o", "\u03bf") if scraped and "o" in city else city,
            }
            for country, city in CAPITALS
        ],
    )


def failing(report) -> list[tuple[str, str]]:
    return sorted((f.kind, f.probe) for f in report.findings if f.fails)


async def test_answers_that_are_a_missing_value_fail_the_audit_and_the_twin_passes():
    buggy = await audit(symbols(lost=True), quiet=True, search=0)
    assert ("answer_key", "answers") in failing(buggy), buggy.table()
    message = next(f.message for f in buggy.findings if f.kind == "answer_key")
    assert "2 of 8 answers are a missing value written as text (e.g. 'null'" in message
    clean = await audit(symbols(lost=False), quiet=True, search=0)
    assert clean.ok, clean.table()


async def test_answers_with_look_alike_letters_fail_the_audit_and_the_twin_passes():
    buggy = await audit(capitals(scraped=True), quiet=True, search=0)
    assert failing(buggy) == [("answer_key", "answers")], buggy.table()
    message = next(f.message for f in buggy.findings if f.kind == "answer_key")
    assert "5 of 8 answers mix Latin letters with look-alike" in message
    assert "greek small letter omicron" in message
    clean = await audit(capitals(scraped=False), quiet=True, search=0)
    assert clean.ok, clean.table()


def test_the_rule_reads_scripts_and_missing_values_and_nothing_else():
    assert mixed_script("Lim\u0430") == "Lim\u0430"  # Cyrillic a
    assert mixed_script("\u0391thens") == "\u0391thens"  # Greek capital alpha
    # one script a word: Greek, Cyrillic, Japanese (kanji with kana), Latin with digits
    for clean in ("Ελλάδα", "Москва", "食べる", "CO2 and H2O", "école", "3/4", ""):
        assert mixed_script(clean) is None, clean
    for missing in (["NaN"], [" "], ["undefined"], [""]):
        assert answer_key_finding(["Lima", *missing]) is not None, missing
    # an answer that mentions 'nan' or 'null' is not a missing value; None is no answer
    assert answer_key_finding(["nanometre", "null hypothesis", "None of them", None]) is None
