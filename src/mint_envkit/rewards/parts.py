"""The parts of a reward: answer checks, format checks, your own functions, combinators.

Leaves check one thing (:func:`correct`, :func:`math_correct`, :func:`valid_format`, or
your own :func:`component`); :func:`gated` and :func:`weighted` combine them.

Example::

    from mint_envkit.parsers import boxed, xml_tag
    from mint_envkit.rewards import correct, gated, valid_format

    reward = gated(correct(boxed), gate=valid_format(xml_tag("answer")))
    assert reward(r"<answer>\\boxed{5}</answer>", "5").total == 1.0
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from mint_envkit.checks import is_number
from mint_envkit.errors import ConfigError
from mint_envkit.parsers import Parser, as_number, same_number, strip_thinking
from mint_envkit.parsers.math import DEFAULT_MATH_TIMEOUT, grade_math
from mint_envkit.rewards.context import RewardContext
from mint_envkit.rewards.tree import PartScore, Reward, RewardBreakdown, _Verdict


def _as_float(value: object, name: str) -> float:
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise ConfigError(
        f"reward component {name!r} returned {value!r}; a component must return a finite "
        "number (0.0 or 1.0 for a gate)"
    )


def as_reward(value: object, role: str) -> Reward:
    """``value`` as a :class:`Reward`: a Reward as it is, a plain function
    ``(completion, answer) -> number`` (or ``(context) -> number``) through
    :func:`component`; anything else a ConfigError naming ``role`` and what to write.

    Example::

        def exact_reward(completion: str, answer: str) -> float:
            return float(completion.strip() == answer)

        assert as_reward(exact_reward, "reward_fn").name == "exact_reward"
    """
    if isinstance(value, Reward):
        return value
    if isinstance(value, Parser):
        raise ConfigError(
            f"{role} got the parser {value.name!r}; wrap it: correct({value.name}) scores "
            f"the answer, valid_format({value.name}) scores the format"
        )
    if callable(value) and not isinstance(value, type):
        if getattr(value, "__name__", "<lambda>") == "<lambda>":
            raise ConfigError(
                f"{role} got a lambda; give it a name, it becomes the metric "
                "'reward/<name>': component(lambda completion, answer: ..., name='...')"
            )
        return component(value)
    raise ConfigError(
        f"{role} needs a reward: a function (completion, answer) -> float, or a Reward "
        f"(correct(parser), component(fn, bounds=(0, 1)), weighted(...)); got {value!r}"
    )


def as_parser(parser: object, role: str) -> Parser:
    """``parser`` as a :class:`~mint_envkit.Parser`: a Parser as it is, a plain function
    ``str -> ParseResult | str | None`` through :meth:`Parser.from_function`.

    Example::

        as_parser(str.strip, "correct()")("  5 ").value   # '5'
    """
    if isinstance(parser, Parser):
        return parser
    if callable(parser) and not isinstance(parser, type | Reward):
        return Parser.from_function(parser)
    raise ConfigError(
        f"{role} needs a Parser (first_number, boxed, ...) or a function str -> str | None, "
        f"got {parser!r}"
    )


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
    parser = as_parser(parser, "correct()")
    if check is not None and not callable(check):
        raise ConfigError(
            f"correct(check=...) needs a callable (value, answer) -> bool, got {check!r}"
        )
    test = default_check if check is None else check

    def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        result = parser(completion)
        if not result:
            return PartScore(0.0, result)
        verdict = test(result.value or "", answer)
        if verdict not in (True, False):
            raise ConfigError(
                f"the check of reward {name!r} returned {verdict!r}; a check must return a "
                "bool (use component() for partial credit)"
            )
        return PartScore(float(verdict), result)

    return Reward(name=name, leaf=score, checks_answer=True, bounds=(0.0, 1.0))


def math_correct(*, timeout: float = DEFAULT_MATH_TIMEOUT, name: str = "correct") -> Reward:
    """1.0 when the reply's final math answer equals the reference answer, by math-verify.

    Reads and compares in one call of :func:`~mint_envkit.parsers.math.grade_math`
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

    def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        content = strip_thinking(completion)
        if content.status == "unclosed_think":
            return PartScore(0.0, content)
        reference = "" if answer is None else answer  # no reference: nothing is right
        result, equal = grade_math(content.value or "", reference, timeout=timeout)
        return PartScore(float(equal and answer is not None), result)

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
    parser = as_parser(parser, "valid_format()")

    def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        result = parser(completion)
        return PartScore(1.0 if result else 0.0, result)

    return Reward(name=name, leaf=score, bounds=(0.0, 1.0))


def _takes_context(fn: Callable[..., Any]) -> bool:
    """Is ``fn`` called as ``fn(context)`` (one parameter, named ``context`` or annotated
    ``RewardContext``) rather than ``fn(completion, answer)``?"""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: (completion, answer)
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) != 1 or parameters[0].kind not in positional:
        return False
    only = parameters[0]
    annotation = only.annotation
    return (
        only.name == "context"
        or annotation is RewardContext
        or (isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == "RewardContext")
    )


def _takes_two(fn: Callable[..., Any]) -> bool:
    """Can ``fn`` be called as ``fn(completion, answer)``? (True when it cannot be told.)"""
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read
        return True
    return True


def _value(value: object, name: str) -> float:
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise ConfigError(
            f"reward component {name!r} returned an awaitable; define the function with "
            "'async def' so component() knows to await it"
        )
    return _as_float(value, name)


def _check_bounds(bounds: Any, label: str) -> tuple[float, float] | None:
    if bounds is None:
        return None
    ok = isinstance(bounds, tuple | list) and len(bounds) == 2 and all(map(is_number, bounds))
    if not ok or not all(math.isfinite(b) for b in bounds) or bounds[0] > bounds[1]:
        raise ConfigError(
            f"component({label!r}, bounds={bounds!r}) needs (lowest, highest): two finite "
            "numbers, the lowest first, e.g. bounds=(0.0, 1.0)"
        )
    return float(bounds[0]), float(bounds[1])


def _within(value: float, bounds: tuple[float, float] | None, label: str) -> float:
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise ConfigError(
            f"reward component {label!r} returned {value!r}, outside its bounds {bounds}; "
            "return a value within them, or widen bounds= (the ordering rule relies on them)"
        )
    return value


def component(
    fn: Callable[..., Any],
    name: str | None = None,
    *,
    bounds: tuple[float, float] | None = None,
) -> Reward:
    """Turn a function ``(completion, answer) -> float`` or ``(context) -> float`` into a :class:`Reward`.

    A function of one parameter named ``context`` (or annotated
    :class:`RewardContext`) gets the :class:`RewardContext` (the problem, the prompt,
    the conversation, the reply and its thinking, the answer); any other is called
    with ``(completion, answer)``. An ``async def`` function is awaited: the reward is
    then async (``is_async``), scored by an env's ``step()`` or :meth:`Reward.score_async`.

    ``name`` defaults to the function's ``__name__``. The function must return a finite
    number (``bool`` is fine); anything else raises
    :class:`~mint_envkit.errors.ConfigError`. Exceptions it raises propagate.

    ``bounds=(lowest, highest)`` says the range of what it returns (a value outside is
    a ConfigError when scored). Without bounds the lowest score of a wrong answer is
    unknown, so the ordering rule (no reply without an answer earns more than a wrong
    one) cannot be checked for the env: the env class, ``mint-envkit check`` and the
    audit say so.

    Example::

        def short(completion: str, answer: str) -> float:
            return 1.0 if len(completion) < 200 else 0.0

        def in_the_unit(context: RewardContext) -> float:
            return float(context.completion.endswith(context.problem["unit"]))

        assert component(short)("5", "5").components == {"short": 1.0}
        context = RewardContext(problem={"unit": "cm"}, completion="5 cm")
        assert component(in_the_unit)("5 cm", "5", context).total == 1.0
        assert component(short, bounds=(0.0, 1.0)).bounds == (0.0, 1.0)
    """
    if not callable(fn):
        raise ConfigError(
            f"component() needs a callable (completion, answer) -> float or (context) -> "
            f"float, got {fn!r}"
        )
    label = getattr(fn, "__name__", None) if name is None else name
    if label is None or label == "<lambda>":
        raise ConfigError(
            f"component({fn!r}) needs a name; pass name='...' (it becomes the metric "
            "'reward/<name>')"
        )
    with_context = _takes_context(fn)
    if not with_context and not _takes_two(fn):
        raise ConfigError(
            f"component({label!r}) is called as fn(completion, answer) (or fn(context), one "
            "parameter named context), but its signature takes neither; write "
            "def fn(completion: str, answer: str) -> float"
        )
    known = _check_bounds(bounds, label)

    def call(completion: str, answer: Any, context: RewardContext) -> Any:
        return fn(context) if with_context else fn(completion, answer)

    if inspect.iscoroutinefunction(fn):

        async def score_async(completion: str, answer: Any, context: RewardContext) -> PartScore:
            value = _as_float(await call(completion, answer, context), label)
            return PartScore(_within(value, known, label))

        return Reward(name=label, leaf=score_async, bounds=known)

    def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        return PartScore(_within(_value(call(completion, answer, context), label), known, label))

    return Reward(name=label, leaf=score, bounds=known)


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
    value = as_reward(value, "gated(value)")
    gate = as_reward(gate, "gated(gate=...)")
    if not is_number(otherwise) or not math.isfinite(otherwise):
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
        if not is_number(weight) or not math.isfinite(weight):
            raise ConfigError(
                f"weighted({key}=...) has weight {weight!r}; a weight must be a finite "
                "number such as 1.0 or 0.1"
            )
        children.append(as_reward(reward, f"weighted({key}=...)").named(key))
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
