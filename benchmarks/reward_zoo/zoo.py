"""The reward zoo's registry: each case is an env with ONE reward or dataset bug, and its
clean twin (the same env with the bug fixed), built into a DatasetBuilder on demand.

A case names its bug's family, says the bug in one line, and cites where the bug comes
from (a public issue, pull request or write-up, or the known class it belongs to). The
envs are written the way a researcher would write them from the docs, not to fit the
audit's probes: some bugs are ones the audit is expected to miss.

Example::

    from zoo import CASES, load_all

    load_all()
    case = CASES["nan_tolerance"]
    builder = case.build(buggy=True)   # a DatasetBuilder
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mint_envkit import DatasetBuilder

MODEL = "mint-envkit/tiny-qwen3"

FAMILIES = (
    "math",
    "string",
    "judge",
    "multi-choice",
    "format",
    "partial-credit",
    "code",
    "multi-turn",
    "function",
    "data",
)
"""The families, in table order."""

MODULES = (
    "numeric",
    "strings",
    "choice",
    "shaping",
    "code",
    "multiturn",
    "data",
    "heldout",
    "heldout_data",
    "heldout_agents",
)
"""The modules that register cases (``reward_zoo/<name>.py``). ``heldout``,
``heldout_data`` and ``heldout_agents`` hold the held-out set (cases marked
``heldout=True``)."""


@dataclass(frozen=True)
class Demo:
    """A reply that shows a case's bug is real and its twin fixes it.

    ``reply(problem)`` is the reply (a text, or a list of texts, one per turn) sent on
    every problem; with ``direction="more"`` its mean reward is higher on the buggy env
    than on the clean twin (the bug pays it), with ``"less"`` lower (the bug withholds
    reward from it). ``stop=False`` sends it cut off at the token limit.
    """

    reply: Callable[[dict[str, Any]], str | list[str]]
    direction: str = "more"
    stop: bool = True


@dataclass(frozen=True)
class ZooCase:
    """One bug and its clean twin.

    Attributes:
        name: the case's id (a table row, a test id).
        family: one of :data:`FAMILIES`.
        bug: the bug, in one line.
        source: where it comes from (URLs or the known class).
        make: ``make(buggy) -> DatasetBuilder``: the buggy env, or its clean twin.
        demo: a reply that shows the bug (:class:`Demo`).
        heldout: a case of the held-out set: written after the audit's rules, from bug
            classes their authors were not shown, to measure how the audit generalises
            (its catch rate is reported apart from the original cases').
    """

    name: str
    family: str
    bug: str
    source: str
    make: Callable[[bool], DatasetBuilder]
    demo: Demo
    heldout: bool = False

    def build(self, *, buggy: bool) -> DatasetBuilder:
        """The buggy env's builder (``buggy=True``) or its clean twin's."""
        return self.make(buggy)


CASES: dict[str, ZooCase] = {}


def case(name: str, family: str, bug: str, source: str, demo: Demo, *, heldout: bool = False):
    """Register ``make(buggy) -> DatasetBuilder`` as a zoo case (a decorator);
    ``heldout=True`` puts it in the held-out set."""
    if family not in FAMILIES:
        raise ValueError(f"zoo case {name!r}: unknown family {family!r}, one of {FAMILIES}")

    def register(make: Callable[[bool], DatasetBuilder]) -> Callable[[bool], DatasetBuilder]:
        if name in CASES:
            raise ValueError(f"zoo case {name!r} is registered twice")
        CASES[name] = ZooCase(name, family, bug, " ".join(source.split()), make, demo, heldout)
        return make

    return register


def pair(
    name: str,
    family: str,
    bug: str,
    source: str,
    buggy: type,
    clean: type,
    problems: Sequence[dict[str, Any]],
    demo: Demo,
    *,
    heldout: bool = False,
    **fields: Any,
) -> None:
    """Register a case whose buggy env and twin share their problems and builder."""

    def make(is_buggy: bool) -> DatasetBuilder:
        return build(buggy if is_buggy else clean, problems, **fields)

    case(name, family, bug, source, demo, heldout=heldout)(make)


def build(env: type, problems: Sequence[dict[str, Any]], **fields: Any) -> DatasetBuilder:
    """The zoo's DatasetBuilder: the tiny model's tokenizer, problems in order."""
    options = {"batch_size": 2, "group_size": 2, "model_name": MODEL, "shuffle": False}
    return DatasetBuilder(env=env, problems=[dict(p) for p in problems], **{**options, **fields})


def load_all() -> dict[str, ZooCase]:
    """Import every case module (registering its cases) and return the registry."""
    package = __name__.rpartition(".")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RewardOrderWarning of the unbounded rewards: by design
        for module in MODULES:
            importlib.import_module(f"{package}.{module}" if package else module)
    return CASES


# --- readers the envs share (a researcher's own helpers, not the kit's) ---

_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)", re.I)
_FRACTION = re.compile(r"-?\d+(?:/\d+)?")
_INTEGER = re.compile(r"-?\d+")


def read_float(text: str) -> str | None:
    """The reply when it is one float literal (what Python's ``float()`` reads), else None."""
    text = text.strip()
    return text if _FLOAT.fullmatch(text) else None


def read_number(text: str) -> str | None:
    """The reply when it is one plain decimal number (no nan, no inf), else None."""
    text = text.strip()
    return text if re.fullmatch(r"-?\d+(?:\.\d+)?", text) else None


def read_fraction(text: str) -> str | None:
    """The reply when it is one integer or fraction ``p/q``, else None."""
    text = text.strip()
    return text if _FRACTION.fullmatch(text) else None


def integers(text: str) -> list[int]:
    """Every integer written in ``text``, in order."""
    return [int(n) for n in _INTEGER.findall(text)]


def as_fraction(text: str) -> Fraction:
    """``text`` (an integer or ``p/q``) as an exact fraction."""
    return Fraction(text.strip())
