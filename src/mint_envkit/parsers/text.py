"""The whole reply as the answer: :func:`exact`.

Example::

    from mint_envkit.parsers import exact

    assert exact()("  Paris \\n").value == "Paris"
    assert exact(str.lower)("PARIS").value == "paris"
"""

from __future__ import annotations

from collections.abc import Callable

from mint_envkit.errors import ConfigError
from mint_envkit.parsers.parser import Parser, _function_name
from mint_envkit.parsers.result import ParseResult


def exact(normalize: Callable[[str], str] | None = None) -> Parser:
    """A Parser whose value is the whole stripped text, passed through ``normalize``.

    ``normalize`` is an optional ``str -> str`` function (e.g. ``str.lower``) applied after
    stripping; exceptions it raises propagate, and a non-``str`` return raises
    ``TypeError``. Statuses: ``ok``; ``empty`` (blank text, or ``normalize`` returned a
    blank string). The name is ``"exact"`` or ``"exact(<normalize name>)"``.

    Example::

        assert exact()(" yes ").value == "yes"
        lower = exact(str.lower)
        assert lower("YES").value == "yes" and lower.name == "exact(lower)"
        assert exact()("   ").status == "empty"
    """
    if normalize is not None and not callable(normalize):
        raise ConfigError(
            f"exact(normalize=...) needs a str -> str function or None, got {normalize!r}; "
            "e.g. exact(str.lower)"
        )

    def parse(text: str) -> ParseResult:
        value = text.strip()
        if value and normalize is not None:
            value = normalize(value)
            if not isinstance(value, str):
                raise TypeError(
                    f"exact normalize function {_function_name(normalize)!r} returned "
                    f"{type(value).__name__}; it must return a str"
                )
        return ParseResult.ok(value) if value.strip() else ParseResult.fail("empty")

    name = "exact" if normalize is None else f"exact({_function_name(normalize)})"
    return Parser(name=name, fn=parse)
