"""Generated probes: a seeded search over replies derived from the answer's type.

The listed probes answer the traps someone thought of; the next env has the next bug.
For each family of replies below, Hypothesis (``hypothesis.find``) draws replies from the
reference answer of an audited problem, writes them in the env's format and scores them
through the env's real path; it looks for a reply that the env scores right while the
strict comparison (:mod:`mint_envkit.auditing.strict`) says it is not the answer, or one
the env raises on. What it finds it shrinks to the smallest such reply, which is then
sent on every audited problem and shown as a row ``gen_<family>`` in the probe table.

| answer | family | replies |
|---|---|---|
| number | ``nonfinite`` | ``nan``, ``inf``, ``-inf``, ``Infinity``, ``1e999``, ``null`` ... |
| number | ``magnitude`` | huge and tiny magnitudes: ``1e308``, ``-5e-324``, the answer times 10^k |
| number | ``nearby`` | a value near the answer (a unit in the last digit, a relative 10^-k, rounded, truncated) in another notation (scientific, padded, ``+``, a fraction, a decimal comma) |
| number | ``edited`` | the answer with a character added, removed or replaced |
| text | ``spelling`` | case, whitespace, punctuation, a letter dropped |
| text | ``lookalike`` | letters swapped for look-alikes (Cyrillic, Greek, fullwidth) |
| text | ``part`` | a prefix, suffix or substring of the answer, a word before or after it, it repeated, ``not <answer>`` |
| structure | ``fields`` | fields (or items) missing, extra, changed, reordered, duplicated |
| any | ``other_answer`` | another reference answer of the audited problems |

The search is seeded and bounded by a number of replies per family (``examples``), not
by the clock, so an audit finds the same replies on every machine.

Example::

    # not run: `problems` are AuditedProblems, built elsewhere
    from mint_envkit.auditing.generated import generated_probes

    rows = await generated_probes(problems, examples=30, seed=0)
    [(r.name, r.example) for r in rows if r.disagreements]   # [('gen_nonfinite', 'nan')]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import json
import random
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction
from typing import Any

import attrs

from mint_envkit.auditing.probes import GENERATED, AuditedProblem, Found, Judged, ProbeResult
from mint_envkit.auditing.strict import NUMBER, STRUCTURE, answer_kind, read_structure
from mint_envkit.parsers import as_number

FAMILIES = {
    NUMBER: ("nonfinite", "magnitude", "nearby", "edited", "other_answer"),
    "text": ("spelling", "lookalike", "part", "other_answer"),
    STRUCTURE: ("fields", "other_answer"),
}
"""The families searched for each kind of answer (``number``, ``text``, ``structure``).

Example::

    "nonfinite" in FAMILIES["number"]   # True
"""

DEFAULT_EXAMPLES = 20
"""Replies tried per family by default (then the smallest finding is shrunk).

Example::

    DEFAULT_EXAMPLES   # 20
"""

_NONFINITE = (
    "nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "-Infinity",
    "+inf",
    "1e999",
    "-1e999",
    "∞",
    "null",
    "None",
)
_EXPONENTS = (20, -20, 100, -100, 308, -308, 309, -324)
_STEPS = ("unit", 1, 2, 3, 6, 7, 9, "round", "truncate")
_NOTATIONS = ("plain", "scientific", "padded", "plus", "fraction", "comma")
_EDIT_CHARS = "0123456789.-+e,/ x%$"
_SPELLING = (
    "upper",
    "lower",
    "title",
    "swapcase",
    "strip_spaces",
    "double_space",
    "add_punct",
    "drop_char",
    "hyphenate",
)
_PUNCT = ".,!?;:'\"-()"
# Latin letters and digits -> a Cyrillic or Greek look-alike, or a letter for a digit
_LOOKALIKE = dict(zip("aeopcxyisABEHKMOPTX01l", "аеорсхуіѕΑΒΕΗΚΜΟΡΤΧOl1", strict=True))
_PARTS = ("prefix", "suffix", "substring", "before", "after", "repeat", "negate")
_WORDS = ("not", "maybe", "no", "yes", "the", "answer", "is", "wrong", "and", "or")
_FIELD_OPS = ("drop", "add", "change", "reorder", "duplicate")
_VALUES = (None, 0, "", True, [], "x", -1)


def _strategy(family: str, others: int) -> Any:
    """The data Hypothesis draws for one reply of ``family`` (a problem is drawn beside)."""
    from hypothesis import strategies as st

    position = st.integers(0, 63)
    if family == "nonfinite":
        return st.sampled_from(_NONFINITE)
    if family == "magnitude":
        return st.tuples(st.integers(0, 2), st.sampled_from(_EXPONENTS), st.booleans())
    if family == "nearby":
        return st.tuples(st.sampled_from(_STEPS), st.booleans(), st.sampled_from(_NOTATIONS))
    if family == "edited":
        ops = st.sampled_from(("insert", "delete", "replace"))
        return st.tuples(ops, position, st.sampled_from(_EDIT_CHARS))
    if family == "spelling":
        op = st.tuples(st.sampled_from(_SPELLING), position, st.sampled_from(_PUNCT))
        return st.lists(op, min_size=1, max_size=3)
    if family == "lookalike":
        return st.tuples(st.booleans(), st.lists(position, min_size=1, max_size=2))
    if family == "part":
        return st.tuples(st.sampled_from(_PARTS), position, position, st.sampled_from(_WORDS))
    if family == "fields":
        op = st.tuples(st.sampled_from(_FIELD_OPS), position, st.integers(0, len(_VALUES) - 1))
        return st.lists(op, min_size=1, max_size=2)
    return st.integers(0, max(0, others - 1))  # other_answer


def _decimal(value: Fraction) -> Decimal:
    with localcontext() as context:
        context.prec = 30
        return Decimal(value.numerator) / Decimal(value.denominator)


def _plain(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if text not in ("-0",) else "0"


def _nearby(answer: str, value: Fraction, step: Any, up: bool, notation: str) -> str | None:
    sign = 1 if up else -1
    digits = answer.split(".", 1)[1] if "." in answer and "/" not in answer else ""
    if step == "unit":
        near = value + sign * Fraction(1, 10 ** len(digits))
    elif step == "round":
        near = Fraction(round(value, max(0, len(digits) - 1)))
        near = near if near != value else value + sign * Fraction(1, 2)
    elif step == "truncate":
        near = Fraction(int(value)) if int(value) != value else value + sign
    else:
        scale = abs(value) if value else Fraction(1)
        near = value + sign * scale / 10**step
    written = _decimal(near)
    if notation == "scientific":
        return f"{written.normalize():e}"
    if notation == "padded":
        plain = _plain(written)
        return plain + ("000" if "." in plain else ".000")
    if notation == "plus":
        return "+" + _plain(written)
    if notation == "fraction":
        return f"{near.numerator}/{near.denominator}"
    if notation == "comma":
        return _plain(written).replace(".", ",")
    return _plain(written)


def _edit(text: str, op: str, position: int, char: str) -> str:
    if op == "insert":
        at = position % (len(text) + 1)
        return text[:at] + char + text[at:]
    if not text:
        return char
    at = position % len(text)
    return text[:at] + (char if op == "replace" else "") + text[at + 1 :]


def _spell(text: str, ops: Sequence[tuple[str, int, str]]) -> str:
    for op, position, char in ops:
        if op in ("upper", "lower", "title", "swapcase"):
            text = getattr(text, op)()
        elif op == "strip_spaces":
            text = "".join(text.split())
        elif op == "double_space":
            text = text.replace(" ", "  ") if " " in text else " " + text + " "
        elif op == "add_punct":
            text = _edit(text, "insert", position, char)
        elif op == "drop_char":
            text = _edit(text, "delete", position, "")
        else:  # hyphenate
            text = (
                text.replace(" ", "-", 1) if " " in text else _edit(text, "insert", position, "-")
            )
    return text


def _lookalike(text: str, fullwidth: bool, positions: Sequence[int]) -> str:
    chars = list(text)
    for position in positions:
        for step in range(len(chars)):
            at = (position + step) % max(1, len(chars))
            if not chars:
                break
            char = chars[at]
            swap = chr(ord(char) + 0xFEE0) if fullwidth and "!" <= char <= "~" else None
            swap = swap or _LOOKALIKE.get(char)
            if swap and swap != char:
                chars[at] = swap
                break
    return "".join(chars)


def _part(text: str, mode: str, i: int, j: int, word: str) -> str | None:
    n = len(text)
    if mode in ("prefix", "suffix", "substring") and n < 2:
        return None
    if mode == "prefix":
        return text[: 1 + i % (n - 1)]
    if mode == "suffix":
        return text[n - 1 - i % (n - 1) :]
    if mode == "substring":
        start = i % n
        end = start + 1 + j % (n - start)
        return None if (start, end) == (0, n) else text[start:end]
    if mode == "before":
        return f"{word} {text}"
    if mode == "after":
        return f"{text} {word}"
    if mode == "repeat":
        return f"{text} {text}"
    return f"not {text}"


def _fields(answer: Any, ops: Sequence[tuple[str, int, int]]) -> str | None:
    value = copy.deepcopy(read_structure(answer) if isinstance(answer, str) else answer)
    for op, position, choice in ops:
        if isinstance(value, dict) and value:
            keys = list(value)
            key = keys[position % len(keys)]
            if op == "drop":
                del value[key]
            elif op == "add":
                value[f"extra_{position % 3}"] = _VALUES[choice]
            elif op == "change":
                value[key] = _VALUES[choice]
            elif op == "reorder":
                value = dict(reversed(list(value.items())))
            else:
                value[f"{key}_copy"] = value[key]
        elif isinstance(value, list) and value:
            at = position % len(value)
            if op == "drop":
                del value[at]
            elif op == "add":
                value.append(_VALUES[choice])
            elif op == "change":
                value[at] = _VALUES[choice]
            elif op == "reorder":
                value = value[::-1] if len(value) > 1 else value
            else:
                value.insert(at, value[at])
        else:
            return None
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def render(family: str, data: Any, answer: Any, text: str, others: Sequence[str]) -> str | None:
    """The answer text one drawn ``data`` of ``family`` makes from the reference
    (``answer``, written ``text``), or None when it does not apply.

    Example::

        render("nonfinite", "nan", "0.5", "0.5", []), render("part", ("prefix", 0, 0, "not"),
                                                             "paris", "paris", [])
        # ('nan', 'p')
    """
    if family == "nonfinite":
        return data
    if family == "other_answer":
        choices = [o for o in others if o != text]
        return choices[data % len(choices)] if choices else None
    if family == "edited":
        return _edit(text, *data)
    if family == "spelling":
        return _spell(text, data)
    if family == "lookalike":
        return _lookalike(text, *data)
    if family == "part":
        return _part(text, *data)
    if family == "fields":
        return _fields(answer, data)
    number = as_number(text)
    try:
        value = None if number is None else Fraction(number)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None:
        return None
    if family == "magnitude":
        mantissa, exponent, negative = data
        base = ("1", _plain(_decimal(abs(value))), "9.999")[mantissa]
        return f"{'-' if negative else ''}{base}e{exponent}"
    try:
        return _nearby(number, value, *data)
    except (InvalidOperation, OverflowError, ValueError, ZeroDivisionError):
        return None


@attrs.define
class _Search:
    """One family's search: every reply tried, the first declared acceptance seen."""

    family: str
    problems: Sequence[AuditedProblem]
    others: Sequence[str]
    loop: asyncio.AbstractEventLoop
    tried: list[Judged] = attrs.field(factory=list)
    declared: Judged | None = None

    def reply(self, problem: AuditedProblem, data: Any) -> str | None:
        answer = problem.group.problem.get("answer")
        text = render(self.family, data, answer, problem.answer, self.others)
        if text is None or text == problem.answer:
            return None
        return problem.judge.template.format(text)

    def judged(self, problem: AuditedProblem, reply: str) -> Judged:
        future = asyncio.run_coroutine_threadsafe(problem.judge_reply(reply), self.loop)
        return future.result()

    def finds(self, drawn: tuple[int, Any]) -> bool:
        """Hypothesis' condition: this reply raises in the env, or the env scores it
        right though it is not the answer (undeclared)."""
        problem = self.problems[drawn[0]]
        reply = self.reply(problem, drawn[1])
        if reply is None:
            return False
        judged = self.judged(problem, reply)
        self.tried.append(judged)
        found = judged.disagreement
        if found is not None and found.declared is not None and self.declared is None:
            self.declared = judged
        return judged.score.error is not None or (found is not None and found.declared is None)

    def run(self, examples: int, seed: int) -> tuple[int, Any] | None:
        from hypothesis import HealthCheck, Phase, Verbosity, find, settings
        from hypothesis import strategies as st
        from hypothesis.errors import NoSuchExample

        options = settings(
            max_examples=examples,
            database=None,
            deadline=None,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            derandomize=False,  # the seed below decides, whatever a user's profile says
            verbosity=Verbosity.quiet,
        )
        drawn = st.tuples(
            st.integers(0, len(self.problems) - 1), _strategy(self.family, len(self.others))
        )
        try:
            return find(drawn, self.finds, settings=options, random=random.Random(seed))
        except NoSuchExample:
            return None


_SEARCH_THREADS = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="mint-envkit-search")
"""Where searches run: threads that outlive an event loop. Hypothesis keeps its caches per
thread, so a search in a fresh thread (``asyncio.to_thread`` under a new ``asyncio.run``,
as in each test or each audit of a script) first rebuilds them: about twice the search's
CPU (``benchmarks/audit_search_threads.py``)."""


def _row(name: str, judged: Sequence[Judged], tried: int, example: str) -> ProbeResult:
    found = Found()
    for one in judged:
        found.add(name, GENERATED, [one])
    (row,) = found.results()
    return attrs.evolve(row, example=example, tried=tried)


async def generated_probes(
    problems: Sequence[AuditedProblem], *, examples: int = DEFAULT_EXAMPLES, seed: int = 0
) -> list[ProbeResult]:
    """One row per family of the answers' kind: the smallest reply found (sent on every
    problem), or, when none was found, the replies tried.

    Only problems with a reference answer the env can judge take part; ``examples``
    replies are drawn per family (0: no search), seeded by ``seed``.

    Example::

        # not run: `problems` are AuditedProblems, built elsewhere
        rows = await generated_probes(problems, examples=30, seed=0)
    """
    usable = [p for p in problems if p.answer and p.judge.basis is not None]
    if not usable or examples <= 0:
        return []
    kind = answer_kind(usable[0].group.problem.get("answer"))
    others = sorted({p.answer for p in problems if p.answer})
    loop = asyncio.get_running_loop()
    rows = []
    for number, family in enumerate(FAMILIES[kind]):
        if family == "other_answer" and len(others) < 2:
            continue
        search = _Search(family, usable, others, loop)
        run = contextvars.copy_context().run  # as asyncio.to_thread: the caller's context
        hit = await loop.run_in_executor(
            _SEARCH_THREADS, run, search.run, examples, seed * 1000 + number
        )
        tried = len(search.tried)
        if not tried:
            continue
        name = f"gen_{family}"
        if hit is None:
            rows.append(_row(name, search.tried, tried, search.tried[0].score.reply))
            if search.declared is not None:
                rows[-1] = attrs.evolve(rows[-1], example=search.declared.score.reply)
            continue
        smallest = search.reply(usable[hit[0]], hit[1]) or ""
        judged = []
        for problem in usable:
            reply = search.reply(problem, hit[1])
            if reply is not None:
                judged.append(await problem.judge_reply(reply))
        row = _row(name, judged, tried, smallest)
        first = [d for d in row.disagreements if d.reply == smallest]
        rest = [d for d in row.disagreements if d.reply != smallest]
        errors = [e for e in row.errors if e[0] == smallest] + [
            e for e in row.errors if e[0] != smallest
        ]
        rows.append(attrs.evolve(row, disagreements=first + rest, errors=errors, smallest=True))
    return rows
