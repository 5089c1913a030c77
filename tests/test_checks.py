"""The shared value checks (mint_envkit/checks.py): one rule, one message, used everywhere."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import attrs
import pytest

from mint_envkit.checks import (
    check_flag,
    check_integer,
    check_number,
    flag,
    integer,
    is_integer,
    is_number,
    number,
)
from mint_envkit.errors import ConfigError

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mint_envkit"


def test_a_bool_is_neither_an_integer_nor_a_number():
    assert is_integer(3) and not is_integer(True) and not is_integer(3.0)
    assert is_number(0.5) and is_number(2) and not is_number(False) and not is_number("1")


@pytest.mark.parametrize("bad", [True, False, 0, -1, 2.0, "3", None])
def test_check_integer_refuses_and_names_field_value_and_fix(bad):
    with pytest.raises(ConfigError, match=r"^batch_size must be an integer >= 1, got ") as err:
        check_integer(bad, "batch_size")
    assert str(err.value).endswith(repr(bad))


def test_check_integer_bounds_none_and_why():
    check_integer(0, "save_every", least=0)
    check_integer(None, "max_steps", none_ok=True)
    with pytest.raises(ConfigError, match=r"save_every must be an integer >= 0 \(0: off\), got -1"):
        check_integer(-1, "save_every", least=0, why="0: off")
    with pytest.raises(ConfigError, match="max_steps must be an integer >= 1 or None, got True"):
        check_integer(True, "max_steps", none_ok=True)


@pytest.mark.parametrize("bad", [True, 0, 1.5, math.nan, math.inf, "0.5", None])
def test_check_number_in_an_interval(bad):
    with pytest.raises(ConfigError, match=r"top_p must be in \(0, 1\] \(a probability\), got "):
        check_number(bad, "top_p", low=0, high=1, low_open=True, why="a probability")


def test_check_number_with_one_bound_or_none():
    check_number(1e-9, "timeout_s", low=0, low_open=True)
    check_number(None, "timeout_s", low=0, low_open=True, none_ok=True)
    check_number(0, "latency_ms", low=0)
    with pytest.raises(ConfigError, match="timeout_s must be a number > 0 or None, got 0"):
        check_number(0, "timeout_s", low=0, low_open=True, none_ok=True)
    with pytest.raises(ConfigError, match="weight must be a finite number, got nan"):
        check_number(math.nan, "weight")


def test_check_flag_takes_only_true_or_false():
    check_flag(False, "shuffle")
    check_flag(None, "recompute", none_ok=True)
    with pytest.raises(ConfigError, match="shuffle must be True or False, got 1"):
        check_flag(1, "shuffle")
    with pytest.raises(ConfigError, match=r"must be True, False or None \(None: auto\), got 'y'"):
        check_flag("y", "recompute", none_ok=True, why="None: auto")


@attrs.frozen(kw_only=True)
class Settings:
    samples: int = attrs.field(default=4, validator=integer(owner="Settings"))
    rate: float = attrs.field(default=0.5, validator=number(low=0, high=1))
    verbose: bool = attrs.field(default=False, validator=flag(owner="Settings"))


def test_the_validators_name_the_attrs_field_and_its_owner():
    Settings()
    with pytest.raises(ConfigError, match=r"Settings\.samples must be an integer >= 1, got True"):
        Settings(samples=True)
    with pytest.raises(ConfigError, match=r"^rate must be in \[0, 1\], got 2"):
        Settings(rate=2)
    with pytest.raises(ConfigError, match=r"Settings\.verbose must be True or False, got 0"):
        Settings(verbose=0)


def _refuse(make, field):
    with pytest.raises(ConfigError, match=f"{field}.* got True"):
        make()


def test_the_parts_refuse_a_bool_with_the_shared_message():
    """Each caller goes through the shared check: a bool for a count fails everywhere."""
    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rendering import TINY_MODEL_NAME
    from mint_envkit.rollouts import SamplingSettings
    from mint_envkit.sandbox.executor import Limits
    from mint_envkit.sandbox.unsafe import UnsafeLocalExecutor
    from mint_envkit.tools.threads import ToolThreads

    def builder(**kwargs):
        settings = {"env": SingleTurnEnv, "problems": [{"question": "1?", "answer": "1"}]}
        settings |= {"batch_size": 1, "group_size": 1, "model_name": TINY_MODEL_NAME}
        return DatasetBuilder(**(settings | kwargs))

    cases = [
        (lambda: builder(batch_size=True), "batch_size must be an integer >= 1"),
        (lambda: builder(test_fraction=True), r"test_fraction must be in \[0, 1\)"),
        (lambda: SamplingSettings(max_tokens=True), "max_tokens must be an integer"),
        (lambda: Limits(wall_s=True), "Limits.wall_s must be a number > 0"),
        (lambda: UnsafeLocalExecutor(max_concurrency=True), "max_concurrency=...\\) must be"),
        (lambda: ToolThreads(True), "ToolThreads limit must be an integer >= 1"),
    ]
    for make, message in cases:
        _refuse(make, message)


def _copies(tree: ast.AST) -> set[int]:
    """Lines of hand-written "a number, but not a bool" checks: one boolean expression with
    ``isinstance(x, bool)`` and ``isinstance(x, int...)`` on the same ``x``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.BoolOp):
            continue
        bools: dict[str, int] = {}
        numbers: set[str] = set()
        for call in ast.walk(node):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "isinstance"
                and len(call.args) == 2
            ):
                continue
            target, kinds = ast.dump(call.args[0]), call.args[1]
            names = {n.id for n in ast.walk(kinds) if isinstance(n, ast.Name)}
            if names == {"bool"}:
                bools[target] = call.lineno
            elif names & {"int", "float"}:
                numbers.add(target)
        found.update(line for target, line in bools.items() if target in numbers)
    return found


# parsers may import only mint_envkit.errors (tests/test_architecture.py), so they keep theirs.
COPIES_ALLOWED = {"checks.py": 2, "parsers/math.py": 2, "parsers/numbers.py": 1}


def test_no_part_writes_its_own_bool_is_not_a_number_check():
    copies = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _copies(ast.parse(path.read_text(), str(path)))
        name = str(path.relative_to(PACKAGE))
        if len(lines) > COPIES_ALLOWED.get(name, 0):
            copies[name] = sorted(lines)
    assert not copies, (
        f"hand-written bool/number checks {copies}; use mint_envkit.checks "
        "(check_integer, check_number, is_number, ...)"
    )


def test_the_copy_finder_finds_a_copy_and_passes_the_shared_check():
    copy = "if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 1:\n    pass\n"
    also = "ok = isinstance(v, int) and not isinstance(v, bool)\n"
    assert _copies(ast.parse(copy)) == {1}
    assert _copies(ast.parse(also)) == {1}
    assert _copies(ast.parse("if not is_number(v) or isinstance(w, bool):\n    pass\n")) == set()
