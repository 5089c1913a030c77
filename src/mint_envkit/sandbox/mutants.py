"""Small mutants of a Python source: what mutation testing runs against a problem's tests.

A mutant is the source with one small change that a correct test suite should notice.
:func:`mutants` lists them for a source (a reference solution), deterministically and
at most ``limit`` of them; the audit runs each against the problem's tests in the
sandbox, and a mutant that still passes every test *survives*: the tests cannot tell
it from the solution (or it behaves the same, an *equivalent* mutant: read it). The
changes, by kind:

- ``comparison``: a comparison negated (``<`` -> ``>=``, ``==`` -> ``!=``, ``in`` ->
  ``not in``, ``is`` -> ``is not``) or its boundary moved (``<`` <-> ``<=``, ``>`` <->
  ``>=``);
- ``constant``: a number off by one (``n`` -> ``n + 1`` and ``n - 1``), ``True`` <->
  ``False``, a string emptied (or an empty one filled);
- ``operator``: an arithmetic, bitwise or boolean operator swapped (``+`` <-> ``-``,
  ``*`` <-> ``/``, ``//`` -> ``/``, ``%`` -> ``//``, ``**`` -> ``*``, ``<<`` <-> ``>>``,
  ``&`` <-> ``|``, ``^`` -> ``&``, ``and`` <-> ``or``), or a ``not`` or a unary minus
  dropped;
- ``early_return``: a ``return`` moved one statement earlier in its block (the last step
  before it skipped).

Docstrings and the literal parts of f-strings are left alone. Pure :mod:`ast`: nothing
runs here. When there are more places to change than ``limit``, the mutants are spread
evenly over the source (never only its first lines); a change that gives the source
back unchanged, or a source that does not compile, is skipped.

Example::

    from mint_envkit.sandbox.mutants import mutants

    found = mutants("def clamp(x):\\n    if x < 0:\\n        return 0\\n    return x")
    [m.change for m in found][:2]   # ['`x < 0` -> `x >= 0`', '`x < 0` -> `x <= 0`']
    assert all(m.source != "" for m in found) and len(found) == 7
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

import attrs

from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError

MutantKind = Literal["comparison", "constant", "operator", "early_return"]
"""What a mutant changed (the module docstring lists each kind's changes).

Example::

    kind: MutantKind = "comparison"
"""

MAX_MUTANTS = 20
"""The default cap on mutants per source (``audit(mutants=...)``, ``--mutants``).

Example::

    assert MAX_MUTANTS == 20
"""

_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_SWAPPED: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_BLOCKS = ("body", "orelse", "finalbody")
_SHOWN = 60


@attrs.frozen
class Mutant:
    """One mutant: the changed source, what changed and where.

    Attributes:
        source: the whole mutated source (as :func:`ast.unparse` writes it).
        kind: a :data:`MutantKind`.
        line: the line of the change in the original source.
        change: the change in words (``\\`x < 0\\` -> \\`x <= 0\\```).

    Example::

        mutant = Mutant("x = 2", "constant", 1, "`1` -> `2`")
        assert mutant.description == "line 1: `1` -> `2`"
    """

    source: str
    kind: MutantKind
    line: int
    change: str

    @property
    def description(self) -> str:
        """``line N: <change>``: how a report lists it.

        Example::

            Mutant("x = 0", "constant", 3, "`1` -> `0`").description   # 'line 3: `1` -> `0`'
        """
        return f"line {self.line}: {self.change}"


@attrs.frozen
class _Site:
    """One place to change: the node's index in :func:`ast.walk` order and the variant."""

    index: int
    line: int
    column: int
    kind: MutantKind
    variant: object


def _shown(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split("\n")[0].split())
    return "`" + (text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...") + "`"


def _skipped(tree: ast.AST) -> set[int]:
    """ids of the nodes left alone: docstrings and the constants inside f-strings."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            out.update(id(inner) for inner in ast.walk(node) if isinstance(inner, ast.Constant))
    return out


def _constant_variants(value: object) -> list[object]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1, value - 1]
    if isinstance(value, str):
        return ["" if value else "x"]
    return []


def _in_function(tree: ast.AST) -> set[int]:
    """ids of the nodes inside a function (where a ``return`` may move)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.update(id(inner) for inner in ast.walk(node) if inner is not node)
            out.add(id(node))
    return out


def _variants(node: ast.AST, skipped: set[int]) -> Iterator[tuple[MutantKind, object]]:
    """The changes of ``node`` itself (not of its children)."""
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            for table in (_NEGATED, _BOUNDARY):
                if type(op) in table:
                    yield "comparison", (position, table[type(op)])
    elif isinstance(node, ast.Constant) and id(node) not in skipped:
        for value in _constant_variants(node.value):
            yield "constant", value
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _SWAPPED:
        yield "operator", _SWAPPED[type(node.op)]
    elif isinstance(node, ast.BoolOp):
        yield "operator", ast.Or if isinstance(node.op, ast.And) else ast.And
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "operator", "drop"


def _sites(tree: ast.AST) -> Iterator[_Site]:
    skipped, inside = _skipped(tree), _in_function(tree)
    for index, node in enumerate(ast.walk(tree)):
        line, column = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        for kind, variant in _variants(node, skipped):
            yield _Site(index, line, column, kind, variant)
        if id(node) not in inside:
            continue
        for field in _BLOCKS:
            block = getattr(node, field, None)
            for position in range(1, len(block) if isinstance(block, list) else 0):
                moved, before = block[position], block[position - 1]
                docstring = isinstance(before, ast.Expr) and isinstance(before.value, ast.Constant)
                if isinstance(moved, ast.Return) and not docstring:
                    where = (moved.lineno, moved.col_offset)
                    yield _Site(index, *where, "early_return", (field, position))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(item is old for item in value):
                value[next(i for i, item in enumerate(value) if item is old)] = new
                return


def _apply(tree: ast.AST, site: _Site) -> str:
    """Change ``tree`` in place at ``site``; the change in words."""
    node = list(ast.walk(tree))[site.index]
    before = _shown(node)
    if site.kind == "comparison":
        assert isinstance(node, ast.Compare)
        position, op = site.variant  # type: ignore[misc]
        node.ops[position] = op()
    elif site.kind == "constant":
        assert isinstance(node, ast.Constant)
        node.value = site.variant
    elif site.kind == "early_return":
        field, position = site.variant  # type: ignore[misc]
        block = getattr(node, field)
        moved, skipped = block[position], block[position - 1]
        block[position - 1], block[position] = moved, skipped
        return f"{_shown(moved)} moved before {_shown(skipped)}"
    elif site.variant == "drop":
        assert isinstance(node, ast.UnaryOp)
        _replace(tree, node, node.operand)
        return f"{before} -> {_shown(node.operand)}"
    else:
        assert isinstance(node, ast.BinOp | ast.AugAssign | ast.BoolOp)
        node.op = site.variant()  # type: ignore[operator]
    return f"{before} -> {_shown(node)}"


def _spread(count: int, limit: int) -> list[int]:
    """Indices ``0 .. count - 1``: ``limit`` of them evenly spaced first, then the rest."""
    if count <= limit:
        return list(range(count))
    first = sorted({index * count // limit for index in range(limit)})
    chosen = set(first)
    return first + [index for index in range(count) if index not in chosen]


def mutants(source: str, *, limit: int = MAX_MUTANTS) -> list[Mutant]:
    """Up to ``limit`` mutants of ``source``, each with one small change, in line order.

    The same source gives the same mutants. ``source`` that does not parse raises
    :class:`~mint_envkit.errors.ConfigError`.

    Example::

        found = mutants("def add(a, b):\\n    return a + b")
        assert [m.change for m in found] == ["`a + b` -> `a - b`"]
        assert found[0].source == "def add(a, b):\\n    return a - b"
    """
    check_integer(limit, "mutants(limit=...)", least=0)
    if not isinstance(source, str):
        raise ConfigError(f"mutants() needs Python source as a str, got {source!r}")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        raise ConfigError(f"the source does not parse, so it has no mutants: {err}") from None
    original = ast.unparse(tree)
    sites = sorted(_sites(tree), key=lambda s: (s.line, s.column, s.index, repr(s.variant)))
    seen, out = {original}, []
    for position in _spread(len(sites), limit):
        if len(out) >= limit:
            break
        site = sites[position]
        copy = ast.parse(source)
        change = _apply(copy, site)
        try:
            text = ast.unparse(ast.fix_missing_locations(copy))
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError, RecursionError):
            continue
        if text not in seen:
            seen.add(text)
            out.append((position, Mutant(text, site.kind, site.line, change)))
    return [mutant for _position, mutant in sorted(out, key=lambda pair: pair[0])]
