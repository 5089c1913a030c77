"""The reward tree: :class:`Reward`, what it gives (:class:`RewardBreakdown`), its leaves.

A :class:`Reward` is a named tree: a leaf scores one thing and gives a
:class:`PartScore`; a node combines its children's totals. Calling it walks the tree
with the reply, the reference answer and a :class:`~mint_envkit.rewards.RewardContext`.
A leaf may be async (a judge model's verdict): such a tree is scored with
``await reward.score_async(...)``, which an env's ``step()`` does.

Example::

    from mint_envkit.parsers import boxed
    from mint_envkit.rewards import correct, valid_format, weighted

    reward = weighted(correct=(correct(boxed), 1.0), fmt=(valid_format(boxed), 0.1))
    assert reward(r"\\boxed{5}", "5").total == 1.1 and not reward.is_async
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import ParseResult, Status
from mint_envkit.parsers.result import STATUSES
from mint_envkit.rewards.context import RewardContext

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
    ``extra`` holds a part's own metrics (a judged part's ``judge/<part>/failed``...) and
    ``logs`` its notes for the episode's logs (the judge's text).

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
    extra: dict[str, float] = attrs.field(factory=dict)
    logs: dict[str, Any] = attrs.field(factory=dict)

    @property
    def metrics(self) -> dict[str, float]:
        """A flat ``dict[str, float]`` for logging.

        ``"reward/total"``; ``"reward/<name>"`` for every part; for every parser-based
        part, ``"parse/<name>/<status>"`` for each of the six statuses, 1.0 for the one
        that happened and 0.0 for the rest (so batch means are rates); then ``extra``.

        Example::

            from mint_envkit import correct
            from mint_envkit.parsers import last_number

            metrics = correct(last_number)("no idea", "5").metrics
            assert metrics["reward/correct"] == 0.0
            assert metrics["parse/correct/no_match"] == 1.0
        """
        metrics = {"reward/total": self.total}
        metrics.update({f"reward/{name}": value for name, value in self.components.items()})
        for name, status in self.statuses.items():
            metrics.update({f"parse/{name}/{s}": float(s == status) for s in STATUSES})
        metrics.update(self.extra)
        return metrics


@attrs.frozen
class PartScore:
    """What one leaf of a :class:`Reward` gives: its value, its parse, its own metrics and logs.

    ``metrics`` and ``logs`` keys are ``"<kind>/<what>"``; the reward files them as
    ``"<kind>/<part name>/<what>"`` (``"judge/failed"`` of the part ``polite`` becomes
    the metric ``judge/polite/failed``), so a renamed part keeps its metrics apart.

    Example::

        def score(completion, answer, context):
            return PartScore(value=float(answer in completion))

        reward = Reward(name="contains", leaf=score)
        assert reward("it is 5", "5").total == 1.0
    """

    value: float
    parse: ParseResult | None = None
    metrics: dict[str, float] = attrs.field(factory=dict)
    logs: dict[str, Any] = attrs.field(factory=dict)


def _check_name(instance: Reward, attribute: attrs.Attribute, name: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"reward name {name!r} is not valid; use letters, digits, '_', '.', '-' "
            "(it becomes the metric 'reward/<name>'), e.g. name='correct'"
        )


_Verdict = tuple[bool | None, ParseResult | None]
"""An answer check's verdict and how it read the reply: ``(correct, parse)``."""


def _every_check(parts: Sequence[RewardBreakdown]) -> _Verdict:
    """Right when every answer check of the parts is right; the first one's parse."""
    checked = [part for part in parts if part.correct is not None]
    if not checked:
        return None, None
    return all(part.correct for part in checked), checked[0].parse


def _place(key: str, name: str) -> str:
    """``"judge/failed"`` of the part ``name`` -> ``"judge/<name>/failed"``."""
    kind, _, what = key.partition("/")
    return f"{kind}/{name}/{what}" if what else f"{kind}/{name}"


@attrs.frozen
class Reward:
    """A named reward: ``reward(completion, answer, context=None) -> RewardBreakdown``.

    Build one with :func:`correct`, :func:`valid_format`, :func:`component`,
    :func:`gated` or :func:`weighted` rather than directly. A leaf is
    ``leaf(completion, answer, context) -> PartScore`` (or an ``async def`` one). Names must be unique within a
    reward (they become metric names); rename with :meth:`named`.

    ``checks_answer`` is True when some part checks the answer (:func:`correct`,
    :func:`math_correct`), so the breakdown has a ``correct`` verdict. ``bounds`` is the
    ``(lowest, highest)`` score it can give, or None when a part's range is unknown (a
    :func:`component`); the builders hold replies with no answer to its lowest score.
    ``is_async`` is True when a part must be awaited (an ``async`` component, a
    :func:`~mint_envkit.judge.judged` part): score it with :meth:`score_async`, as an
    env's ``step()`` does.

    Example::

        from mint_envkit import correct
        from mint_envkit.parsers import last_number

        reward = correct(last_number).named("math")
        assert reward("so 2 + 3 = 5", "5").components == {"math": 1.0}
        assert reward.checks_answer and reward.bounds == (0.0, 1.0)
    """

    name: str = attrs.field(validator=_check_name)
    _leaf: Callable[[str, Any, RewardContext], Any] | None = attrs.field(
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
    is_async: bool = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for name in self._names():
            if name in seen:
                raise ConfigError(
                    f"two parts of reward {self.name!r} are named {name!r}; names become "
                    "metric names and must be unique, rename one with .named('other')"
                )
            seen.add(name)
        leaf_async = self._leaf is not None and inspect.iscoroutinefunction(self._leaf)
        is_async = leaf_async or any(child.is_async for child in self._children)
        object.__setattr__(self, "is_async", is_async)

    def _names(self) -> list[str]:
        return [self.name, *(name for child in self._children for name in child._names())]

    def _async_parts(self) -> list[str]:
        if self._leaf is not None:
            return [self.name] if self.is_async else []
        return [name for child in self._children for name in child._async_parts()]

    @property
    def leaf(self) -> Callable[[str, Any, RewardContext], Any] | None:
        """The function a leaf part scores with, ``leaf(completion, answer, context)``;
        None for a part made of others (:func:`weighted`, :func:`gated`).

        Example::

            from mint_envkit import correct, weighted
            from mint_envkit.parsers import boxed

            assert correct(boxed).leaf is not None
            assert weighted(a=(correct(boxed), 1.0)).leaf is None
        """
        return self._leaf

    def parts(self) -> tuple[Reward, ...]:
        """This reward and every part inside it, depth first (itself first).

        Example::

            from mint_envkit import correct, valid_format, weighted
            from mint_envkit.parsers import boxed

            reward = weighted(right=(correct(boxed), 1.0), form=(valid_format(boxed), 0.1))
            [part.name for part in reward.parts()]   # ['weighted', 'right', 'form']
        """
        return (self, *(part for child in self._children for part in child.parts()))

    def named(self, name: str) -> Reward:
        """The same reward under another name.

        Example::

            from mint_envkit import valid_format
            from mint_envkit.parsers import boxed

            assert valid_format(boxed).named("boxed_format").name == "boxed_format"
        """
        return attrs.evolve(self, name=name)

    def _start(self, completion: object, answer: Any, context: RewardContext | None):
        if not isinstance(completion, str):
            raise TypeError(
                f"reward {self.name!r} expects the completion as a str, got "
                f"{type(completion).__name__}; pass the decoded reply text"
            )
        if context is None:
            return RewardContext(completion=completion, answer=answer)
        if not isinstance(context, RewardContext):
            raise ConfigError(
                f"reward {self.name!r} got context={context!r}; pass a RewardContext "
                "(an env builds one when it scores) or leave it out"
            )
        return context

    def __call__(
        self, completion: str, answer: Any, context: RewardContext | None = None
    ) -> RewardBreakdown:
        """Score ``completion`` against the reference ``answer``, seeing ``context``.

        Without ``context`` the parts see one that holds only ``completion`` and
        ``answer``. A reward with an async part (``is_async``) raises
        :class:`~mint_envkit.errors.ConfigError`: await :meth:`score_async` instead.

        Example::

            from mint_envkit import valid_format
            from mint_envkit.parsers import boxed

            assert valid_format(boxed)(r"\\boxed{3}", "").total == 1.0
        """
        context = self._start(completion, answer, context)
        if self.is_async:
            parts = ", ".join(repr(name) for name in self._async_parts())
            raise ConfigError(
                f"reward {self.name!r} has an async part ({parts}), so a plain call cannot "
                "await it; use it as an env's reward_fn (the env's step() awaits it) or "
                "call `await reward.score_async(completion, answer)`"
            )
        return self._run(completion, answer, context)

    async def score_async(
        self, completion: str, answer: Any, context: RewardContext | None = None
    ) -> RewardBreakdown:
        """Score like :meth:`__call__`, awaiting the async parts (a judge's verdict).

        Works for every reward; the parts are scored one after another.

        Example::

            # not run: `judge` is a Judge, built elsewhere
            from mint_envkit import judged, weighted

            breakdown = await weighted(polite=(judged(judge), 1.0)).score_async("Please.", None)
        """
        context = self._start(completion, answer, context)
        return await self._run_async(completion, answer, context)

    def _run(self, completion: str, answer: Any, context: RewardContext) -> RewardBreakdown:
        if self._leaf is not None:
            return self._leaf_breakdown(self._leaf(completion, answer, context))
        parts = [child._run(completion, answer, context) for child in self._children]
        return self._node_breakdown(parts)

    async def _run_async(
        self, completion: str, answer: Any, context: RewardContext
    ) -> RewardBreakdown:
        if self._leaf is not None:
            out = self._leaf(completion, answer, context)
            if inspect.isawaitable(out):
                out = await out
            return self._leaf_breakdown(out)
        parts = [await child._run_async(completion, answer, context) for child in self._children]
        return self._node_breakdown(parts)

    def _leaf_breakdown(self, out: Any) -> RewardBreakdown:
        part = out if isinstance(out, PartScore) else PartScore(*out)
        total = part.value
        statuses: dict[str, Status] = {}
        if part.parse is not None:
            statuses[self.name] = part.parse.status
        verdict: _Verdict = (total == 1.0, part.parse) if self.checks_answer else (None, None)
        return RewardBreakdown(
            total,
            {self.name: total},
            statuses,
            *verdict,
            extra={_place(key, self.name): value for key, value in part.metrics.items()},
            logs={_place(key, self.name): value for key, value in part.logs.items()},
        )

    def _node_breakdown(self, parts: Sequence[RewardBreakdown]) -> RewardBreakdown:
        total = self._combine([part.total for part in parts]) if self._combine else 0.0
        components: dict[str, float] = {self.name: total}
        statuses: dict[str, Status] = {}
        extra: dict[str, float] = {}
        logs: dict[str, Any] = {}
        for part in parts:
            components.update(part.components)
            statuses.update(part.statuses)
            extra.update(part.extra)
            logs.update(part.logs)
        verdict = (self._verdict or _every_check)(parts)
        return RewardBreakdown(total, components, statuses, *verdict, extra=extra, logs=logs)
