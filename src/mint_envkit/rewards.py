"""Reward composition: correctness gated on format, weighted sums, every part a metric.

A :class:`Reward` is a named function ``(completion, answer) -> RewardBreakdown``. Leaves
check one thing (:func:`correct`, :func:`valid_format`, or your own :func:`component`);
:func:`gated` and :func:`weighted` combine them. The breakdown keeps the value of every
part under its name, and :attr:`RewardBreakdown.metrics` turns it into a flat metrics
dict, including how each parser fared (so a parse failure is never silently just "0").

Rewards never swallow errors: an exception raised by a parser function, a check or a
component propagates, so the training loop records it as a rollout error instead of
scoring a bug as a wrong answer.

Example::

    from mint_envkit.parsers import boxed, xml_tag
    from mint_envkit.rewards import correct, gated, valid_format

    reward = gated(correct(boxed), gate=valid_format(xml_tag("answer")))
    breakdown = reward(r"<answer>\\boxed{5}</answer>", "5")
    assert breakdown.total == 1.0
    assert breakdown.metrics["reward/correct"] == 1.0
    assert breakdown.metrics["parse/format/ok"] == 1.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import (
    STATUSES,
    Parser,
    ParseResult,
    Status,
    as_number,
    grade_math,
    same_number,
    strip_thinking,
)
from mint_envkit.parsers.math import DEFAULT_MATH_TIMEOUT

__all__ = [
    "Reward",
    "RewardBreakdown",
    "component",
    "correct",
    "default_check",
    "gated",
    "math_correct",
    "valid_format",
    "weighted",
]

_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@attrs.frozen
class RewardBreakdown:
    """The result of a :class:`Reward`: the total, the value of every part, the verdict.

    ``components`` maps each part's name (the root included) to its value; ``statuses``
    maps the name of each parser-based part (:func:`correct`, :func:`valid_format`) to its
    parse :data:`~mint_envkit.parsers.Status`. ``correct`` is the verdict of the reward's
    answer checks (:func:`correct`, :func:`math_correct`): True when every one passed and
    no gate above it failed (the reward credited the answer), None when the reward checks
    no answer. ``parse`` is how the first answer check read the reply (None without one).

    Example::

        breakdown = RewardBreakdown(
            total=1.0, components={"gated": 1.0, "correct": 1.0}, statuses={"correct": "ok"}
        )
        assert breakdown.metrics["reward/total"] == 1.0 and breakdown.correct is None
    """

    total: float
    components: dict[str, float]
    statuses: dict[str, Status] = attrs.field(factory=dict)
    correct: bool | None = None
    parse: ParseResult | None = None

    @property
    def metrics(self) -> dict[str, float]:
        """A flat ``dict[str, float]`` for logging.

        ``"reward/total"``; ``"reward/<name>"`` for every part; and for every parser-based
        part, ``"parse/<name>/<status>"`` for each of the six statuses, 1.0 for the one
        that happened and 0.0 for the rest (so batch means are rates).

        Example::

            from mint_envkit.parsers import last_number

            metrics = correct(last_number)("no idea", "5").metrics
            assert metrics["reward/correct"] == 0.0
            assert metrics["parse/correct/no_match"] == 1.0
        """
        metrics = {"reward/total": self.total}
        metrics.update({f"reward/{name}": value for name, value in self.components.items()})
        for name, status in self.statuses.items():
            metrics.update({f"parse/{name}/{s}": float(s == status) for s in STATUSES})
        return metrics


def _check_name(instance: Reward, attribute: attrs.Attribute, name: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"reward name {name!r} is not valid; use letters, digits, '_', '.', '-' "
            "(it becomes the metric 'reward/<name>'), e.g. name='correct'"
        )


def _as_float(value: object, name: str) -> float:
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise ConfigError(
        f"reward component {name!r} returned {value!r}; a component must return a finite "
        "number (0.0 or 1.0 for a gate)"
    )


_Verdict = tuple[bool | None, ParseResult | None]
"""An answer check's verdict and how it read the reply: ``(correct, parse)``."""


def _every_check(parts: Sequence[RewardBreakdown]) -> _Verdict:
    """Right when every answer check of the parts is right; the first one's parse."""
    checked = [part for part in parts if part.correct is not None]
    if not checked:
        return None, None
    return all(part.correct for part in checked), checked[0].parse


@attrs.frozen
class Reward:
    """A named reward function ``(completion, answer) -> RewardBreakdown``.

    Build one with :func:`correct`, :func:`valid_format`, :func:`component`,
    :func:`gated` or :func:`weighted` rather than directly. Names must be unique within a
    reward (they become metric names); rename with :meth:`named`.

    ``checks_answer`` is True when some part checks the answer (:func:`correct`,
    :func:`math_correct`), so the breakdown has a ``correct`` verdict. ``bounds`` is the
    ``(lowest, highest)`` score it can give, or None when a part's range is unknown (a
    :func:`component`); the builders hold replies with no answer to its lowest score.

    Example::

        from mint_envkit.parsers import last_number

        reward = correct(last_number).named("math")
        assert reward("so 2 + 3 = 5", "5").components == {"math": 1.0}
        assert reward.checks_answer and reward.bounds == (0.0, 1.0)
    """

    name: str = attrs.field(validator=_check_name)
    _leaf: Callable[[str, str], tuple[float, ParseResult | None]] | None = attrs.field(
        alias="leaf", default=None, repr=False
    )
    _children: tuple[Reward, ...] = attrs.field(alias="children", default=(), repr=False)
    _combine: Callable[[Sequence[float]], float] | None = attrs.field(
        alias="combine", default=None, repr=False
    )
    _verdict: (
        Callable[[Sequence[RewardBreakdown]], tuple[bool | None, ParseResult | None]] | None
    ) = attrs.field(alias="verdict", default=None, repr=False)
    checks_answer: bool = False
    bounds: tuple[float, float] | None = None

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for name in self._names():
            if name in seen:
                raise ConfigError(
                    f"two parts of reward {self.name!r} are named {name!r}; names become "
                    "metric names and must be unique, rename one with .named('other')"
                )
            seen.add(name)

    def _names(self) -> list[str]:
        return [self.name, *(name for child in self._children for name in child._names())]

    def named(self, name: str) -> Reward:
        """The same reward under another name.

        Example::

            from mint_envkit.parsers import boxed

            assert valid_format(boxed).named("boxed_format").name == "boxed_format"
        """
        return attrs.evolve(self, name=name)

    def __call__(self, completion: str, answer: str) -> RewardBreakdown:
        """Score ``completion`` against the reference ``answer``.

        Example::

            from mint_envkit.parsers import boxed

            assert valid_format(boxed)(r"\\boxed{3}", "").total == 1.0
        """
        if not isinstance(completion, str):
            raise TypeError(
                f"reward {self.name!r} expects the completion as a str, got "
                f"{type(completion).__name__}; pass the decoded reply text"
            )
        components: dict[str, float] = {}
        statuses: dict[str, Status] = {}
        if self._leaf is not None:
            total, read = self._leaf(completion, answer)
            if read is not None:
                statuses[self.name] = read.status
            components[self.name] = total
            verdict: _Verdict = (total == 1.0, read) if self.checks_answer else (None, None)
            return RewardBreakdown(total, components, statuses, *verdict)
        parts = [child(completion, answer) for child in self._children]
        total = self._combine([part.total for part in parts]) if self._combine else 0.0
        components[self.name] = total
        for part in parts:
            components.update(part.components)
            statuses.update(part.statuses)
        verdict = (self._verdict or _every_check)(parts)
        return RewardBreakdown(total, components, statuses, *verdict)


def _require_reward(value: object, role: str) -> Reward:
    if isinstance(value, Reward):
        return value
    if isinstance(value, Parser):
        raise ConfigError(
            f"{role} got the parser {value.name!r}; wrap it: correct({value.name}) scores "
            f"the answer, valid_format({value.name}) scores the format"
        )
    raise ConfigError(
        f"{role} needs a Reward, got {value!r}; wrap a function (completion, answer) -> "
        "float with component(fn, name='...')"
    )


def _require_parser(parser: object, role: str) -> Parser:
    if not isinstance(parser, Parser):
        raise ConfigError(
            f"{role} needs a Parser, got {parser!r}; wrap a function with "
            "Parser.from_function(fn, name='...')"
        )
    return parser


def default_check(value: str, answer: object) -> bool:
    """The default answer check of :func:`correct`.

    When both the parsed ``value`` and ``answer`` are numbers
    (:func:`~mint_envkit.parsers.as_number`), compare them exactly with
    :func:`~mint_envkit.parsers.same_number`; otherwise compare the stripped strings
    exactly (``answer`` through ``str``). With no reference (``answer`` None) nothing is
    right: the reply ``"None"`` is not compared with ``str(None)``.

    Example::

        assert default_check("1,000", "1000") and default_check("Paris", " Paris ")
        assert not default_check("paris", "Paris") and not default_check("None", None)
    """
    if answer is None:
        return False
    if as_number(value) is not None and as_number(answer) is not None:
        return same_number(value, answer)
    return value.strip() == str(answer).strip()


def correct(
    parser: Parser,
    check: Callable[[str, str], bool] | None = None,
    *,
    name: str = "correct",
) -> Reward:
    """1.0 when ``parser`` reads a value and ``check(value, answer)`` is true, else 0.0.

    ``check`` defaults to :func:`default_check` (exact number equality when both are
    numbers, else exact string equality after stripping). It must return a bool; anything
    else raises :class:`~mint_envkit.errors.ConfigError`. The parse status is reported in
    the breakdown (``parse/correct/<status>`` metrics).

    Example::

        from mint_envkit.parsers import boxed, exact

        assert correct(boxed)(r"\\boxed{1,000}", "1000").total == 1.0
        loose = correct(exact(str.lower), check=lambda value, answer: value == answer.lower())
        assert loose("PARIS", "Paris").total == 1.0
    """
    parser = _require_parser(parser, "correct()")
    if check is not None and not callable(check):
        raise ConfigError(
            f"correct(check=...) needs a callable (value, answer) -> bool, got {check!r}"
        )
    test = default_check if check is None else check

    def score(completion: str, answer: str) -> tuple[float, ParseResult | None]:
        result = parser(completion)
        if not result:
            return 0.0, result
        verdict = test(result.value or "", answer)
        if verdict not in (True, False):
            raise ConfigError(
                f"the check of reward {name!r} returned {verdict!r}; a check must return a "
                "bool (use component() for partial credit)"
            )
        return float(verdict), result

    return Reward(name=name, leaf=score, checks_answer=True, bounds=(0.0, 1.0))


def math_correct(*, timeout: float = DEFAULT_MATH_TIMEOUT, name: str = "correct") -> Reward:
    """1.0 when the reply's final math answer equals the reference answer, by math-verify.

    Reads and compares in one call of :func:`~mint_envkit.parsers.grade_math`
    (``\\boxed{}`` first; ``0.5`` = ``\\frac{1}{2}``, sets, intervals, units dropped). The
    parse status is reported (``parse/<name>/<status>``); an answer whose reading or
    comparison takes over ``timeout`` seconds scores 0.0 with status ``"timeout"``. Needs
    the ``math`` extra (``pip install 'mint-envkit[math]'``). A ``<think>`` block is
    removed first; an unclosed one gives status ``"unclosed_think"``.

    Example::

        reward = math_correct()
        assert reward(r"so \\boxed{\\frac{1}{2}}", "0.5").total == 1.0
        assert reward("no answer", "0.5").metrics["parse/correct/no_match"] == 1.0
    """

    def score(completion: str, answer: str) -> tuple[float, ParseResult | None]:
        content = strip_thinking(completion)
        if content.status == "unclosed_think":
            return 0.0, content
        reference = "" if answer is None else answer  # no reference: nothing is right
        result, equal = grade_math(content.value or "", reference, timeout=timeout)
        return float(equal and answer is not None), result

    grade_math("", "", timeout=timeout)  # checks timeout now, not at the first rollout
    return Reward(name=name, leaf=score, checks_answer=True, bounds=(0.0, 1.0))


def valid_format(parser: Parser, *, name: str = "format") -> Reward:
    """1.0 when ``parser`` reads a value from the completion (status ``"ok"``), else 0.0.

    The answer is not looked at. The parse status is reported in the breakdown.

    Example::

        from mint_envkit.parsers import xml_tag

        has_answer = valid_format(xml_tag("answer"))
        assert has_answer("<answer>7</answer>", "").total == 1.0
        assert has_answer("<answer>7", "").metrics["parse/format/truncated"] == 1.0
    """
    parser = _require_parser(parser, "valid_format()")

    def score(completion: str, answer: str) -> tuple[float, ParseResult | None]:
        result = parser(completion)
        return (1.0 if result else 0.0), result

    return Reward(name=name, leaf=score, bounds=(0.0, 1.0))


def component(fn: Callable[[str, str], float], name: str | None = None) -> Reward:
    """Turn a plain function ``(completion, answer) -> float`` into a :class:`Reward`.

    ``name`` defaults to the function's ``__name__``. The function must return a finite
    number (``bool`` is fine); anything else raises
    :class:`~mint_envkit.errors.ConfigError`. Exceptions it raises propagate.

    Example::

        def short(completion: str, answer: str) -> float:
            return 1.0 if len(completion) < 200 else 0.0

        assert component(short)("5", "5").components == {"short": 1.0}
    """
    if not callable(fn):
        raise ConfigError(f"component() needs a callable (completion, answer) -> float, got {fn!r}")
    label = getattr(fn, "__name__", None) if name is None else name
    if label is None or label == "<lambda>":
        raise ConfigError(
            f"component({fn!r}) needs a name; pass name='...' (it becomes the metric "
            "'reward/<name>')"
        )

    def score(completion: str, answer: str) -> tuple[float, ParseResult | None]:
        return _as_float(fn(completion, answer), label), None

    return Reward(name=label, leaf=score)


def gated(value: Reward, *, gate: Reward, otherwise: float = 0.0, name: str = "gated") -> Reward:
    """``value`` when ``gate`` passes, else ``otherwise``: "correct counts only if well formed".

    The gate must score exactly 0.0 (fail) or 1.0 (pass); any other score raises
    :class:`~mint_envkit.errors.ConfigError` at call time, because a half-open gate has no
    obvious meaning. Both parts are always evaluated, so both appear in the metrics.
    ``otherwise`` must be a finite number (e.g. ``-1.0`` to punish bad format). The
    verdict (``correct``) is the value's; a failed gate makes it False, since the reply
    was not credited.

    Example::

        from mint_envkit.parsers import boxed, xml_tag

        reward = gated(correct(boxed), gate=valid_format(xml_tag("answer")))
        assert reward(r"\\boxed{5}", "5").total == 0.0  # right answer, no <answer> tag
        assert reward(r"<answer>\\boxed{5}</answer>", "5").total == 1.0
    """
    value = _require_reward(value, "gated(value)")
    gate = _require_reward(gate, "gated(gate=...)")
    if (
        isinstance(otherwise, bool)
        or not isinstance(otherwise, int | float)
        or not math.isfinite(otherwise)
    ):
        raise ConfigError(f"gated(otherwise={otherwise!r}) must be a finite number, e.g. 0.0")
    fallback = float(otherwise)
    gate_name = gate.name

    def combine(totals: Sequence[float]) -> float:
        value_total, gate_total = totals
        if gate_total not in (0.0, 1.0):
            raise ConfigError(
                f"gate {gate_name!r} scored {gate_total!r}; a gate must score 0.0 or 1.0 "
                "(use valid_format(...) or a component returning 0.0/1.0)"
            )
        return value_total if gate_total == 1.0 else fallback

    def verdict(parts: Sequence[RewardBreakdown]) -> _Verdict:
        value_part, gate_part = parts
        correct = value_part.correct
        if correct is not None and gate_part.total != 1.0:
            correct = False
        return correct, value_part.parse

    bounds = None
    if value.bounds is not None:
        bounds = (min(value.bounds[0], fallback), max(value.bounds[1], fallback))
    return Reward(
        name=name,
        children=(value, gate),
        combine=combine,
        verdict=verdict,
        checks_answer=value.checks_answer,
        bounds=bounds,
    )


def weighted(**parts: tuple[Reward, float]) -> Reward:
    """The weighted sum of named parts: ``weighted(name=(reward, weight), ...)``.

    Each keyword names its part (the part is renamed to it), so metrics read
    ``reward/<keyword>``. Weights must be finite numbers (negative is fine, for
    penalties); at least one part is needed. The reward is named ``"weighted"``; rename it
    with :meth:`Reward.named`.

    Example::

        from mint_envkit.parsers import boxed, last_number

        reward = weighted(correct=(correct(last_number), 1.0), fmt=(valid_format(boxed), 0.1))
        breakdown = reward(r"so \\boxed{5}", "5")
        assert breakdown.total == 1.1
        assert breakdown.components == {"weighted": 1.1, "correct": 1.0, "fmt": 1.0}
    """
    if not parts:
        raise ConfigError(
            "weighted() needs at least one part, e.g. weighted(correct=(correct(boxed), 1.0))"
        )
    children: list[Reward] = []
    weights: list[float] = []
    for key, part in parts.items():
        if not isinstance(part, tuple) or len(part) != 2:
            raise ConfigError(
                f"weighted({key}=...) needs a (reward, weight) pair, got {part!r}; e.g. "
                f"weighted({key}=(correct(boxed), 1.0))"
            )
        reward, weight = part
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
        ):
            raise ConfigError(
                f"weighted({key}=...) has weight {weight!r}; a weight must be a finite "
                "number such as 1.0 or 0.1"
            )
        children.append(_require_reward(reward, f"weighted({key}=...)").named(key))
        weights.append(float(weight))

    def combine(totals: Sequence[float]) -> float:
        return math.fsum(weight * total for weight, total in zip(weights, totals, strict=True))

    known = [child.bounds for child in children if child.bounds is not None]
    bounds = None
    if len(known) == len(children):
        ends = [sorted((w * low, w * high)) for w, (low, high) in zip(weights, known, strict=True)]
        bounds = (math.fsum(end[0] for end in ends), math.fsum(end[1] for end in ends))
    return Reward(
        name="weighted",
        children=tuple(children),
        combine=combine,
        checks_answer=any(child.checks_answer for child in children),
        bounds=bounds,
    )
