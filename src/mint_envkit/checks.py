"""The value checks every part shares: one rule, one message, for each kind of setting.

A bool is not a number here (``True`` is an ``int`` to Python, never a count or a
rate to a user). Each check raises :class:`~mint_envkit.errors.ConfigError` with a
message naming the field, the bad value and what to give instead. The ``check_*``
functions check one value; :func:`integer`, :func:`number` and :func:`flag` make
the same checks as attrs validators (the field's name comes from attrs, prefixed
with ``owner`` when given).

Example::

    import attrs
    from mint_envkit.checks import check_integer, integer
    from mint_envkit.errors import ConfigError

    check_integer(4, "batch_size")           # passes
    try:
        check_integer(True, "batch_size")
    except ConfigError as err:
        print(err)    # batch_size must be an integer >= 1, got True

    @attrs.frozen
    class Settings:
        samples: int = attrs.field(default=4, validator=integer(owner="Settings"))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mint_envkit.errors import ConfigError

Validator = Callable[[Any, Any, Any], None]


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an ``int`` and not a bool.

    Example::

        is_integer(3), is_integer(True), is_integer(3.0)   # (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Whether ``value`` is an ``int`` or a ``float`` and not a bool (NaN and inf included).

    Example::

        is_number(0.5), is_number(False), is_number("1")   # (True, False, False)
    """
    return isinstance(value, int | float) and not isinstance(value, bool)


def _tail(none_ok: bool, why: str) -> str:
    return (" or None" if none_ok else "") + (f" ({why})" if why else "")


def check_integer(
    value: Any, name: str, *, least: int = 1, none_ok: bool = False, why: str = ""
) -> None:
    """``value`` is an integer ``>= least`` (or None when ``none_ok``).

    Raises:
        ConfigError: ``{name} must be an integer >= {least} ..., got {value!r}``.

    Example::

        check_integer(0, "save_every", least=0)     # passes
        check_integer(None, "max_steps", none_ok=True)  # passes
        # check_integer(0, "samples") raises ConfigError: samples must be an integer >= 1, got 0
    """
    if value is None and none_ok:
        return
    if not is_integer(value) or value < least:
        raise ConfigError(
            f"{name} must be an integer >= {least}{_tail(none_ok, why)}, got {value!r}"
        )


def _bound(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f"in {left}{low:g}, {high:g}{right}"
    if low is not None:
        return f"a number {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"a number {'<' if high_open else '<='} {high:g}"
    return "a finite number"


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    none_ok: bool = False,
    why: str = "",
) -> None:
    """``value`` is a finite number within the bounds given (or None when ``none_ok``).

    Raises:
        ConfigError: e.g. ``top_p must be in (0, 1] (a probability), got 2``.

    Example::

        check_number(0.5, "top_p", low=0, high=1, low_open=True)   # passes
        # check_number(0, "timeout_s", low=0, low_open=True) raises
        # ConfigError: timeout_s must be a number > 0, got 0
    """
    if value is None and none_ok:
        return
    inside = (
        is_number(value)
        and math.isfinite(value)
        and (low is None or (low < value if low_open else low <= value))
        and (high is None or (value < high if high_open else value <= high))
    )
    if not inside:
        bound = _bound(low, high, low_open, high_open)
        raise ConfigError(f"{name} must be {bound}{_tail(none_ok, why)}, got {value!r}")


def check_flag(value: Any, name: str, *, none_ok: bool = False, why: str = "") -> None:
    """``value`` is ``True`` or ``False`` (or None when ``none_ok``); ``1`` and ``"yes"`` are not.

    Raises:
        ConfigError: ``{name} must be True or False ..., got {value!r}``.

    Example::

        check_flag(True, "shuffle")     # passes
        # check_flag(1, "shuffle") raises ConfigError: shuffle must be True or False, got 1
    """
    if value is None and none_ok:
        return
    if not isinstance(value, bool):
        choices = "True, False or None" if none_ok else "True or False"
        raise ConfigError(f"{name} must be {choices}{_tail(False, why)}, got {value!r}")


def _name(owner: str, attribute: Any) -> str:
    return f"{owner}.{attribute.name}" if owner else attribute.name


def integer(*, least: int = 1, none_ok: bool = False, why: str = "", owner: str = "") -> Validator:
    """An attrs validator: :func:`check_integer` on the field.

    Example::

        import attrs

        max_steps: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    """

    def check(_instance: Any, attribute: Any, value: Any) -> None:
        check_integer(value, _name(owner, attribute), least=least, none_ok=none_ok, why=why)

    return check


def number(
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    none_ok: bool = False,
    why: str = "",
    owner: str = "",
) -> Validator:
    """An attrs validator: :func:`check_number` on the field.

    Example::

        import attrs

        top_p: float = attrs.field(default=1.0, validator=number(low=0, high=1, low_open=True))
    """

    def check(_instance: Any, attribute: Any, value: Any) -> None:
        check_number(
            value,
            _name(owner, attribute),
            low=low,
            high=high,
            low_open=low_open,
            high_open=high_open,
            none_ok=none_ok,
            why=why,
        )

    return check


def flag(*, none_ok: bool = False, why: str = "", owner: str = "") -> Validator:
    """An attrs validator: :func:`check_flag` on the field.

    Example::

        import attrs

        shuffle: bool = attrs.field(default=True, validator=flag())
    """

    def check(_instance: Any, attribute: Any, value: Any) -> None:
        check_flag(value, _name(owner, attribute), none_ok=none_ok, why=why)

    return check
