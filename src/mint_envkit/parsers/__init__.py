"""Reward parsers: read the answer out of a completion, or say why there is none.

Every parser is a :class:`Parser`: call it on the completion text to get a
:class:`ParseResult` with a normalized ``value`` and a :data:`Status`. Built-in parsers
never raise on any ``str`` and run in linear time.

Example::

    from mint_envkit.parsers import boxed, last_number, same_number, xml_tag

    result = boxed.after_thinking()(r"<think>2+3</think> so \\boxed{5}")
    assert result.value == "5" and result.status == "ok"
    assert xml_tag("answer")("<answer>12").status == "truncated"
    assert same_number(last_number("it costs $1,000.").value, "1000")
"""

from mint_envkit.parsers.choice import choice
from mint_envkit.parsers.math import math_answer, math_equal
from mint_envkit.parsers.numbers import as_number, first_number, last_number, same_number
from mint_envkit.parsers.parser import Parser, strip_thinking
from mint_envkit.parsers.result import ParseResult, Status
from mint_envkit.parsers.tags import boxed, xml_tag
from mint_envkit.parsers.text import exact

__all__ = [
    "ParseResult",
    "Parser",
    "Status",
    "as_number",
    "boxed",
    "choice",
    "exact",
    "first_number",
    "last_number",
    "math_answer",
    "math_equal",
    "same_number",
    "strip_thinking",
    "xml_tag",
]
