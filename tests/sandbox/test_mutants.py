"""Mutants of a solution: each kind of change, in line order, deterministic and bounded."""

from __future__ import annotations

import ast

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.sandbox.mutants import mutants

CLAMP = "def clamp(x):\n    if x < 0:\n        return 0\n    return x"


def test_every_change_of_a_small_function_is_listed_with_its_line():
    assert [(m.kind, m.description) for m in mutants(CLAMP)] == [
        ("comparison", "line 2: `x < 0` -> `x >= 0`"),
        ("comparison", "line 2: `x < 0` -> `x <= 0`"),
        ("constant", "line 2: `0` -> `-1`"),
        ("constant", "line 2: `0` -> `1`"),
        ("constant", "line 3: `0` -> `-1`"),
        ("constant", "line 3: `0` -> `1`"),
        ("early_return", "line 4: `return x` moved before `if x < 0:`"),
    ]
    early = mutants(CLAMP)[-1].source
    assert early == "def clamp(x):\n    return x\n    if x < 0:\n        return 0"


def test_operators_are_swapped_and_not_and_minus_dropped():
    source = (
        "def f(a, b, xs):\n"
        "    total = a * b - (a // b) % 2 ** 1\n"
        "    total += -a\n"
        "    return total if not xs and a else total"
    )
    changes = {m.change for m in mutants(source, limit=100)}
    assert {
        "`a * b` -> `a / b`",
        "`a // b` -> `a / b`",
        "`a // b % 2 ** 1` -> `a // b // 2 ** 1`",
        "`2 ** 1` -> `2 * 1`",
        "`total += -a` -> `total -= -a`",
        "`-a` -> `a`",
        "`not xs` -> `xs`",
        "`not xs and a` -> `not xs or a`",
    } <= changes
    for mutant in mutants(source, limit=100):
        ast.parse(mutant.source)  # every mutant compiles
        assert mutant.source != ast.unparse(ast.parse(source))


def test_docstrings_and_f_string_text_are_left_alone_and_booleans_flip():
    source = 'def f(x):\n    """Two words."""\n    return f"{x} items" if True else ""'
    changes = [m.change for m in mutants(source, limit=100)]
    assert changes == ["`True` -> `False`", "`''` -> `'x'`"]


def test_the_cap_spreads_the_mutants_over_the_source_and_the_list_is_deterministic():
    lines = [f"    x{i} = {i} < {i + 1}" for i in range(30)]
    source = "def f():\n" + "\n".join(lines) + "\n    return x0"
    everything = mutants(source, limit=1000)
    # per line 2 comparisons and 4 off-by-one constants; and the return moved up once
    assert len(everything) == 30 * 6 + 1
    capped = mutants(source, limit=10)
    assert len(capped) == 10
    assert capped == mutants(source, limit=10)  # the same source, the same mutants
    picked = [m.line for m in capped]
    assert picked == sorted(picked) and picked[0] == 2 and picked[-1] >= 28  # the whole source
    assert mutants(source, limit=0) == []


def test_a_source_that_does_not_parse_is_refused():
    with pytest.raises(ConfigError, match="does not parse"):
        mutants("def f(:\n    pass")
    assert mutants("def f():\n    pass") == []  # nothing to change
