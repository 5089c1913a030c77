"""The outcome of parsing one completion: a value, or the reason there is none.

Example::

    from mint_envkit.parsers import ParseResult

    result = ParseResult.ok("42")
    assert result and result.value == "42"
    assert not ParseResult.fail("truncated")
"""

from __future__ import annotations

from typing import Literal, get_args

import attrs

from mint_envkit.errors import ConfigError

Status = Literal["ok", "no_match", "empty", "unclosed_think", "ambiguous", "truncated", "timeout"]
"""Why a parse gave (or did not give) a value.

- ``"ok"``: a value was found.
- ``"no_match"``: the text holds nothing the parser looks for.
- ``"empty"``: the text (or the part the parser reads, e.g. a box) is empty or whitespace.
- ``"unclosed_think"``: a ``<think>`` block was opened and never closed.
- ``"ambiguous"``: the text names two different answers (e.g. "A or B").
- ``"truncated"``: an answer was opened but never closed (e.g. ``\\boxed{12``), the usual
  sign that the reply hit the token limit.
- ``"timeout"``: reading the answer took longer than the parser's time limit (only from
  :data:`~mint_envkit.parsers.math_answer`, on a pathological expression).

Example::

    status: Status = "no_match"
"""

STATUSES: tuple[Status, ...] = get_args(Status)
"""Every :data:`Status`, in a fixed order (handy for metrics).

Example::

    assert STATUSES[0] == "ok" and "truncated" in STATUSES
"""


def _check_status(instance: ParseResult, attribute: attrs.Attribute, status: object) -> None:
    if status not in STATUSES:
        raise ConfigError(f"ParseResult status {status!r} is not one of {', '.join(STATUSES)}")


@attrs.frozen
class ParseResult:
    """What a :class:`~mint_envkit.parsers.Parser` read from a completion.

    ``value`` is the normalized text when ``status == "ok"`` and ``None`` otherwise. The
    result is truthy exactly when the parse succeeded, so ``if result:`` reads naturally.
    Build one with :meth:`ok` or :meth:`fail`; a value with a failed status (or a missing
    value with ``"ok"``) raises :class:`~mint_envkit.errors.ConfigError`.

    Example::

        result = ParseResult.ok("5")
        assert result.value == "5" and result.status == "ok" and bool(result)
        missing = ParseResult.fail("no_match")
        assert missing.value is None and not missing
    """

    value: str | None
    status: Status = attrs.field(validator=_check_status)

    def __attrs_post_init__(self) -> None:
        if self.status == "ok" and not isinstance(self.value, str):
            raise ConfigError(
                f"ParseResult with status 'ok' needs a str value, got {self.value!r}; "
                "use ParseResult.fail(status) when there is no value"
            )
        if self.status != "ok" and self.value is not None:
            raise ConfigError(
                f"ParseResult with status {self.status!r} must have value None, got "
                f"{self.value!r}; use ParseResult.ok(value) for a successful parse"
            )

    def __bool__(self) -> bool:
        """True exactly when ``status == "ok"``.

        Example::

            assert ParseResult.ok("x") and not ParseResult.fail("empty")
        """
        return self.status == "ok"

    @classmethod
    def ok(cls, value: str) -> ParseResult:
        """A successful parse holding ``value``.

        Example::

            assert ParseResult.ok("7").value == "7"
        """
        return cls(value, "ok")

    @classmethod
    def fail(cls, status: Status) -> ParseResult:
        """A failed parse with the given ``status`` (anything but ``"ok"``).

        Example::

            assert ParseResult.fail("truncated").status == "truncated"
        """
        if status == "ok":
            raise ConfigError(
                "ParseResult.fail('ok') makes no sense; use ParseResult.ok(value) for a success"
            )
        return cls(None, status)
