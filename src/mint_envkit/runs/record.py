"""The run record: an evaluation's figures as one typed value, and the only place their names live.

An evaluation measures correctness, parse and truncation shares, pass@k, the best
trivial baseline, answer diversity and collapse, the counterfactual check; a training
run logs the same figures for its held-out evals. They travel in three layouts, all
written and read here and nowhere else:

- the **summary** (``summary.json``, :attr:`EvalResult.summary
  <mint_envkit.evaluation.EvalResult>`): ``correct``, ``parse_failure_rate``,
  ``pass@`` (k -> value), ``answers/baseline_correct``, ``counterfactual/pairs``, ...;
- the loop's **metrics rows** (``metrics.jsonl``): ``<split>/env/all/answers/...``
  beside the env's own metrics (``<split>/env/all/correct``, ``.../parsed``,
  ``.../truncated``, ``.../reward/total``), and ``<split>/max_tokens``, for the
  splits :data:`TEST` (the first and periodic evals), :data:`FINAL` (after the last
  update), :data:`UNCUT` and :data:`FINAL_UNCUT` (the same at a reply limit where
  the base model is not cut off);
- an evaluation folder's **line** (``<label>/metrics.jsonl``, split :data:`EVAL`):
  ``eval/correct``, ``eval/pass@1``, ``eval/answers/...``.

**Adding a figure** touches three places: a field here (in :class:`AnswerFigures`,
:class:`CounterfactualFigures` or :class:`Figures`, with its kind: ``rate``,
``number``, ``count``, ``flag`` or ``text``), the code that computes it (which sets the
field by name), and the place that shows it (the headline, the viewer).
Its names in the three layouts follow from the field (``answers/<field>``), so no other
module writes or parses them (``tests/runs/test_record.py`` checks both).

Example::

    from mint_envkit.runs.record import FINAL, AnswerFigures, Figures

    figures = Figures(correct=0.575, parse_failure_rate=0.0, max_tokens=16,
                      answers=AnswerFigures(baseline_correct=0.575,
                                            baseline_name="constant 'no'", collapse=True))
    row = figures.metrics(FINAL)
    row["test_final/env/all/answers/collapse"]   # 1.0
    row.update({"test_final/env/all/correct": 0.575, "test_final/env/all/parsed": 1.0})
    assert Figures.from_metrics(row, FINAL) == figures
    assert Figures.from_summary(figures.summary()) == figures
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from mint_envkit.checks import is_number

TEST = "test"
"""The split of the loop's first and periodic held-out evals (``test/env/all/...``).

Example::

    Figures(correct=0.5).metrics(TEST)   # {} (correct is the env's metric: the loop logs it)
"""
FINAL = "test_final"
"""The split of the loop's held-out eval after its last update.

Example::

    FINAL   # 'test_final'
"""
UNCUT = "test_uncut"
"""The first held-out eval again, at a reply limit where the base model is not cut off.

Example::

    Figures(max_tokens=64).metrics(UNCUT)   # {'test_uncut/max_tokens': 64}
"""
FINAL_UNCUT = "test_final_uncut"
"""The final held-out eval at the reply limit :data:`UNCUT` found.

Example::

    FINAL_UNCUT   # 'test_final_uncut'
"""
EVAL = "eval"
"""The split of an evaluation folder's line (``eval/correct``, ``eval/pass@1``, ...).

Example::

    Figures(correct=0.5, pass_at={"1": 0.5}).metrics(EVAL)
    # {'eval/correct': 0.5, 'eval/pass@1': 0.5}
"""

_RATE, _NUMBER, _COUNT, _FLAG, _TEXT = "rate", "number", "count", "flag", "text"
_KIND = "figure"


def _figure(kind: str) -> Any:
    return attrs.field(default=None, metadata={_KIND: kind}, kw_only=True)


def _finite(value: Any) -> float | None:
    if not is_number(value):
        return None
    return float(value) if math.isfinite(value) else None


def _read(kind: str, value: Any) -> Any:
    """A value read from a file, as its kind: an odd value (a string for a number, a
    rate above 1, NaN, a null) is no value."""
    if kind == _TEXT:
        return value if isinstance(value, str) and value else None
    if kind == _FLAG:
        if isinstance(value, bool):
            return value
        number = _finite(value)
        return None if number not in (0.0, 1.0) else number == 1.0
    number = _finite(value)
    if number is None:
        return None
    if kind == _RATE:
        return number if 0.0 <= number <= 1.0 else None
    if kind == _COUNT:
        return int(number) if number >= 0 and number.is_integer() else None
    return number


def _write(value: Any) -> Any:
    return float(value) if isinstance(value, bool) else value


def _fields(cls: type) -> list[tuple[str, str]]:
    return [(f.name, f.metadata[_KIND]) for f in attrs.fields(cls) if _KIND in f.metadata]


@attrs.frozen
class AnswerFigures:
    """What the answers say beside correctness (:mod:`mint_envkit.rollouts.answers`).

    Attributes:
        baseline_correct: the best trivial policy's correctness (a constant answer, the
            candidate the prompt offers at a position, a uniform pick among them).
        baseline_name: that policy in words (``constant 'no'``, ``second quoted``).
        beats_baseline: correctness beats it beyond noise (a one-sided paired test).
        distinct: distinct parsed answers. entropy: their entropy, in nats.
        top_share: the share of replies giving the most common value; top: that value.
        truncated: the share of replies cut off at the reply limit.
        concentrated: the answers concentrate on one value while the references do not.
        position, position_share, position_reference_share: the position among the
            prompt's candidates the answers take most, its share, the references' share.
        position_concentrated: the answers concentrate on that position.
        collapse: one of the above, or correctness above 0 and not above the baseline.
        judged_by: what "right" means in these figures: ``correct`` (the env's own
            ``correct``) or ``reward`` (the env reports none: a reply is right when it
            earns the correct reply's reward).
        reward_correct: with ``judged_by`` ``reward``, the share of replies right by that rule.
        success_metric: a game's success metric (``MessageEnv.success_metric``: ``solved``,
            ``won``); None for an env judged by one answer. For a game the baseline is
            the best trivial game policy's success (``random option``, ``options in
            order``, ...), and ``beats_baseline`` and ``collapse`` compare success.
        success: the share of episodes that succeeded by that metric.

    Example::

        AnswerFigures(baseline_correct=0.5, collapse=False).baseline_correct   # 0.5
    """

    baseline_correct: float | None = _figure(_RATE)
    baseline_name: str | None = _figure(_TEXT)
    beats_baseline: bool | None = _figure(_FLAG)
    distinct: int | None = _figure(_COUNT)
    entropy: float | None = _figure(_NUMBER)
    top_share: float | None = _figure(_RATE)
    top: str | None = _figure(_TEXT)
    truncated: float | None = _figure(_RATE)
    concentrated: bool | None = _figure(_FLAG)
    position: str | None = _figure(_TEXT)
    position_share: float | None = _figure(_RATE)
    position_reference_share: float | None = _figure(_RATE)
    position_concentrated: bool | None = _figure(_FLAG)
    collapse: bool | None = _figure(_FLAG)
    judged_by: str | None = _figure(_TEXT)
    reward_correct: float | None = _figure(_RATE)
    success_metric: str | None = _figure(_TEXT)
    success: float | None = _figure(_RATE)


@attrs.frozen
class CounterfactualFigures:
    """The counterfactual check (:mod:`mint_envkit.evaluation.counterfactual`).

    Attributes:
        problems: problems evaluated again with their offered candidates permuted.
        correct: correctness on the permuted prompts.
        pairs: reply pairs where both answers name a candidate of their prompt.
        same_content, same_position: the shares of pairs that kept the content, the position.
        position_following: the answers follow the position, not the content.

    Example::

        CounterfactualFigures(pairs=10, same_position=0.9, position_following=True)
    """

    problems: int | None = _figure(_COUNT)
    correct: float | None = _figure(_RATE)
    pairs: int | None = _figure(_COUNT)
    same_content: float | None = _figure(_RATE)
    same_position: float | None = _figure(_RATE)
    position_following: bool | None = _figure(_FLAG)


@attrs.frozen
class ToolFigures:
    """How an evaluation's episodes used their tools (:class:`~mint_envkit.ToolEnv`'s
    calls, read from each turn's ``tool_calls`` log; None for an env without tools).

    Attributes:
        calls_per_episode: tool calls per episode (readable or not).
        calling: the share of episodes that called a tool.
        valid: the share of calls that ran (the rest were malformed, named an unknown
            tool, had bad arguments or went over the limit).
        errors: the share of calls that ran and raised or timed out.
        timeouts: the share of calls that timed out.
        per_tool: each tool's calls per episode and its errors, in words
            (``lookup 1.25/episode, 0 errors; add 0.50/episode, 2 errors``).

    Example::

        ToolFigures(calls_per_episode=0.0, calling=0.0).calling   # 0.0
    """

    calls_per_episode: float | None = _figure(_NUMBER)
    calling: float | None = _figure(_RATE)
    valid: float | None = _figure(_RATE)
    errors: float | None = _figure(_RATE)
    timeouts: float | None = _figure(_RATE)
    per_tool: str | None = _figure(_TEXT)


_COUNTS = ("max_tokens", "problems", "episodes", "errors")  # settings, not curves
_GROUPS = {"answers": AnswerFigures, "counterfactual": CounterfactualFigures, "tools": ToolFigures}
# the loop's rows carry these as the env's own metrics (rollouts/records.py writes them)
_ENV_METRICS = {
    "correct": "correct",
    "truncated_rate": "truncated",
    "mean_reward": "reward/total",
    "episodes": "episodes",
}


@attrs.frozen
class Figures:
    """The figures of one evaluation: what it measured, at which reply limit.

    Attributes:
        max_tokens: the reply limit it sampled at.
        problems, episodes, errors: problems, replies, problems that failed.
        mean_reward: the mean reward of every reply.
        correct: the share of replies the env scored correct (None: it reports none).
        parse_failure_rate: the share of replies whose answer did not parse.
        truncated_rate: the share of replies cut off at the reply limit.
        pass_at: k (as text) -> the mean unbiased pass@k over problems.
        answers: :class:`AnswerFigures`. counterfactual: :class:`CounterfactualFigures`.
        tools: :class:`ToolFigures` (an env with tools).

    Example::

        figures.parsed, figures.answers.baseline_name   # (1.0, "constant 'no'")
    """

    max_tokens: int | None = _figure(_COUNT)
    problems: int | None = _figure(_COUNT)
    episodes: int | None = _figure(_COUNT)
    errors: int | None = _figure(_COUNT)
    mean_reward: float | None = _figure(_NUMBER)
    correct: float | None = _figure(_RATE)
    parse_failure_rate: float | None = _figure(_RATE)
    truncated_rate: float | None = _figure(_RATE)
    pass_at: Mapping[str, float | None] = attrs.field(factory=dict, kw_only=True)
    answers: AnswerFigures = attrs.field(factory=AnswerFigures, kw_only=True)
    counterfactual: CounterfactualFigures = attrs.field(factory=CounterfactualFigures, kw_only=True)
    tools: ToolFigures = attrs.field(factory=ToolFigures, kw_only=True)

    @property
    def parsed(self) -> float | None:
        """The share of replies that parsed (1 - ``parse_failure_rate``).

        Example::

            Figures(parse_failure_rate=0.25).parsed   # 0.75
        """
        return None if self.parse_failure_rate is None else 1.0 - self.parse_failure_rate

    def summary(self) -> dict[str, Any]:
        """The figures as an evaluation's summary (``summary.json``); None stays None.

        Example::

            Figures(correct=0.5).summary()["correct"]   # 0.5
        """
        out: dict[str, Any] = {name: getattr(self, name) for name, _ in _fields(Figures)}
        out["pass@"] = dict(self.pass_at)
        for group, cls in _GROUPS.items():
            part = getattr(self, group)
            out.update({f"{group}/{n}": _write(getattr(part, n)) for n, _ in _fields(cls)})
        return out

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> Figures:
        """Read the figures of a summary (``summary.json``, ``config.json`` of an
        evaluation's folder, :meth:`summary`); what it lacks, or holds an odd value
        for, is None.

        Example::

            Figures.from_summary({"correct": 0.5, "answers/collapse": 1.0}).answers.collapse
            # True
        """
        found = {name: _read(kind, data.get(name)) for name, kind in _fields(Figures)}
        passes = data.get("pass@")
        found["pass_at"] = (
            {str(k): _read(_RATE, v) for k, v in passes.items()}
            if isinstance(passes, Mapping)
            else {}
        )
        for group, part in _GROUPS.items():
            found[group] = part(
                **{n: _read(kind, data.get(f"{group}/{n}")) for n, kind in _fields(part)}
            )
        return cls(**found)

    def metrics(self, split: str | None = None, *, prefix: str | None = None) -> dict[str, Any]:
        """The figures as a metrics row of ``split`` (see the module docstring); figures
        that are None are left out.

        The loop's rows (:data:`TEST`, :data:`FINAL`, ...) get the answer and
        counterfactual figures and the reply limit (correctness, parse and truncation
        shares and the mean reward are the env's metrics there, logged with the
        rollouts); an evaluation folder's line (:data:`EVAL`) gets every figure but the
        counts and the reply limit (its ``config.json`` has them). With ``prefix``
        instead (``EvalResult.metrics``), the answer and counterfactual figures go under
        ``<prefix>/all/``.

        Example::

            Figures(max_tokens=32, answers=AnswerFigures(distinct=3)).metrics(FINAL)
            # {'test_final/max_tokens': 32, 'test_final/env/all/answers/distinct': 3}
        """
        if split == EVAL:
            flat = self.summary()
            skip = ("pass@", *_COUNTS)
            out = {f"{EVAL}/{k}": v for k, v in flat.items() if k not in skip and v is not None}
            out.update({f"{EVAL}/pass@{k}": v for k, v in self.pass_at.items() if v is not None})
            return out
        out = {}
        if split is not None and self.max_tokens is not None:
            out[f"{split}/max_tokens"] = self.max_tokens
        head = f"{prefix if split is None else eval_prefix(split)}/all/"
        for group, cls in _GROUPS.items():
            part = getattr(self, group)
            for name, _ in _fields(cls):
                if getattr(part, name) is not None:
                    out[f"{head}{group}/{name}"] = _write(getattr(part, name))
        return out

    def with_texts_of(self, other: Figures) -> Figures:
        """These figures, with the text figures they lack taken from ``other`` (an
        evaluation folder's line written before it carried them, beside its summary).

        Example::

            old = Figures(answers=AnswerFigures(baseline_correct=0.5))
            named = Figures(answers=AnswerFigures(baseline_name="constant 'no'"))
            old.with_texts_of(named).answers.baseline_name   # "constant 'no'"
        """
        missing = {
            name: getattr(other.answers, name)
            for name, kind in _fields(AnswerFigures)
            if kind == _TEXT and getattr(self.answers, name) is None
        }
        return attrs.evolve(self, answers=attrs.evolve(self.answers, **missing))

    @classmethod
    def from_metrics(cls, row: Mapping[str, Any], split: str) -> Figures | None:
        """The figures of ``split`` in a metrics row; None when the row holds none.

        Example::

            Figures.from_metrics({"test/env/all/correct": 0.25, "test/env/all/parsed": 0.5},
                                 TEST).parse_failure_rate   # 0.5
        """
        if split == EVAL:
            head = f"{EVAL}/"
            flat = {k[len(head) :]: v for k, v in row.items() if _str(k).startswith(head)}
            if not flat:
                return None
            passes = {k[len("pass@") :]: v for k, v in flat.items() if k.startswith("pass@")}
            return cls.from_summary({**flat, "pass@": passes})
        head = f"{split}/env/all/"
        flat = {k[len(head) :]: v for k, v in row.items() if _str(k).startswith(head)}
        if not flat:
            return None
        found = {name: flat.get(key) for name, key in _ENV_METRICS.items()}
        parsed = _read(_RATE, flat.get("parsed"))
        found["parse_failure_rate"] = None if parsed is None else 1.0 - parsed
        found["max_tokens"] = row.get(f"{split}/max_tokens")
        found.update({k: v for k, v in flat.items() if "/" in k})
        return cls.from_summary(found)


def _str(key: Any) -> str:
    return key if isinstance(key, str) else ""


def is_eval_row(row: Mapping[str, Any], split: str) -> bool:
    """Whether a metrics row holds figures of ``split``.

    Example::

        is_eval_row({"step": 0, "test/env/all/reward/total": 0.5}, TEST)   # True
    """
    head = f"{EVAL}/" if split == EVAL else f"{split}/env/all/"
    return any(_str(key).startswith(head) for key in row)


def find_eval(
    rows: Iterable[Mapping[str, Any]], split: str, *, last: bool = False
) -> tuple[Mapping[str, Any], Figures] | None:
    """The first (``last``: the last) row holding figures of ``split``, and its figures.

    Example::

        rows = [{"step": 0, "test/env/all/correct": 0.25}, {"step": 3, "test/env/all/correct": 0.5}]
        find_eval(rows, TEST, last=True)[1].correct   # 0.5
    """
    listed = [row for row in rows if isinstance(row, Mapping)]
    for row in reversed(listed) if last else listed:
        figures = Figures.from_metrics(row, split)
        if figures is not None:
            return row, figures
    return None


def eval_prefix(split: str) -> str:
    """The prefix the loop logs an eval's rollout metrics under (``test/env``).

    Example::

        eval_prefix(FINAL)   # 'test_final/env'
    """
    return f"{split}/env"


DERIVED = {
    f"{prefix}/all/parse_failure_rate": (f"{prefix}/all/parsed", f"1 - {prefix}/all/parsed")
    for prefix in ("env", eval_prefix(TEST))
}
"""Curves the viewer derives: the parse-failure rate of training and of the held-out evals.

Example::

    DERIVED["test/env/all/parse_failure_rate"][0]   # 'test/env/all/parsed'
"""


def is_text_figure(key: Any) -> bool:
    """Whether a metrics row's key names a text figure (the baseline's name, the most
    common answer, its position), of any split.

    Example::

        is_text_figure("test_final/env/all/answers/baseline_name")   # True
        is_text_figure("note")   # False
    """
    texts = [
        f"/{group}/{name}"
        for group, cls in _GROUPS.items()
        for name, kind in _fields(cls)
        if kind == _TEXT
    ]
    return isinstance(key, str) and key.endswith(tuple(texts))


HEALTH = "health"
"""The prefix of a training step's health figures in the loop's rows (``health/signal``).

Example::

    TrainingHealth(signal=0.0).metrics()   # {'health/signal': 0.0}
"""

_STUCK = {
    "truncated": (
        "every sampled reply was cut off at the reply limit",
        "raise the reply limit (DatasetBuilder(max_generation_tokens=...)), or ask for "
        "shorter replies in the prompt",
    ),
    "signal": (
        "every group's rewards are the same, so no reply is better than another",
        "a worked example (few_shot) or easier problems so that some replies succeed, "
        "more replies per problem (group_size), or a reward that separates the replies "
        "(credit for progress)",
    ),
    "grad_norm": (
        "the gradient was zero",
        "check that some datums carry a non-zero advantage (and the learning rate is not 0)",
    ),
}


@attrs.frozen
class TrainingHealth:
    """Whether one training step could teach anything: the loop's figures of it, in its
    metrics row (``health/<field>``), the trackers and the viewer.

    Attributes:
        truncated: the share of sampled replies cut off at the reply limit.
        signal: the share of groups with signal (rewards not all equal).
        advantaged: the share of datums with a non-zero advantage.
        grad_norm: the update's gradient norm (None: the step sent no update).

    Example::

        health = TrainingHealth(truncated=1.0, signal=0.0, advantaged=0.0, grad_norm=0.0)
        [what for what, _fix in health.stuck()][0]
        # 'every sampled reply was cut off at the reply limit'
    """

    truncated: float | None = _figure(_RATE)
    signal: float | None = _figure(_RATE)
    advantaged: float | None = _figure(_RATE)
    grad_norm: float | None = _figure(_NUMBER)

    def metrics(self) -> dict[str, Any]:
        """Its figures as a metrics row's ``health/...`` keys (None left out).

        Example::

            TrainingHealth(truncated=0.5).metrics()   # {'health/truncated': 0.5}
        """
        return {
            f"{HEALTH}/{name}": getattr(self, name)
            for name, _ in _fields(TrainingHealth)
            if getattr(self, name) is not None
        }

    @classmethod
    def from_metrics(cls, row: Mapping[str, Any]) -> TrainingHealth | None:
        """A row's health figures; None when it holds none (an eval-only row, an older run).

        Example::

            TrainingHealth.from_metrics({"health/signal": 0.0}).signal   # 0.0
        """
        found = {
            name: _read(kind, row.get(f"{HEALTH}/{name}")) for name, kind in _fields(TrainingHealth)
        }
        return None if all(v is None for v in found.values()) else cls(**found)

    def stuck(self) -> list[tuple[str, str]]:
        """Why this step could teach nothing, each with its likely fix (empty when it could):
        every reply cut off, every group constant (no datum with an advantage), or a zero
        gradient.

        Example::

            TrainingHealth(signal=0.0).stuck()[0][1]   # 'a worked example (few_shot) so ...'
        """
        out = []
        if self.truncated is not None and self.truncated >= 1.0:
            out.append(_STUCK["truncated"])
        if (self.signal is not None and self.signal <= 0.0) or (
            self.advantaged is not None and self.advantaged <= 0.0
        ):
            out.append(_STUCK["signal"])
        elif self.grad_norm is not None and self.grad_norm == 0.0:
            out.append(_STUCK["grad_norm"])
        return out
