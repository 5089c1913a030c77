"""The :class:`Parser` type: a named, composable ``str -> ParseResult`` function.

Example::

    from mint_envkit.parsers import Parser, last_number

    answer = last_number.after_thinking()
    assert answer.name == "last_number.after_thinking()"
    assert answer("<think>3 or 4?</think> It is 4.").value == "4"

    shout = Parser.from_function(lambda text: text.upper() or None, name="shout")
    assert shout("hi").value == "HI"
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.parsers.result import ParseResult
from mint_envkit.parsers.thinking import remove_thinking

ParserOutput = ParseResult | str | None
"""What a function wrapped by :meth:`Parser.from_function` may return.

A ``str`` means ``"ok"`` (a blank string means ``"empty"``), ``None`` means ``"no_match"``,
and a :class:`ParseResult` is used as is.

Example::

    def first_word(text: str) -> ParserOutput:
        words = text.split()
        return words[0] if words else None
"""


def _coerce(output: object, parser_name: str) -> ParseResult:
    if isinstance(output, ParseResult):
        return output
    if output is None:
        return ParseResult.fail("no_match")
    if isinstance(output, str):
        return ParseResult.ok(output) if output.strip() else ParseResult.fail("empty")
    raise TypeError(
        f"parser {parser_name!r} returned {type(output).__name__} {output!r}; a parser "
        "function must return a ParseResult, a str (a value) or None (no match)"
    )


def _check_name(instance: Parser, attribute: attrs.Attribute, name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"parser name must be a non-empty str, got {name!r}; e.g. name='my_tag'")


def _function_name(fn: Callable[..., object]) -> str:
    name = getattr(fn, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(fn, "__name__", None) or type(fn).__name__


@attrs.frozen
class Parser:
    """A named function from a completion to a :class:`ParseResult`.

    Call it on the completion text. ``name`` identifies it in metrics and logs. The
    built-in parsers never raise on any ``str``; a non-``str`` argument raises
    ``TypeError``. Exceptions raised by a user function (see :meth:`from_function` and
    :meth:`map`) propagate: they are bugs to see, not wrong answers to score as 0.

    Example::

        from mint_envkit.parsers import boxed

        result = boxed(r"so the answer is \\boxed{\\frac{1}{2}}")
        assert result.value == r"\\frac{1}{2}"
        assert boxed.name == "boxed"
    """

    name: str = attrs.field(validator=_check_name)
    _fn: Callable[[str], ParserOutput] = attrs.field(alias="fn", repr=False)

    def __call__(self, text: str) -> ParseResult:
        """Parse ``text`` (the completion).

        Example::

            from mint_envkit.parsers import first_number

            assert first_number("5 apples").value == "5"
        """
        if not isinstance(text, str):
            raise TypeError(
                f"parser {self.name!r} expects the completion as a str, got "
                f"{type(text).__name__}; pass the decoded reply text"
            )
        return _coerce(self._fn(text), self.name)

    @classmethod
    def from_function(cls, fn: Callable[[str], ParserOutput], name: str | None = None) -> Parser:
        """Wrap ``fn`` (``str -> ParseResult | str | None``) into a Parser.

        A returned ``str`` is a value (status ``"ok"``; a blank one gives ``"empty"``),
        ``None`` is ``"no_match"``, a :class:`ParseResult` is kept as is. ``name`` defaults
        to the function's ``__name__``. Exceptions raised by ``fn`` propagate.

        Example::

            import re

            def hashes(text: str) -> str | None:
                match = re.search(r"####\\s*(\\S+)", text)
                return match.group(1) if match else None

            gsm8k = Parser.from_function(hashes)
            assert gsm8k("so #### 72").value == "72" and gsm8k.name == "hashes"
        """
        if not callable(fn):
            raise ConfigError(
                f"Parser.from_function needs a callable str -> ParseResult | str | None, got {fn!r}"
            )
        return cls(name=_function_name(fn) if name is None else name, fn=fn)

    def after_thinking(self) -> Parser:
        """This parser applied to the text left after :data:`strip_thinking`.

        If the reply has an unclosed ``<think>`` the result is ``"unclosed_think"``; if
        only thinking is left, ``"empty"``.

        Example::

            from mint_envkit.parsers import last_number

            parser = last_number.after_thinking()
            assert parser("<think>maybe 3</think> 4").value == "4"
            assert parser("<think>maybe 3").status == "unclosed_think"
        """
        inner = self

        def run(text: str) -> ParseResult:
            remainder = remove_thinking(text)
            if not remainder:
                return remainder
            return inner(remainder.value or "")

        return Parser(name=f"{self.name}.after_thinking()", fn=run)

    def map(self, fn: Callable[[str], ParserOutput], name: str | None = None) -> Parser:
        """Post-process a successful value with ``fn``; failures pass through unchanged.

        ``fn`` returns like a :meth:`from_function` function (``str``, ``None`` or a
        :class:`ParseResult`), so another Parser works as ``fn`` too. Exceptions raised by
        ``fn`` propagate. ``name`` defaults to ``"<this name>.map(<fn name>)"``.

        Example::

            from mint_envkit.parsers import boxed, choice, xml_tag

            lower = xml_tag("answer").map(str.lower)
            assert lower("<answer>YES</answer>").value == "yes"
            assert lower.name == "xml_tag(answer).map(lower)"
            letter = boxed.map(choice("ABCD"))
            assert letter(r"\\boxed{C}").value == "C"
        """
        if not callable(fn):
            raise ConfigError(f"Parser.map needs a callable str -> str | None, got {fn!r}")
        inner = self
        fn_name = _function_name(fn)

        def run(text: str) -> ParseResult:
            result = inner(text)
            if not result:
                return result
            return _coerce(fn(result.value or ""), fn_name)

        return Parser(name=f"{self.name}.map({fn_name})" if name is None else name, fn=run)


strip_thinking = Parser(name="strip_thinking", fn=remove_thinking)
"""A Parser whose value is the completion with its thinking removed.

Every complete ``<think>...</think>`` block is removed and the rest is stripped. A
``<think>`` that is never closed gives ``"unclosed_think"``. A ``</think>`` with no
``<think>`` before it (Qwen3-style templates put ``<think>`` in the prompt, so the reply
starts inside the block) makes everything up to and including the last such ``</think>``
thinking. Nothing left gives ``"empty"``. Blocks do not nest: a block ends at the first
``</think>``.

Example::

    assert strip_thinking("<think>2+3=5</think>\\nThe answer is 5.").value == "The answer is 5."
    assert strip_thinking("2+3=5 I think</think>5").value == "5"
    assert strip_thinking("<think>2+3=").status == "unclosed_think"
"""
