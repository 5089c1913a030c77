"""Tests split into cases: what the sandbox computes, and what trusted code compares it with.

A test ``assert add(2, 3) == 5`` becomes a :class:`Case`: the expression
``add(2, 3)`` goes into the sandbox, where it is evaluated in the code's namespace;
the check (``==``) and the expected value (``5``, a literal read with
:func:`ast.literal_eval`) stay here, and :func:`verdict` compares the value the sandbox
reported with it. The expected value never enters the code's process, so nothing the
code does there can make its value equal to it except computing it.

The forms that split (:func:`split_test`), with ``E`` the sandbox side (an expression
with no comparison, ``and`` / ``or`` / ``not`` or conditional in it) and ``L`` a literal:

- ``assert E == L`` (or ``L == E``), ``!=``, ``in``, ``not in``;
- ``assert E is L`` / ``is not L`` with ``L`` one of ``True``, ``False``, ``None``;
- ``assert E`` (a true value) and ``assert not E`` (a false one), ``E`` not a call of
  ``all``, ``any``, ``isinstance``, ``issubclass``, ``callable``, ``hasattr`` or ``bool``
  (those make the verdict inside the sandbox);
- a stdin / stdout case ``{"stdin": "1 2\\n", "stdout": "3\\n"}``: the code runs as a
  program with that stdin, and its stdout is compared here, line by line, trailing
  whitespace and trailing blank lines ignored.

The message of an ``assert`` (``assert E == L, "why"``) is ignored. Any other form
(several statements, a bare expression, ``<``, both sides computed) raises
:class:`~mint_envkit.errors.ConfigError` naming the test and these forms.

Example::

    from mint_envkit.sandbox.cases import split_test, verdict

    case = split_test("assert add(2, 3) == 5")
    assert (case.expression, case.check, case.expected) == ("add(2, 3)", "==", 5)
    assert verdict(case, 5) == ("pass", "")
    assert verdict(case, -1)[0] == "fail"
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from mint_envkit.errors import ConfigError

Check = Literal["==", "!=", "in", "not in", "is", "is not", "truthy", "falsy", "stdout"]
"""How a case's value is compared with its expected value (outside the sandbox).

Example::

    check: Check = "=="
"""

_OPS: dict[type[ast.cmpop], Check] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_NEGATED: dict[Check, Check] = {
    "==": "!=",
    "!=": "==",
    "in": "not in",
    "not in": "in",
    "is": "is not",
    "is not": "is",
    "truthy": "falsy",
    "falsy": "truthy",
}
_VERDICT_CALLS = frozenset(
    {"all", "any", "isinstance", "issubclass", "callable", "hasattr", "bool"}
)
_LOGIC = (ast.Compare, ast.BoolOp, ast.IfExp)
_FORMS = (
    "write one assert per case with the code's value on one side and a literal on the "
    "other: `assert f(x) == <literal>` (also !=, in, not in, is True / False / None), "
    '`assert f(x)`, `assert not f(x)`, or a {"stdin": ..., "stdout": ...} case'
)
_SHOWN = 200


@attrs.frozen(eq=False)
class Case:
    """One test, split: the ``expression`` (or ``stdin``) the sandbox runs, the check here.

    Attributes:
        test: the test as given (a stdin / stdout case: its JSON).
        expression: the code side, evaluated in the code's namespace inside the sandbox
            ("" for a stdin case).
        stdin: the program's stdin for a stdin / stdout case, else None.
        check: a :data:`Check`.
        expected: the literal the value is compared with (never sent to the sandbox).

    Example::

        case = Case("assert f(1) is None", "f(1)", None, "is", None)
        assert case.sent() == {"expression": "f(1)"}
    """

    test: str
    expression: str
    stdin: str | None
    check: Check
    expected: Any

    def sent(self) -> dict[str, str]:
        """What the sandbox gets of this case: its expression, or its stdin.

        Example::

            assert split_test({"stdin": "2", "stdout": "4"}).sent() == {"stdin": "2"}
        """
        return {"stdin": self.stdin} if self.stdin is not None else {"expression": self.expression}


def _refuse(test: object, reason: str) -> ConfigError:
    return ConfigError(
        f"the test {test!r} cannot be split into a value the sandbox computes and an "
        f"expected value compared outside it ({reason}); {_FORMS}"
    )


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _code_side(test: str, node: ast.expr) -> str:
    for inner in ast.walk(node):
        if isinstance(inner, _LOGIC) or (
            isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not)
        ):
            kind = type(inner).__name__ if not isinstance(inner, ast.UnaryOp) else "Not"
            raise _refuse(test, f"its computed side holds a {kind}, a verdict made inside")
    return ast.unparse(node)


def _io_case(test: dict) -> Case:
    if set(test) != {"stdin", "stdout"} or not all(isinstance(v, str) for v in test.values()):
        raise ConfigError(f'a stdin / stdout test is {{"stdin": str, "stdout": str}}, got {test!r}')
    return Case(json.dumps(test), "", test["stdin"], "stdout", test["stdout"])


def split_test(test: str | dict) -> Case:
    """Split one test into a :class:`Case`; a ``ConfigError`` for a form that does not split.

    Example::

        assert split_test("assert not is_prime(8)").check == "falsy"
        assert split_test("assert 'ab' == twice('a')").expression == "twice('a')"
        try:
            split_test("assert f(1) < 3")
        except ConfigError as err:
            print(err)  # the test 'assert f(1) < 3' cannot be split into a value ...
    """
    if isinstance(test, dict):
        return _io_case(test)
    try:
        tree = ast.parse(test, mode="exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        raise _refuse(test, f"it does not parse: {err}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        raise _refuse(test, "it is not one assert statement")
    node = tree.body[0].test
    negated = False
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, negated = node.operand, not negated
    check: Check
    expected: Any = None
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1 or type(node.ops[0]) not in _OPS:
            raise _refuse(test, "only one ==, !=, in, not in, is or is not compares")
        check = _OPS[type(node.ops[0])]
        left, right = node.left, node.comparators[0]
        known, expected = _literal(right)
        if not known and check in ("==", "!="):
            (known, expected), left = _literal(left), right
        if not known:
            where = "on the right of `in`" if check in ("in", "not in") else "on either side"
            raise _refuse(test, f"no literal {where}")
        if check in ("is", "is not") and not isinstance(expected, bool | type(None)):
            raise _refuse(test, "`is` compares only with True, False or None")
        code = left
    else:
        check, code = "truthy", node
        if (
            isinstance(code, ast.Call)
            and isinstance(code.func, ast.Name)
            and code.func.id in _VERDICT_CALLS
        ):
            raise _refuse(test, f"`{code.func.id}(...)` makes its verdict inside the sandbox")
    if negated:
        check = _NEGATED[check]
    return Case(test, _code_side(test, code), None, check, expected)


def split_tests(tests: object) -> list[Case]:
    """Split every test (a list of them, or one); a ``ConfigError`` names the first that does not.

    Example::

        cases = split_tests(["assert add(1, 2) == 3", {"stdin": "1 2", "stdout": "3"}])
        assert [case.check for case in cases] == ["==", "stdout"]
    """
    if isinstance(tests, str | dict):
        tests = [tests]
    if (
        not isinstance(tests, Sequence)
        or not tests
        or not all(
            (isinstance(test, str) and test.strip()) or isinstance(test, dict) for test in tests
        )
    ):
        raise ConfigError(
            f"code tests must be a non-empty list of Python asserts (e.g. "
            f"['assert add(1, 2) == 3']) or stdin / stdout cases, got {tests!r}"
        )
    return [split_test(test) for test in tests]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # an int too long for decimal (ValueError), a recursion
        bits = value.bit_length() if type(value) is int else None  # type: ignore[attr-defined]
        text = f"<an int of {bits} bits>" if bits is not None else f"<a {type(value).__name__}>"
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def verdict(case: Case, value: object) -> tuple[Literal["pass", "fail", "error"], str]:
    """Compare the ``value`` the sandbox reported (decoded, plain) with the case: status, error.

    ``==`` and ``in`` are Python's, on plain values (``32.0 == 32``, ``True == 1``);
    ``is`` holds only for the very ``True``, ``False`` or ``None``.

    Example::

        case = split_test("assert is_even(4) is True")
        assert verdict(case, True)[0] == "pass" and verdict(case, 1)[0] == "fail"
    """
    check, expected = case.check, case.expected
    try:
        if check == "stdout":
            held = isinstance(value, str) and _lines(value) == _lines(expected)
        elif check in ("==", "!="):
            held = (value == expected) == (check == "==")
        elif check in ("in", "not in"):
            held = (value in expected) == (check == "in")
        elif check in ("is", "is not"):
            held = (value is expected) == (check == "is")
        else:
            held = bool(value) == (check == "truthy")
    except Exception as err:  # a reported value never makes the host raise
        return "error", f"{type(err).__name__}: comparing {_shown(value)} {check} ... raised {err}"
    if held:
        return "pass", ""
    side = case.expression or f"the program on stdin {_shown(case.stdin)}"
    wanted = {"truthy": "a true value", "falsy": "a false value"}.get(
        check, f"{'' if check in ('==', 'stdout') else check + ' '}{_shown(expected)}"
    )
    return "fail", f"AssertionError: {side} gave {_shown(value)}, expected {wanted}"
