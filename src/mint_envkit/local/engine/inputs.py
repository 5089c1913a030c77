"""Checks of Python-API input that guard the engine's own invariants (shapes, names, ids).

Values the server's protocol layer already checks (sampling parameters, Adam
parameters, the loss function) are not checked again here: the engine trusts
the protocol. What stays is what only the engine can check or what keeps a
path inside the state directory.

Example::

    from mint_envkit.local.engine.inputs import int_list

    assert int_list([1, 2.0], "prompt") == [1, 2]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from mint_envkit.checks import is_integer, is_number

from .records import EngineError

_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,128}")


def is_int(x: Any) -> bool:
    """True for an ``int`` that is not a ``bool``.

    Example::

        assert (is_int(3), is_int(True)) == (True, False)
    """
    return is_integer(x)


def _is_token(x: Any) -> bool:
    return is_int(x) or (isinstance(x, float) and x.is_integer())


def _is_finite(x: Any) -> bool:
    return is_number(x) and math.isfinite(x)


def _each(value: Any, what: str, items: str, ok: Callable[[Any], bool], one: str) -> list[Any]:
    """``value`` as a list whose every item passes ``ok``; EngineError naming the first bad one."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise EngineError(f"{what} must be a list of {items}, got {type(value).__name__}")
    for i, x in enumerate(value):
        if not ok(x):
            raise EngineError(f"{what}[{i}] must be {one}, got {x!r}")
    return list(value)


def int_list(value: Any, what: str) -> list[int]:
    """``value`` as a list of token ids (integral floats allowed); EngineError naming ``what``.

    Example::

        assert int_list([1, 2.0], "prompt") == [1, 2]
    """
    return [int(x) for x in _each(value, what, "token ids", _is_token, "an integer token id")]


def float_list(value: Any, what: str) -> list[float]:
    """``value`` as a list of finite floats; EngineError naming ``what``.

    Example::

        assert float_list([0, 0.5], "weights") == [0.0, 0.5]
    """
    return [float(x) for x in _each(value, what, "numbers", _is_finite, "a finite number")]


def token_ids(value: Any, vocab: int, what: str = "prompt") -> list[int]:
    """A non-empty list of token ids inside ``[0, vocab)``; EngineError naming ``what``.

    Example::

        assert token_ids([2044, 10], vocab=2048) == [2044, 10]
    """
    tokens = int_list(value, what)
    if not tokens:
        raise EngineError(f"{what} is empty; give at least one token")
    bad = [t for t in tokens if t < 0 or t >= vocab]
    if bad:
        raise EngineError(f"{what} holds token id {bad[0]} outside the vocabulary [0, {vocab})")
    return tokens


def check_name(name: Any, what: str = "checkpoint name") -> str:
    """A name that cannot leave the state directory, or EngineError(user).

    Example::

        assert check_name("step-0010") == "step-0010"
    """
    if (
        not isinstance(name, str)
        or not _NAME_RE.fullmatch(name)
        or name in (".", "..")
        or name.startswith(".")
    ):
        raise EngineError(
            f"invalid {what} {name!r}: use 1-128 characters from [A-Za-z0-9._-], not starting "
            "with '.', with no '/', '..' or NUL (names cannot leave the state directory)"
        )
    return name
